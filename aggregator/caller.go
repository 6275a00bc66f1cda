package aggregator

//lint:file-ignore SA1019 sampling, roots and logging are deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where they are not, and passes a server's sampling and roots requests and log messages to the client of its call.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/upstream"
)

// sessionCaller forwards what a server asks during a request to the client
// session that made it. It holds the request's context, so that what it
// sends travels with that request (on its HTTP response stream).
type sessionCaller struct {
	ctx       context.Context
	ss        *mcp.ServerSession
	id        string
	stateless bool // no session: requests to the client are refused
	a         *Aggregator
}

var _ upstream.Caller = (*sessionCaller)(nil)

func (a *Aggregator) newCaller(ctx context.Context, ss *mcp.ServerSession) upstream.Caller {
	if ss == nil {
		return nil
	}
	return &sessionCaller{ctx: ctx, ss: ss, id: sessionKey(ss), stateless: a.stateless, a: a}
}

// errStateless is why a stateless front asks its clients nothing: the
// go-sdk refuses requests to a client of stateless HTTP, which could not
// answer them (its answer would be a request of its own, to any replica).
var errStateless = errors.New("mcpmux serves stateless HTTP (--stateless), where it cannot send requests to its clients")

func (c *sessionCaller) ID() string { return c.id }

func (c *sessionCaller) capabilities() *mcp.ClientCapabilities {
	if caps, ok := c.ctx.Value(requestCapsKey{}).(*mcp.ClientCapabilities); ok {
		return caps // a sessionless request's own
	}
	if p := c.ss.InitializeParams(); p != nil && p.Capabilities != nil {
		return p.Capabilities
	}
	return &mcp.ClientCapabilities{}
}

// reqCtx is the client request's context while it runs; a server's message
// arriving after it ended goes out on its own.
func (c *sessionCaller) reqCtx(ctx context.Context) context.Context {
	if c.ctx.Err() == nil {
		return c.ctx
	}
	return ctx
}

func (c *sessionCaller) CreateMessage(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	if pc := parkedFrom(c.ctx); pc != nil {
		if c.capabilities().Sampling == nil {
			return nil, fmt.Errorf("the client does not support sampling")
		}
		return askFor[mcp.CreateMessageWithToolsResult](ctx, pc, "sampling/createMessage", p)
	}
	if c.stateless {
		return nil, errStateless
	}
	if c.capabilities().Sampling == nil {
		return nil, fmt.Errorf("the client does not support sampling")
	}
	return c.ss.CreateMessageWithTools(c.reqCtx(ctx), p)
}

// Elicit asks the client and returns its answer as the client gave it: the
// go-sdk would check it against the requested schema and fill in the
// schema's defaults, so that the server got fields the user never sent.
// Checking the answer is the server's business, as it is directly.
func (c *sessionCaller) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if pc := parkedFrom(c.ctx); pc != nil {
		if c.capabilities().Elicitation == nil {
			return nil, fmt.Errorf("the client does not support elicitation")
		}
		if p.Mode == "" {
			// A 2025-11-25 server may leave the mode out; in an
			// inputRequest it is required (form, unless a URL is asked
			// for), as the SDK fills it in for a session's client.
			q := *p
			q.Mode = "form"
			if q.URL != "" {
				q.Mode = "url"
			}
			p = &q
		}
		return askFor[mcp.ElicitResult](ctx, pc, "elicitation/create", p)
	}
	if c.stateless {
		return nil, errStateless
	}
	ctx, answer := withElicitAnswer(c.reqCtx(ctx))
	answer.modeless = p.Mode == ""
	res, err := c.ss.Elicit(ctx, p) // the SDK checks the client's elicitation modes
	if answer.res != nil {
		return answer.res, nil
	}
	return res, err
}

// elicitAnswer holds a client's answer to an elicitation as it came.
// modeless says the server's request had no mode, which the SDK fills in
// (form or url, from the other fields) and the client must not get.
type elicitAnswer struct {
	res      *mcp.ElicitResult
	modeless bool
}

type elicitAnswerKey struct{}

func withElicitAnswer(ctx context.Context) (context.Context, *elicitAnswer) {
	a := &elicitAnswer{}
	return context.WithValue(ctx, elicitAnswerKey{}, a), a
}

// keepElicitAnswers is sending middleware of the profiles' servers: it
// keeps a copy of the client's answer to elicitation/create before the
// SDK changes it (see Elicit), and sends the request without the mode the
// SDK filled in where the server sent none.
func keepElicitAnswers(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		a, elicits := ctx.Value(elicitAnswerKey{}).(*elicitAnswer)
		if p, ok := req.GetParams().(*mcp.ElicitParams); elicits && ok && a.modeless && p != nil {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				req = &mcp.ServerRequest[*modelessElicit]{Session: ss, Params: &modelessElicit{p: p}}
			}
		}
		res, err := next(ctx, method, req)
		if elicits && err == nil {
			if r, ok := res.(*mcp.ElicitResult); ok {
				kept := *r
				kept.Content = maps.Clone(r.Content)
				a.res = &kept
			}
		}
		return res, err
	}
}

// modelessElicit are elicitation params sent without their mode.
type modelessElicit struct {
	mcp.ParamsBase
	p *mcp.ElicitParams
}

func (m *modelessElicit) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(m.p)
	if err != nil {
		return nil, err
	}
	return withoutField(b, "mode")
}

func (c *sessionCaller) ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	pc := parkedFrom(c.ctx)
	if pc == nil && c.stateless {
		return nil, errStateless
	}
	if c.capabilities().RootsV2 == nil {
		return nil, fmt.Errorf("the client does not support roots")
	}
	if pc != nil {
		return askFor[mcp.ListRootsResult](ctx, pc, "roots/list", p)
	}
	return c.ss.ListRoots(c.reqCtx(ctx), p)
}

// Log sends a server's log message to the client, at or above the level
// the client set with logging/setLevel (none before it sets one).
func (c *sessionCaller) Log(ctx context.Context, p *mcp.LoggingMessageParams) {
	if pc := parkedFrom(c.ctx); pc != nil {
		// On the stream of the request waiting on the call, at its level
		// (see progressTo).
		pc.notify(func(w *parkWaiter) { _ = w.ss.Log(w.ctx, p) })
		return
	}
	_ = c.ss.Log(c.reqCtx(ctx), p)
}

// TaskStatus sends the client a server's notifications/tasks/status about
// one of its tasks, which the go-sdk cannot send: see taskfront.go. Over
// HTTP it goes on the session's GET stream, if the client has one open;
// else it is not sent, which the spec allows (clients poll tasks/get).
func (c *sessionCaller) TaskStatus(_ context.Context, params json.RawMessage) {
	if !c.a.out.notify(c.ss, "notifications/tasks/status", params) {
		c.a.log.Debug("task status not sent: the client has no open stream", "session", c.id)
	}
}

// ResourcesChanged tells the client that its own connection to a server
// lists other resources (upstream.Server.ClientResources).
func (c *sessionCaller) ResourcesChanged() {
	if !c.a.out.notify(c.ss, "notifications/resources/list_changed", nil) {
		c.a.log.Debug("resources/list_changed not sent: the client has no open stream", "session", c.id)
	}
}

// sessionKey identifies a client session: its HTTP session id, or, on
// stdio, the session itself.
func sessionKey(ss *mcp.ServerSession) string {
	if id := ss.ID(); id != "" {
		return id
	}
	return fmt.Sprintf("session-%p", ss)
}
