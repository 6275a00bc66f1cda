package aggregator

import (
	"context"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/upstream"
)

// Per-client connections of sessionless HTTP clients. A client of MCP
// 2026-07-28 over HTTP has no session: each request is a session of its
// own in the go-sdk, which ends with it. A per-client server (a browser
// per task) is worth its name only if a client's next call finds the
// page its last one left; so such a request names its client itself:
//
//   - by its task: _meta.task_id, else the X-Task-Id header (as the
//     journal finds it), within its principal (the bearer token it was
//     authenticated with), so that no holder of another token reaches a
//     task's browser by naming the task;
//   - else by its principal alone: every request with that token shares
//     one connection;
//   - else (no task, no token: loopback without authentication) it has
//     none, and a call gets a connection for that call alone: for its
//     whole run, the rounds it is parked for its client's answer
//     included (mrtr.go), closed when it ends.
//
// A keyed connection does not end with a request: it is closed when idle
// for the server's idle_timeout (10 minutes by default), as a session's
// is when its client leaves.

// clientKeyKey holds, in a sessionless HTTP request's context, the key
// of its per-client connections.
type clientKeyKey struct{}

// withClientKey gives ctx the per-client key of req, a sessionless HTTP
// request, if it names one.
func withClientKey(ctx context.Context, req mcp.Request) context.Context {
	var task, principal string
	if params := req.GetParams(); params != nil && !reflect.ValueOf(params).IsNil() {
		if v, ok := params.GetMeta()[taskMetaKey].(string); ok && v != "" {
			task = cleanTaskID(v)
		}
	}
	if x := req.GetExtra(); x != nil {
		if v := x.Header.Get(TaskHeader); task == "" && v != "" {
			task = cleanTaskID(v)
		}
		if x.TokenInfo != nil {
			principal = x.TokenInfo.UserID
		}
	}
	key, ok := clientKey(task, principal)
	if !ok {
		return ctx
	}
	ctx = context.WithValue(ctx, namedClientKey{}, key)
	return context.WithValue(ctx, clientKeyKey{}, key)
}

// clientKey is the key of the client a request names with its task and
// its principal, if it names one.
func clientKey(task, principal string) (upstream.ClientID, bool) {
	switch {
	case task != "":
		// principal is a token's hash ("token-…", front/tokens.go), or
		// "" without authentication: "/" cannot be in it.
		return upstream.ClientID("task:" + principal + "/" + task), true
	case principal != "":
		return upstream.ClientID("principal:" + principal), true
	}
	return "", false
}

// namedClientKey holds, in a sessionless HTTP request's context, the key
// the request named itself (withClientKey); callClient's key of a call
// that names none does not replace it.
type namedClientKey struct{}

// namedClient returns the key a sessionless HTTP request named, if any:
// its task, else its principal (not a call's own key, see callClient).
func namedClient(ctx context.Context) (upstream.ClientID, bool) {
	id, ok := ctx.Value(namedClientKey{}).(upstream.ClientID)
	return id, ok
}

// keyedClient returns the per-client key of a sessionless HTTP request,
// if it has one.
func keyedClient(ctx context.Context) (upstream.ClientID, bool) {
	id, ok := ctx.Value(clientKeyKey{}).(upstream.ClientID)
	return id, ok
}

// callClient gives a sessionless HTTP tool call that names no client a
// client of its own, id, for its whole run; release closes its per-client
// connections once the call has ended. Keyed by the request's session
// instead, they would close when the request that parks the call ends,
// and the call with them.
func (a *Aggregator) callClient(ctx context.Context, id string) (_ context.Context, release func()) {
	if _, keyed := keyedClient(ctx); keyed || !requestIsItsOwnClient(ctx) {
		return ctx, func() {}
	}
	key := upstream.ClientID("call:" + id)
	return context.WithValue(ctx, clientKeyKey{}, key), func() { a.pool.ReleaseClient(key) }
}
