package upstream

//lint:file-ignore SA1019 sampling, roots and logging are deprecated from MCP 2026-07-28 on, where a server still asks for them in its input requests (multi round-trip requests), which mcpmux forwards to the client of the call.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// Protocol eras.
//
// A connection speaks 2025-11-25 (initialize, a session, requests from the
// server) or 2026-07-28 (stateless: server/discover, every request carrying
// _meta with the protocol version and the client's capabilities and
// identity, multi round-trip requests instead of requests from the
// server, subscriptions/listen for changes). The go-sdk client negotiates
// the era (Client.Connect tries server/discover, then initialize) and does
// the 2026 work for the requests it sends itself; mcpmux's raw requests
// (raw.go) get it here:
//
//   - every raw request carries the _meta of its caller (withRequestMeta):
//     the calling client's capabilities and clientInfo, finer than a
//     connection's declaration, which a shared connection cannot make
//     for each of its clients;
//   - a result with resultType input_required is fulfilled by the client
//     of the call, through the same Caller a 2025 server's requests reach
//     (fulfil), and the request is sent again with inputResponses and
//     requestState, at most maxInputRounds times;
//   - the errors of the era (-32020, -32021, -32022) become errors that
//     say what to do (eraError).

// stateless reports whether c speaks MCP 2026-07-28 or later.
func (c *conn) stateless() bool { return c.era >= config.Protocol2026 }

// checkEra refuses a connection whose era is not the pinned protocol.
func checkEra(protocol, era string) error {
	switch {
	case protocol == config.Protocol2026 && era < config.Protocol2026:
		return fmt.Errorf("the server does not speak MCP %s (server/discover failed; it answered initialize with %s): set protocol: auto or %s in its config", config.Protocol2026, era, config.Protocol2025)
	case protocol == config.Protocol2025 && era >= config.Protocol2026:
		return fmt.Errorf("the server answered with MCP %s although %s was asked for", era, config.Protocol2025)
	}
	return nil
}

type requestKey struct{}

// withRequest marks ctx as running the request r: its raw requests carry
// r's _meta, and its input requests go to r.Caller.
func withRequest(ctx context.Context, r *Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

func requestOf(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}

// metaCapabilities is the clientCapabilities a 2026 request declares for
// f: the same as a 2025 connection declares for it (capabilities), spelled
// as the 2026 _meta has it.
func metaCapabilities(f ClientFeatures) map[string]any {
	caps := map[string]any{}
	if f.Roots {
		caps["roots"] = map[string]any{}
	}
	if f.Sampling {
		s := map[string]any{}
		if f.SamplingTools {
			s["tools"] = map[string]any{}
		}
		caps["sampling"] = s
	}
	if f.elicits() {
		e := map[string]any{}
		if f.FormElicitation {
			e["form"] = map[string]any{}
		}
		if f.URLElicitation {
			e["url"] = map[string]any{}
		}
		caps["elicitation"] = e
	}
	// mcpmux finishes any task a server makes of a call (tasks2026.go).
	caps["extensions"] = map[string]any{TasksExtension: map[string]any{}}
	return caps
}

// withRequestMeta returns params with the _meta of a 2026 request added:
// the protocol version, and the capabilities and clientInfo of the request
// running in ctx (the connection's own for requests mcpmux makes for
// itself, such as listing), and the clients' log level. Keys params
// already has are kept.
func (c *conn) withRequestMeta(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &obj); err != nil {
			return nil, fmt.Errorf("params are not an object: %w", err)
		}
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	meta := map[string]json.RawMessage{}
	if m := obj["_meta"]; m != nil {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("_meta is not an object: %w", err)
		}
	}
	features, info, level := c.features, c.srv.opts.ClientInfo, c.srv.LoggingLevel()
	if r := requestOf(ctx); r != nil {
		features = r.Features
		if r.ClientInfo != nil {
			info = r.ClientInfo
		}
		if r.OwnLevel {
			level = r.LogLevel
		}
	}
	set := func(key string, v any) {
		if _, ok := meta[key]; ok {
			return
		}
		if b, err := json.Marshal(v); err == nil {
			meta[key] = b
		}
	}
	set(mcp.MetaKeyProtocolVersion, c.era)
	set(mcp.MetaKeyClientCapabilities, metaCapabilities(features))
	if info != nil {
		set(mcp.MetaKeyClientInfo, info)
	}
	if level != "" {
		set(mcp.MetaKeyLogLevel, level)
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = b
	return json.Marshal(obj)
}

// maxInputRounds bounds the rounds of a multi round-trip request, as the
// go-sdk client bounds its own: a server that keeps asking is an error,
// not a loop.
const maxInputRounds = 10

// inputRequired is the part of a 2026 result that asks for input.
type inputRequired struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

// multiRound sends a request that a 2026 server may answer with
// input_required (tools/call, prompts/get, resources/read): the input is
// asked of the client of the call, and the request sent again with the
// answers, until the server completes it.
func (c *conn) multiRound(ctx context.Context, method string, params json.RawMessage, send func(json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	for round := 1; ; round++ {
		res, err := send(params)
		if err != nil {
			return nil, err
		}
		var ir inputRequired
		if json.Unmarshal(res, &ir) != nil || ir.ResultType != "input_required" {
			return res, nil
		}
		if round >= maxInputRounds {
			return nil, &InputError{Reason: fmt.Sprintf("the server still asked for input after %d rounds of %s; mcpmux gave up", maxInputRounds, method)}
		}
		if len(ir.InputRequests) == 0 {
			// A server shedding load asks again with nothing to answer:
			// the next round is the retry it wants.
			if err := sleepCtx(ctx, inputRetryDelay); err != nil {
				return nil, err
			}
		}
		answers, err := c.fulfil(ctx, ir.InputRequests)
		if err != nil {
			return nil, err
		}
		if params, err = withInputResponses(params, answers, ir.RequestState); err != nil {
			return nil, err
		}
	}
}

// inputRetryDelay is the pause before retrying a request that the server
// answered with input_required but nothing to ask.
const inputRetryDelay = 100 * time.Millisecond

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// withInputResponses returns params with the answers of a round and the
// server's requestState, replacing those of the round before.
func withInputResponses(params json.RawMessage, answers map[string]json.RawMessage, state string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil {
		return nil, err
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	obj["inputResponses"] = b
	delete(obj, "requestState")
	if state != "" {
		s, _ := json.Marshal(state)
		obj["requestState"] = s
	}
	return json.Marshal(obj)
}

// InputError is a multi round-trip request mcpmux could not complete: the
// client of the call cannot answer what the server asks (it lacks the
// capability), refused to, or the server kept asking.
type InputError struct {
	Reason string
}

func (e *InputError) Error() string { return e.Reason }

// fulfil asks the client of the request running in ctx for each input the
// server requested, at once, and returns the answers by the server's ids.
func (c *conn) fulfil(ctx context.Context, requests map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	r := requestOf(ctx)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		out   = make(map[string]json.RawMessage, len(requests))
		ctx2  context.Context
		abort context.CancelFunc
	)
	ctx2, abort = context.WithCancel(ctx)
	defer abort()
	for id, raw := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans, err := c.askInput(ctx2, r, raw)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				abort() // one unanswerable input fails the call: stop asking the rest
				return
			}
			out[id] = ans
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return out, nil
}

// askInput asks the client of r for one input request, as its request of
// the same method would have been forwarded on a 2025 connection.
func (c *conn) askInput(ctx context.Context, r *Request, raw json.RawMessage) (json.RawMessage, error) {
	var ir struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &ir); err != nil {
		return nil, fmt.Errorf("reading the server's input request: %w", err)
	}
	if r == nil || r.Caller == nil {
		return nil, &InputError{Reason: fmt.Sprintf("the server asked for input (%s), and this request has no client mcpmux can ask", ir.Method)}
	}
	lacks := func(capability string) error {
		return &InputError{Reason: fmt.Sprintf("the server needs %s (it asked with %s), and this client did not declare the %s capability: use a client that supports %s, or a tool that does not ask for input", capability, ir.Method, capability, capability)}
	}
	var (
		res any
		err error
	)
	switch ir.Method {
	case "elicitation/create":
		var p mcp.ElicitParams
		if err := json.Unmarshal(ir.Params, &p); err != nil {
			return nil, fmt.Errorf("reading the server's elicitation: %w", err)
		}
		switch {
		case p.Mode == "url" && !r.Features.URLElicitation:
			return nil, lacks("elicitation (url mode)")
		case p.Mode != "url" && !r.Features.FormElicitation:
			return nil, lacks("elicitation")
		}
		res, err = r.Caller.Elicit(ctx, &p)
	case "sampling/createMessage":
		if !r.Features.Sampling {
			return nil, lacks("sampling")
		}
		var p mcp.CreateMessageWithToolsParams
		if err := json.Unmarshal(ir.Params, &p); err != nil {
			return nil, fmt.Errorf("reading the server's sampling request: %w", err)
		}
		res, err = r.Caller.CreateMessage(ctx, &p)
	case "roots/list":
		if !r.Features.Roots {
			return nil, lacks("roots")
		}
		var p mcp.ListRootsParams
		if len(ir.Params) > 0 {
			if err := json.Unmarshal(ir.Params, &p); err != nil {
				return nil, fmt.Errorf("reading the server's roots request: %w", err)
			}
		}
		res, err = r.Caller.ListRoots(ctx, &p)
	default:
		return nil, &InputError{Reason: fmt.Sprintf("the server asked for input with %q, which MCP 2026-07-28 does not define", ir.Method)}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &InputError{Reason: fmt.Sprintf("the client did not answer the server's %s: %v", ir.Method, err)}
	}
	return json.Marshal(res)
}

// Error codes of MCP 2026-07-28.
const (
	codeHeaderMismatch      = -32020
	codeMissingCapability   = -32021
	codeUnsupportedProtocol = -32022
)

// eraError turns a server's error of the 2026 era into one that says what
// to do, or returns nil for any other error.
func eraError(server string, code int64, message string, data json.RawMessage) error {
	switch code {
	case codeHeaderMismatch:
		return &ProtocolError{Server: server, Code: code, Text: fmt.Sprintf("the server found the request's Mcp-* headers do not match its body (%s); this is a fault of mcpmux or of a proxy between it and the server that rewrites headers: report it, or set protocol: %s in the server's config", message, config.Protocol2025)}
	case codeMissingCapability:
		return &ProtocolError{Server: server, Code: code, Text: fmt.Sprintf("the server needs a client capability this client did not declare (%s); use a client that declares it", withData(message, data))}
	case codeUnsupportedProtocol:
		return &ProtocolError{Server: server, Code: code, Text: fmt.Sprintf("the server does not speak the protocol version mcpmux used (%s); mcpmux reconnects to negotiate again — retry, or pin the server's protocol: in its config", withData(message, data))}
	}
	return nil
}

func withData(message string, data json.RawMessage) string {
	if len(data) == 0 || string(data) == "null" {
		return message
	}
	return message + ": " + string(data)
}

// ProtocolError is a server's refusal of a request for a reason of the
// protocol (MCP 2026-07-28's error codes), with what to do about it.
type ProtocolError struct {
	Server string
	Code   int64
	Text   string
}

func (e *ProtocolError) Error() string { return fmt.Sprintf("%s (JSON-RPC error %d)", e.Text, e.Code) }

// minListTTL bounds how often a server's lists are fetched again because
// their ttlMs ran out: a server that says 1ms must not make mcpmux list
// in a loop.
const minListTTL = time.Second

// listTTL is the time-to-live a 2026 server gave its lists (ttlMs, MCP
// 2026-07-28's caching): when the shortest has run out, the lists are
// fetched again, as after a list_changed, so that a server that announces
// no changes still has them seen.
type listTTL struct {
	mu    sync.Mutex
	min   time.Duration // shortest ttl seen since the last armTTL; 0: none
	last  time.Duration // shortest ttl of the lists last fetched; 0: none
	timer *time.Timer
}

// noteTTL records a list's ttl.
func (c *conn) noteTTL(d time.Duration) {
	c.ttl.mu.Lock()
	defer c.ttl.mu.Unlock()
	if c.ttl.min == 0 || d < c.ttl.min {
		c.ttl.min = d
	}
}

// armTTL schedules a refresh for when the shortest ttl of the lists just
// fetched runs out, replacing the one scheduled before.
func (c *conn) armTTL() {
	c.ttl.mu.Lock()
	defer c.ttl.mu.Unlock()
	if c.ttl.timer != nil {
		c.ttl.timer.Stop()
		c.ttl.timer = nil
	}
	d := c.ttl.min
	c.ttl.min, c.ttl.last = 0, d
	if d == 0 {
		return
	}
	c.ttl.timer = time.AfterFunc(max(d, minListTTL), c.signalRefresh)
}

// ListTTL is the shortest ttlMs the server gave the lists mcpmux last
// fetched on its shared connection: how long they may be taken as fresh;
// 0 if it gave none (a 2025-11-25 server, which announces its changes
// instead) or is not connected.
func (s *Server) ListTTL() time.Duration {
	s.mu.Lock()
	c := s.cur
	s.mu.Unlock()
	if c == nil {
		return 0
	}
	c.ttl.mu.Lock()
	defer c.ttl.mu.Unlock()
	return c.ttl.last
}

// stopTTL cancels the scheduled refresh: the connection is over.
func (c *conn) stopTTL() {
	c.ttl.mu.Lock()
	defer c.ttl.mu.Unlock()
	if c.ttl.timer != nil {
		c.ttl.timer.Stop()
	}
}

// withoutEnvelope returns a complete 2026 result (or a task handle) without what belongs to
// the hop between mcpmux and the server: its resultType and the server's
// serverInfo in _meta (the client has mcpmux's own). The rest passes as
// the server sent it; a result without them is returned as it is.
func withoutEnvelope(res json.RawMessage) json.RawMessage {
	if !bytes.Contains(res, []byte(`"resultType"`)) && !bytes.Contains(res, []byte(mcp.MetaKeyServerInfo)) {
		return res
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(res, &obj) != nil {
		return res
	}
	if string(obj["resultType"]) != `"task"` { // a task handle says what it is
		delete(obj, "resultType")
	}
	if m := obj["_meta"]; m != nil {
		var meta map[string]json.RawMessage
		if json.Unmarshal(m, &meta) == nil {
			delete(meta, mcp.MetaKeyServerInfo)
			if len(meta) == 0 {
				delete(obj, "_meta")
			} else if b, err := json.Marshal(meta); err == nil {
				obj["_meta"] = b
			}
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return res
	}
	return out
}
