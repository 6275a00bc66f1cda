package aggregator

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/rewrite"
	"github.com/mcpmux/mcpmux/upstream"
)

// This file makes, of a client's request, what its server gets with it:
// the run it belongs to, the caller that answers what the server asks
// meanwhile, the client's capabilities and name, and the _meta that goes
// on. The tool path (forward.go), the pass-through of everything else
// (passthrough.go) and MCP tasks all send their requests with it, so
// that a server sees the same client whatever it is asked.

// request builds the upstream request context of a client request.
func (a *Aggregator) request(ctx context.Context, srv *upstream.Server, ss *mcp.ServerSession, runID string) upstream.Request {
	r := upstream.Request{RunID: runID, Caller: a.newCaller(ctx, ss), Features: clientFeatures(ctx, ss), ClientInfo: clientInfo(ctx, ss)}
	r.LogLevel, r.OwnLevel = ownLevel(ctx) // removed2026.go
	if srv.PerClient() {
		r.Client = a.clients.id(ctx, ss)
	}
	return r
}

// sessionFeatures are the capabilities a client session declared; a
// request without a session (none in practice) is treated as declaring
// everything, as mcpmux did before it looked.
func sessionFeatures(ss *mcp.ServerSession) upstream.ClientFeatures {
	if ss == nil {
		return upstream.AllFeatures
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil {
		return upstream.ClientFeatures{}
	}
	// Its tasks capability, which the SDK drops, was lifted (taskfront.go).
	return upstream.FeaturesOf(p.Capabilities).WithTasks(p.Meta[clientTasksKey])
}

// clientFeatures are the capabilities a request's client declared: in the
// request's _meta on the sessionless protocol, else in the session's
// initialize.
func clientFeatures(ctx context.Context, ss *mcp.ServerSession) upstream.ClientFeatures {
	if f, ok := ctx.Value(requestFeaturesKey{}).(upstream.ClientFeatures); ok {
		return f
	}
	return sessionFeatures(ss)
}

// clientInfo is who a request's client says it is: in the request's _meta
// on the sessionless protocol, else in the session's initialize; a 2026
// server sees it in each request (upstream.Request.ClientInfo).
func clientInfo(ctx context.Context, ss *mcp.ServerSession) *mcp.Implementation {
	if info, ok := ctx.Value(requestClientKey{}).(*mcp.Implementation); ok {
		return info
	}
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			return ip.ClientInfo
		}
	}
	return nil
}

// TaskHeader is the HTTP header a client may name its task with.
const TaskHeader = "X-Task-Id"

// taskMetaKey is the _meta key of a call's task, from the client and to
// the server.
const taskMetaKey = "task_id"

// runIDOf is the caller's evaluation task id (its run): _meta.task_id of the request, else the
// X-Task-Id header of its HTTP request, else the instance's default
// (--task-id or TASK_ID for a stdio instance).
func (a *Aggregator) runIDOf(meta mcp.Meta, extra *mcp.RequestExtra) string {
	if v, ok := meta[taskMetaKey].(string); ok && v != "" {
		return cleanTaskID(v)
	}
	if extra != nil && extra.Header != nil {
		if v := extra.Header.Get(TaskHeader); v != "" {
			return cleanTaskID(v)
		}
	}
	return a.defaultRunID
}

// maxTaskID bounds a task id, in bytes.
const maxTaskID = 128

// cleanTaskID keeps a task id fit for an environment variable and a log
// line: printable UTF-8, at most maxTaskID bytes. An id that had to change
// (a control character, invalid UTF-8, too long) keeps what fits of it,
// cut at a character, followed by the hash of the whole id (see
// journal.AlteredSuffix), so that two ids never become one task; so does
// an id that ends like such a hash, so that no literal id takes the task
// of an altered one.
func cleanTaskID(s string) string {
	clean := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r // invalid UTF-8 becomes U+FFFD
	}, s)
	if clean == s && len(s) <= maxTaskID && !looksAltered(s) {
		return s
	}
	suffix := journal.AlteredSuffix(s)
	return journal.CutUTF8(clean, maxTaskID-len(suffix)) + suffix
}

// looksAltered reports whether s ends like an id cleanTaskID changed.
func looksAltered(s string) bool {
	n := len(journal.AlteredSuffix(""))
	i := strings.LastIndex(s, journal.AlteredMark)
	if i < 0 || len(s)-i != n {
		return false
	}
	for _, c := range s[i+1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// hopMeta are the _meta keys that describe one hop of the protocol, not
// the call: the client's progress token and the per-request protocol
// fields of 2026-07-28 sessions. Forwarded, they would make a server
// believe it talks the client's protocol version with the client itself.
var hopMeta = map[string]bool{
	"progressToken":               true,
	mcp.MetaKeyProtocolVersion:    true,
	mcp.MetaKeyClientInfo:         true,
	mcp.MetaKeyClientCapabilities: true,
	//lint:ignore SA1019 a 2026-07-28 client's log level is a field of its hop, never forwarded.
	mcp.MetaKeyLogLevel:       true,
	mcp.MetaKeySubscriptionID: true,
}

// forwardMeta copies the client's _meta for the downstream call, without
// the hop-by-hop keys and the refusals (which only mcpmux sets: see
// withRefusals), and with the caller's task.
func forwardMeta(m mcp.Meta, runID string) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if hopMeta[k] || k == rewrite.RefusalsMetaKey {
			continue
		}
		if out == nil {
			out = make(mcp.Meta, len(m)+1)
		}
		out[k] = v
	}
	if runID != "" {
		if out == nil {
			out = mcp.Meta{}
		}
		out[taskMetaKey] = runID
	}
	return out
}
