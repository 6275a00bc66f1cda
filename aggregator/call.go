package aggregator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/rewrite"
	"github.com/mcpmux/mcpmux/upstream"
)

// toolHandler returns the handler registered for an exposed tool. It holds
// its route, so a call never parses names.
func (a *Aggregator) toolHandler(p *profile, e *Entry) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if e.meta != nil {
			return e.meta(a, ctx, p, req), nil
		}
		return a.handle(ctx, p, req, e), nil
	}
}

// redirecting makes the upstream call and, if the server says it does not
// know the tool, the same lookup as auto-correction among the profile's
// other servers.
func (a *Aggregator) redirecting(ctx context.Context, p *profile, req *mcp.CallToolRequest, e *Entry) *mcp.CallToolResult {
	res := a.call(ctx, p, req, e)
	if res.IsError && strings.Contains(rewrite.ResultText(res), "Unknown tool") {
		if alt := withoutServer(p.view.Load().byTool[e.Tool], e.Server); len(alt) == 1 {
			if refused := a.refused(p, req, alt[0]); refused != nil {
				return refused
			}
			a.log.Info("auto-corrected tool call after the server did not know the tool", "session", sessionID(req.Session), "requested", e.Name, "chosen", alt[0].Name)
			a.metrics.RuleHit(metrics.RuleCorrected, autoCorrectionRule)
			res2 := a.call(ctx, p, req, alt[0])
			if !res2.IsError {
				rewrite.PrependNote(res2, fmt.Sprintf("[Auto-corrected: Server '%s' does not know tool '%s', but it was found only in server '%s', so automatically used '%s' instead] ", e.Server, e.Tool, alt[0].Server, alt[0].Server))
				return res2
			}
		}
	}
	return res
}

// call runs one tool call through the pipeline. It always returns a
// result: failures become results with IsError whose text says what went
// wrong and what to do, never JSON-RPC errors, so that an agent can read
// them and carry on.
func (a *Aggregator) call(ctx context.Context, p *profile, req *mcp.CallToolRequest, e *Entry) *mcp.CallToolResult {
	srv := a.pool.Get(e.Server)
	if srv == nil {
		a.metrics.CallAnswered(e.Server, e.Tool, metrics.OutcomeUnavailable)
		return toolError("Tool '%s' on server '%s' is not available: the server is no longer configured. Use another tool.", e.Tool, e.Server)
	}
	args, err := callArguments(req.Params.Arguments)
	if err != nil {
		a.metrics.CallAnswered(e.Server, e.Tool, metrics.OutcomeBadArgs)
		return toolError("Tool '%s' on server '%s' was not called: %v. Pass the arguments as a JSON object matching the tool's input schema.", e.Tool, e.Server, err)
	}
	timeout := srv.Config().CallTimeout(e.Tool, a.current.Load().Timeout)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	task := a.taskOf(req.Params.Meta, req.Extra)
	cp := upstream.CallParams{
		Request: a.request(ctx, srv, req.Session, task),
		Params: &mcp.CallToolParams{
			Name:      e.Tool,
			Arguments: args,
			Meta:      withRefusals(forwardMeta(req.Params.Meta, task), a.current.Load().Rules(), e),
		},
		Progress:     progressTo(ctx, req),
		StreamClosed: closeClientStream(req),
	}
	start := time.Now()
	running := a.metrics.StartCall(e.Server, e.Tool)
	res, err := srv.CallTool(cctx, cp)
	if next := a.pool.Get(e.Server); errors.Is(err, upstream.ErrStopped) && next != nil && next != srv {
		// A reload replaced the server between the lookup and the call:
		// its new version takes the call.
		cp.Request = a.request(ctx, next, req.Session, task)
		res, err = next.CallTool(cctx, cp)
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	if err != nil {
		running.Done(failureOutcome(ctx, cctx, err))
		a.log.Warn("tool call failed", "tool", e.Name, "task", task, "session", sessionID(req.Session), "error", err, "elapsed", elapsed)
		// The error may quote a child's stderr, which may echo a secret.
		return a.maskResult(callFailure(ctx, cctx, err, e, timeout))
	}
	running.Done(resultOutcome(res))
	a.log.Debug("tool call", "tool", e.Name, "task", task, "session", sessionID(req.Session), "is_error", res.IsError, "elapsed", elapsed)
	limit := a.current.Load().MaxResultBytes
	if capped, truncated := capResult(res, limit); truncated {
		a.log.Warn("tool result truncated: over max_result_bytes", "tool", e.Name, "task", task, "limit", limit.String())
		res = capped
	}
	return res
}

// TaskHeader is the HTTP header a client may name its task with.
const TaskHeader = "X-Task-Id"

// taskMetaKey is the _meta key of a call's task, from the client and to
// the server.
const taskMetaKey = "task_id"

// taskOf is the caller's task: _meta.task_id of the request, else the
// X-Task-Id header of its HTTP request, else the instance's default
// (--task-id or TASK_ID for a stdio instance).
func (a *Aggregator) taskOf(meta mcp.Meta, extra *mcp.RequestExtra) string {
	if v, ok := meta[taskMetaKey].(string); ok && v != "" {
		return cleanTaskID(v)
	}
	if extra != nil && extra.Header != nil {
		if v := extra.Header.Get(TaskHeader); v != "" {
			return cleanTaskID(v)
		}
	}
	return a.defaultTask
}

// progressTo returns the function that passes a server's progress
// notifications to the client, under the client's own token; nil if the
// client asked for no progress.
func progressTo(ctx context.Context, req *mcp.CallToolRequest) func(context.Context, *mcp.ProgressNotificationParams) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	ss := req.Session
	return func(_ context.Context, p *mcp.ProgressNotificationParams) {
		// The client request's context routes the notification to its
		// response stream. upstream holds the answer until the progress
		// sent before it has come through here (see upstream/order.go);
		// should one still trail the answer, it goes out on its own rather
		// than to a finished request's stream.
		nctx := ctx
		if nctx.Err() != nil {
			nctx = context.Background()
		}
		_ = ss.NotifyProgress(nctx, &mcp.ProgressNotificationParams{
			Meta: p.Meta, ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message,
		})
	}
}

// closeClientStream returns what to do when a server closes the call's
// response stream before answering: close the client's stream likewise,
// with the server's retry delay, so that the client sees what it would
// see directly. A client on 2025-11-25 got a priming event and reconnects
// to get the answer (mcpmux resumes the server's stream meanwhile, and its
// event store keeps what arrives); an older one cannot, as it could not
// directly, and is no longer reachable for the call. Nil for a client
// without such a stream (stdio).
func closeClientStream(req *mcp.CallToolRequest) func(time.Duration) bool {
	extra := req.Extra
	if extra == nil || extra.CloseSSEStream == nil {
		return nil
	}
	resumable := extra.Header.Get("Mcp-Protocol-Version") >= "2025-11-25"
	return func(retry time.Duration) bool {
		extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: retry})
		return !resumable
	}
}

// cleanTaskID keeps a task id fit for an environment variable and a log
// line: printable, at most 128 bytes.
func cleanTaskID(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > 128 {
		s = s[:128]
	}
	return s
}

// callArguments checks that the client's arguments are a JSON object and
// forwards them as raw bytes. Absent arguments become {}: TypeScript
// servers reject "arguments": null.
func callArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '{' {
		kind := "a value"
		switch raw[0] {
		case '[':
			kind = "an array"
		case '"':
			kind = "a string"
		case 't', 'f':
			kind = "a boolean"
		default:
			kind = "a number"
		}
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", kind)
	}
	return raw, nil
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
	mcp.MetaKeyLogLevel:           true,
	mcp.MetaKeySubscriptionID:     true,
}

// forwardMeta copies the client's _meta for the downstream call, without
// the hop-by-hop keys and the refusals (which only mcpmux sets: see
// withRefusals), and with the caller's task.
func forwardMeta(m mcp.Meta, task string) mcp.Meta {
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
	if task != "" {
		if out == nil {
			out = mcp.Meta{}
		}
		out[taskMetaKey] = task
	}
	return out
}

// withRefusals adds to a downstream call's _meta the refusals of the rules
// that apply to the call of e (rewrite.RefusalsMetaKey), so that a server
// that fetches pages, such as the built-in fetch engine, holds every page
// it reads (a redirect's target too) to the rules that checked the
// arguments. The client's own value of that key never reaches the server
// (forwardMeta drops it): an agent cannot take rules away.
func withRefusals(meta mcp.Meta, rules *rewrite.Rules, e *Entry) mcp.Meta {
	refusals := rules.Refusals(&rewrite.Call{Name: e.Name, Server: e.Server, Tool: e.Tool})
	if len(refusals) == 0 {
		return meta
	}
	if meta == nil {
		meta = mcp.Meta{}
	}
	meta[rewrite.RefusalsMetaKey] = refusals
	return meta
}

// callFailure turns an error of an upstream call into the result the
// client reads.
func callFailure(ctx, cctx context.Context, err error, e *Entry, timeout time.Duration) *mcp.CallToolResult {
	var (
		unavailable *upstream.UnavailableError
		lost        *upstream.LostError
		rpc         *upstream.RPCError
		stopped     *upstream.StoppedError
		atLimit     *upstream.LimitError
		resultLost  *upstream.ResultLostError
	)
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return toolError("Tool '%s' on server '%s' timed out after %v. The call was cancelled; the server stays available. Try again with a smaller request, or use another tool.", e.Tool, e.Server, timeout)
	case ctx.Err() != nil:
		return toolError("Tool '%s' on server '%s' was cancelled by the client.", e.Tool, e.Server)
	case errors.As(err, &stopped):
		return toolError("Tool '%s' on server '%s' was cancelled: %v. It may or may not have taken effect.", e.Tool, e.Server, stopped)
	case errors.As(err, &atLimit):
		return toolError("Tool '%s' on server '%s' was not called: the server is at its limit of %d client connections (max_clients), each client session having its own, and this client has none yet. Try again when another client has finished, or use another tool.", e.Tool, e.Server, atLimit.Max)
	case errors.As(err, &unavailable):
		return toolError("Tool '%s' on server '%s' could not be called: the server is not running (%v). mcpmux restarts it automatically; try again shortly, or use another tool.", e.Tool, e.Server, unavailable.Err)
	case errors.As(err, &lost):
		return toolError("Tool '%s' on server '%s' failed: the server stopped answering during the call: %v. mcpmux is restarting it; the call may or may not have taken effect, so check before repeating it.", e.Tool, e.Server, lost.Err)
	case errors.As(err, &resultLost):
		return toolError("Tool '%s' on server '%s' failed: the server closed the call's response stream before answering, and %s. The server stays available; the call may or may not have taken effect, so check before repeating it.", e.Tool, e.Server, resultLost.Reason)
	case errors.As(err, &rpc):
		return toolError("Tool '%s' on server '%s' was rejected by the server: %s (JSON-RPC error %d). Check the tool name and that the arguments match the tool's input schema.", e.Tool, e.Server, rpc.Message, rpc.Code)
	}
	return toolError("Tool '%s' on server '%s' failed: %v.", e.Tool, e.Server, err)
}

// maskResult hides the config's secrets in the text of an error result
// mcpmux made itself.
func (a *Aggregator) maskResult(res *mcp.CallToolResult) *mcp.CallToolResult {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			t.Text = a.mask.Mask(t.Text)
		}
	}
	return res
}

// toolError returns an error result with one text item.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}},
	}
}

// clientID identifies the client session for per-client connections, and
// makes sure they are closed when the session ends.
func (a *Aggregator) clientID(ss *mcp.ServerSession) upstream.ClientID {
	if ss == nil {
		return "none"
	}
	id := ss.ID()
	if id == "" {
		id = fmt.Sprintf("session-%p", ss)
	}
	if _, seen := a.watched.LoadOrStore(ss, struct{}{}); !seen {
		a.ends.on(ss, func() {
			a.watched.Delete(ss)
			a.log.Info("client session ended", "session", id)
			a.pool.ReleaseClient(upstream.ClientID(id))
		})
	}
	return upstream.ClientID(id)
}
