package aggregator

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/upstream"
)

// This file is what mcpmux does for requests of the sessionless protocol
// (MCP 2026-07-28 and later) beyond what the go-sdk does for them: each
// such request says who its client is and what it can do in its own
// _meta, whatever came before it on the same connection (stdio) or on none
// (HTTP), and its result says it is complete ("resultType") and how long a
// list may be cached, also when mcpmux passes a server's bytes through.

// firstSessionlessVersion is the first protocol version without
// initialize and sessions. Versions are dates: they sort as strings.
const firstSessionlessVersion = "2026-07-28"

// perRequest is what the go-sdk's requests of clients tell of the
// request's own protocol version and capabilities: those of its _meta on
// the sessionless protocol, else those of the session's initialize.
type perRequest interface {
	ProtocolVersion() string
	ClientCapabilities() *mcp.ClientCapabilities
	ClientInfo() *mcp.Implementation
}

// requestFeaturesKey and requestCapsKey hold, in a sessionless request's
// context, the capabilities its _meta declared.
type (
	requestFeaturesKey struct{}
	requestCapsKey     struct{}
	requestClientKey   struct{}
	// requestLevelKey holds a sessionless request's own log level
	// (io.modelcontextprotocol/logLevel of its _meta), "" for none.
	requestLevelKey struct{}
)

// sessionless reports whether req is a request of the sessionless
// protocol.
func sessionless(req mcp.Request) (perRequest, bool) {
	r, ok := req.(perRequest)
	return r, ok && r.ProtocolVersion() >= firstSessionlessVersion
}

// sessionlessMiddleware, outermost, gives a sessionless request's handlers
// the capabilities of the request (see clientFeatures), and marks the
// results mcpmux writes itself (see sessionlessResult) for the fields the
// go-sdk adds to its own.
func (a *Aggregator) sessionlessMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := sessionless(req)
		if !ok {
			return next(ctx, method, req)
		}
		caps := r.ClientCapabilities()
		if caps == nil {
			caps = &mcp.ClientCapabilities{}
		}
		ctx = context.WithValue(ctx, requestFeaturesKey{}, upstream.FeaturesOf(caps))
		ctx = context.WithValue(ctx, requestCapsKey{}, caps)
		if info := r.ClientInfo(); info != nil {
			ctx = context.WithValue(ctx, requestClientKey{}, info)
		}
		ctx = context.WithValue(ctx, requestLevelKey{}, requestLevel(req))
		if x := req.GetExtra(); x != nil && x.Header != nil {
			ctx = context.WithValue(ctx, ownClientKey{}, true) // HTTP
			ctx = withClientKey(ctx, req)                      // clientkey.go
		}
		var (
			res mcp.Result
			err error
		)
		if retry, ok := mrtrRetryOf(req); ok {
			// What its servers ask it comes back in results (mrtr.go).
			res, err = a.parked.call(ctx, next, method, req, retry)
		} else {
			res, err = next(ctx, method, req)
		}
		if err != nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.CallToolResult, *mcp.GetPromptResult, *mcp.ReadResourceResult:
			// The SDK keeps their resultType unexported, and sets it only
			// in its own handlers, which mcpmux's middleware answers
			// before: encoded, they pass as a server's bytes would.
			raw, merr := json.Marshal(r)
			if merr != nil {
				return nil, merr
			}
			return &rawResult{raw: raw, sessionless: true}, nil
		case sessionlessResult:
			r.markSessionless()
		}
		return res, nil
	}
}

// mrtrRetryOf describes a request whose servers may ask its client for
// input midway (mrtr.go): tools/call, prompts/get, resources/read, as MCP
// 2026-07-28 lets a server answer them with an InputRequiredResult.
func mrtrRetryOf(req mcp.Request) (mrtrRetry, bool) {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if p := r.Params; p != nil {
			return mrtrRetry{what: "tools/call " + p.Name, responses: p.InputResponses, state: p.RequestState}, true
		}
	case *mcp.GetPromptRequest:
		if p := r.Params; p != nil {
			return mrtrRetry{what: "prompts/get " + p.Name, responses: p.InputResponses, state: p.RequestState}, true
		}
	case *mcp.ReadResourceRequest:
		if p := r.Params; p != nil {
			return mrtrRetry{what: "resources/read " + p.URI, responses: p.InputResponses, state: p.RequestState}, true
		}
	}
	return mrtrRetry{}, false
}

// A sessionlessResult is a result mcpmux encodes itself; marked, it
// carries what every result of the sessionless protocol must.
type sessionlessResult interface{ markSessionless() }

// withResultType adds "resultType": "complete" to a result object that has
// no resultType (a server's own, such as "input_required", is kept).
func withResultType(raw json.RawMessage) json.RawMessage {
	if bytes.Contains(raw, []byte(`"resultType"`)) {
		var probe struct {
			ResultType json.RawMessage `json:"resultType"`
		}
		if json.Unmarshal(raw, &probe) != nil || probe.ResultType != nil {
			return raw
		}
	}
	out, err := withField(raw, "resultType", json.RawMessage(`"complete"`))
	if err != nil {
		return raw
	}
	return out
}

// requestIsItsOwnClient reports whether a request's session ends with it:
// a sessionless request over HTTP, where nothing is kept for its client
// between requests (over stdio its connection is its client). It reads
// only ctx: a function, so that what needs it (tasks2026.go) needs no
// Aggregator.
func requestIsItsOwnClient(ctx context.Context) bool {
	own, _ := ctx.Value(ownClientKey{}).(bool)
	return own
}

// ownClientKey marks, in a sessionless HTTP request's context, that the
// request is its own client (see requestIsItsOwnClient).
type ownClientKey struct{}
