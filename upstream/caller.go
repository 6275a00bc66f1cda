package upstream

//lint:file-ignore SA1019 sampling, roots and logging are deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where they are not, and forwards a server's sampling and roots requests and log messages to the client of its call.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller is the client on whose behalf a request runs. What a server asks
// of its client while serving the request — sampling, elicitation, roots —
// and the log messages it sends meanwhile are forwarded to the Caller.
type Caller interface {
	// ID identifies the client session: two Callers with the same ID are
	// the same client.
	ID() string
	CreateMessage(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)
	ListRoots(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
	Log(context.Context, *mcp.LoggingMessageParams)
	// TaskStatus forwards a server's notifications/tasks/status about one
	// of the client's tasks (see mcptasks.go); params are as the server
	// sent them.
	TaskStatus(ctx context.Context, params json.RawMessage)
	// ResourcesChanged tells the client that the resources the server
	// lists on the client's own connection changed (see
	// Server.ClientResources).
	ResourcesChanged()
}

// inflight is one request running on a connection.
type inflight struct {
	done     bool // answered; still routes trailing progress
	caller   Caller
	progress func(context.Context, *mcp.ProgressNotificationParams) // nil: the client asked for none
	cancel   context.CancelCauseFunc                                // ends the request early (see conn.abort)
	// For tasks (mcptasks.go): task is the task the request waits on
	// (tasks/result), whose related requests go to its caller; runs says
	// mcpmux runs that task for a plain call; keep, that the request
	// created a task whose progress is routed until it is forgotten.
	task string
	runs bool
	keep bool
}

// progressTokens numbers the progress tokens mcpmux gives servers: a
// client's own token is meaningless (and may collide) on a shared
// connection, so each downstream call gets one of ours, mapped back.
var progressTokens atomic.Uint64

func newProgressToken() string { return "mcpmux-" + strconv.FormatUint(progressTokens.Add(1), 10) }

// begin registers a request on c; the returned func ends it.
func (c *conn) begin(token string, r *inflight) func() {
	c.mu.Lock()
	if c.requests == nil {
		c.requests = map[string]*inflight{}
	}
	c.requests[token] = r
	if r.caller != nil {
		c.owner = r.caller // per-client connections: the latest is the client
	}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		r.done = true
		if r.keep {
			// Progress keeps coming for the task it created (forgetTask).
			c.mu.Unlock()
			return
		}
		if r.progress == nil {
			// Nothing to route to: forget it now, without a timer per call.
			delete(c.requests, token)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		// The SDK hands a server's notifications to their handler apart
		// from its answers, so progress sent before the answer may be
		// handled just after it: keep routing the token for a moment.
		time.AfterFunc(c.srv.opts.Timing.progressLinger(), func() {
			c.mu.Lock()
			delete(c.requests, token)
			c.mu.Unlock()
		})
	}
}

// detach takes the caller off a running request: it can no longer be
// reached for it (see CallParams.StreamClosed), so what the server asks
// meanwhile is not its to answer.
func (c *conn) detach(r *inflight) {
	c.mu.Lock()
	r.caller = nil
	c.mu.Unlock()
}

var (
	errNoCaller  = errors.New("mcpmux forwards this request only while a client's call is running on the server")
	errAmbiguous = errors.New("calls of several clients are running on this shared connection, so mcpmux cannot tell whose request this is (give the server session: per-client)")
)

// callers returns the distinct clients with requests running on c; for a
// per-client connection, its client even between calls.
func (c *conn) callers() []Caller {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Caller
	seen := map[string]bool{}
	for _, r := range c.requests {
		if r.caller != nil && !r.done && !seen[r.caller.ID()] {
			seen[r.caller.ID()] = true
			out = append(out, r.caller)
		}
	}
	if len(out) == 0 && c.srv.PerClient() && c.owner != nil {
		out = append(out, c.owner)
	}
	return out
}

// caller returns the one client a server's request belongs to: the
// client of the call running on c, or of a per-client connection; on a
// shared connection outside any call, the pool's sole client if it has
// one (Events.SoleClient: over stdio, mcpmux's one client), waited for
// until ctx ends.
func (c *conn) caller(ctx context.Context) (Caller, error) {
	switch cs := c.callers(); len(cs) {
	case 1:
		return cs[0], nil
	case 0:
		if c.shared && !c.srv.PerClient() {
			if cl := c.srv.events.soleClient(ctx); cl != nil {
				return cl, nil
			}
		}
		return nil, errNoCaller
	default:
		return nil, errAmbiguous
	}
}

// forwardError is the JSON-RPC error a server gets when its request cannot
// be forwarded.
func forwardError(method string, err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s %s to a client: %v", forwardRefusal, method, err)}
}

// forwardRefusal begins the message of forwardError; a child that logs the
// answer quotes it (see lineLevel).
const forwardRefusal = "mcpmux could not forward"

// clientOptions are the handlers through which a server reaches the
// clients of its calls, for a connection that declares the features f.
// Sampling and elicitation are declared by their handlers, so a handler is
// only set for a feature in f.
func (c *conn) clientOptions(f ClientFeatures) *mcp.ClientOptions {
	s := c.srv
	opts := &mcp.ClientOptions{
		// What is declared is forwarded to the calling client; one that
		// lacks it gets a clear error (see Caller).
		Capabilities: f.capabilities(),
		// Gated (order.go): a call's answer waits for the refresh a
		// list_changed read before it asks for.
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { defer c.gate.sawHandled(); c.signalRefresh() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { defer c.gate.sawHandled(); c.signalRefresh() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { defer c.gate.sawHandled(); c.signalRefresh() },
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			s.events.resourceUpdated(s.cfg.Name, req.Params)
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			defer c.gate.sawHandled()
			logDownstream(ctx, s.log, req)
			if callers := c.callers(); len(callers) > 0 {
				for _, cl := range callers {
					cl.Log(ctx, req.Params)
				}
			} else {
				s.events.log(s.cfg.Name, req.Params)
			}
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			defer c.gate.sawHandled()
			token, _ := req.Params.ProgressToken.(string)
			c.mu.Lock()
			r := c.requests[token]
			c.mu.Unlock()
			if r != nil && r.progress != nil {
				r.progress(ctx, req.Params)
			}
		},
		KeepAlive:                 s.opts.Timing.keepAlive(),
		KeepAliveFailureThreshold: keepAliveFailures,
		Logger:                    s.sdkLog,
	}
	if f.Sampling {
		opts.CreateMessageWithToolsHandler = func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			cl, err := c.tasks.callerFor(ctx, req.Params.Meta)
			if err != nil {
				return nil, forwardError("sampling/createMessage", err)
			}
			return cl.CreateMessage(ctx, req.Params)
		}
	}
	if f.elicits() {
		// Declares elicitation; requests are answered by elicitMiddleware.
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return c.elicit(ctx, req.Params)
		}
	}
	return opts
}

// elicit forwards a server's elicitation to the client of its call.
func (c *conn) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	cl, err := c.tasks.callerFor(ctx, p.Meta)
	if err != nil {
		return nil, forwardError("elicitation/create", err)
	}
	return cl.Elicit(ctx, p)
}

// elicitMiddleware answers elicitation/create with the client's answer as
// it came: the go-sdk's own handling would check it against the requested
// schema and fill in the schema's defaults, so that the server got fields
// the user never sent. Only on a connection that declared elicitation.
func (c *conn) elicitMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.ElicitRequest)
		if method != "elicitation/create" || !ok || r.Params == nil || !c.features.elicits() {
			return next(ctx, method, req)
		}
		res, err := c.elicit(ctx, r.Params)
		if err != nil {
			return nil, err
		}
		raw, err := EncodeElicitResult(res)
		if err != nil {
			return nil, err
		}
		return &rawResult{raw: raw}, nil
	}
}

// ElicitContentKey is the _meta key under which an elicitation answer's
// content travels from the client's bytes to the server's, as a JSON
// string of those bytes: the go-sdk decodes content into a map, whose keys
// would reach the server re-ordered (the aggregator puts it there).
const ElicitContentKey = "mcpmux/elicit-content"

// EncodeElicitResult encodes an answer to elicitation/create for the
// server: with the client's own bytes of the content when they came along
// (ElicitContentKey), and without that key.
func EncodeElicitResult(res *mcp.ElicitResult) ([]byte, error) {
	raw, ok := res.Meta[ElicitContentKey].(string)
	if !ok {
		return json.Marshal(res)
	}
	out := *res
	out.Meta = maps.Clone(res.Meta)
	delete(out.Meta, ElicitContentKey)
	if len(out.Meta) == 0 {
		out.Meta = nil
	}
	out.Content = nil
	b, err := json.Marshal(&out)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["content"] = json.RawMessage(raw)
	return json.Marshal(m)
}

// rawResult is a result sent as these bytes.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

// rootsHandler answers roots/list for the server; the go-sdk client
// answers from its own root list, so this is installed as middleware.
func (c *conn) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		if c.features.Roots && c == c.srv.current() {
			c.srv.session.keepsState("it asks for roots")
		}
		p, _ := req.GetParams().(*mcp.ListRootsParams)
		var meta mcp.Meta
		if p != nil {
			meta = p.Meta
		}
		cl, err := c.tasks.callerFor(ctx, meta)
		if err != nil {
			return nil, forwardError("roots/list", err)
		}
		return cl.ListRoots(ctx, p)
	}
}
