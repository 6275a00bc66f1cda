package aggregator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/rewrite"
	"github.com/mcpmux/mcpmux/tracing"
	"github.com/mcpmux/mcpmux/upstream"
)

// forward runs step 3 of the pipeline for a call routed to e: the call of
// e's server. Arguments are checked, the call runs under its timeout and
// the server's max_concurrency, is timed in metrics, and a failure
// becomes an isError result (with the config's secrets masked, as it may
// quote a child's stderr); a result over max_result_bytes is truncated.
// The outcome says how the call ended, and what it costs.
func (pl *pipeline) forward(ctx context.Context, c *toolCall, e *Entry) (*result, outcome) {
	srv := pl.pool.Get(e.Server)
	if srv == nil {
		return decoded(toolError("Tool '%s' on server '%s' is not available: the server is no longer configured. Use another tool.", e.Tool, e.Server)), failedAs(metrics.OutcomeUnavailable, e.Server, e.Tool, 0)
	}
	args, err := callArguments(c.args)
	if err != nil {
		return decoded(toolError("Tool '%s' on server '%s' was not called: %v. Pass the arguments as a JSON object matching the tool's input schema.", e.Tool, e.Server, err)), failedAs(metrics.OutcomeBadArgs, e.Server, e.Tool, 0)
	}
	settings := pl.settings()
	timeout := srv.Config().CallTimeout(e.Tool, settings.Timeout)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The server's request, under a span of its own whose context the
	// server gets in _meta: a server that traces continues the trace.
	cctx, down := tracing.StartClient(cctx, "tools/call", e.Tool, e.Server)
	defer down.End("", "")
	cp := upstream.CallParams{
		Request: pl.request(ctx, srv, c.session, c.runID),
		Params: &mcp.CallToolParams{
			Name:      e.Tool,
			Arguments: args,
			Meta:      tracing.Inject(cctx, withRefusals(forwardMeta(c.meta, c.runID), settings.Rules(), e)),
		},
		Progress:     progressTo(ctx, c),
		StreamClosed: closeClientStream(c.extra),
	}
	cp.MCPTask, cp.RunTask = pl.tasks.taskMode(c, e) // MCP tasks (mcptasks.go)
	cp.TasksExtension = requestTasksExtension(ctx)   // of 2026-07-28 (tasks2026.go)
	cp.ExtensionTool = e.extensionTasks
	start := time.Now()
	// In flight and timed from here until the server answered; the
	// outcome is counted by settle.
	running := pl.metrics.StartCall(e.Server, e.Tool)
	raw, err := srv.CallTool(cctx, cp)
	if next := pl.pool.Get(e.Server); errors.Is(err, upstream.ErrStopped) && next != nil && next != srv {
		// A reload replaced the server between the lookup and the call:
		// its new version takes the call.
		cp.Request = pl.request(ctx, next, c.session, c.runID)
		raw, err = next.CallTool(cctx, cp)
	}
	running.Returned()
	elapsed := time.Since(start).Round(time.Millisecond)
	if err != nil {
		f, detail := classify(ctx, cctx, err)
		down.Fail(f.outcome, err.Error())
		pl.log.Warn("tool call failed", "tool", e.Name, "task", c.runID, "session", sessionID(c.session), "error", err, "elapsed", elapsed)
		res := decoded(pl.maskResult(f.result(e, timeout, detail)))
		res.rpc = passedOn(err, pl.mask.Mask)
		return res, failedAs(f.outcome, e.Server, e.Tool, f.timeout(timeout))
	}
	res := &result{raw: raw}
	// The server answered: the call is billed.
	out := answered(resultOutcome(res.isError()), e.Server, e.Tool).charged(srv.Config(), e, "")
	traceResult(down, res)
	pl.log.Debug("tool call", "tool", e.Name, "task", c.runID, "session", sessionID(c.session), "elapsed", elapsed)
	if cfg := srv.Config(); cfg.OutputDir != "" {
		res = decoded(pl.linkOutputFiles(ctx, c.session, cfg, res.typed(), start.Add(-time.Second)))
	}
	// A result no longer than the limit cannot hold more payload than it
	// allows: only a longer one is decoded to be measured.
	limit := settings.MaxResultBytes
	if limit <= 0 {
		limit = config.DefaultMaxResultBytes
	}
	if res.size() > int(limit) {
		if capped, truncated := capResult(res.typed(), limit); truncated {
			pl.log.Warn("tool result truncated: over max_result_bytes", "tool", e.Name, "task", c.runID, "limit", limit.String())
			res = decoded(capped)
		}
	}
	return res, out
}

// progressTo returns the function that passes a server's progress
// notifications to the client, under the client's own token; nil if the
// client asked for no progress.
func progressTo(ctx context.Context, c *toolCall) func(context.Context, *mcp.ProgressNotificationParams) {
	token := c.meta["progressToken"]
	if token == nil || c.session == nil {
		return nil
	}
	ss := c.session
	augmented := len(c.mcpTask) > 0
	if pc := parkedFrom(ctx); pc != nil && !augmented {
		// A 2026-07-28 client's call, run detached from its requests
		// (mrtr.go): its progress goes to the request waiting on it now,
		// the retry once the first was answered with a question, under
		// that request's own token; while the call waits for the retry,
		// it is held for it.
		return func(_ context.Context, p *mcp.ProgressNotificationParams) {
			pc.notify(func(w *parkWaiter) {
				if w.token == nil {
					return // the request asked for no progress
				}
				_ = w.ss.NotifyProgress(w.ctx, &mcp.ProgressNotificationParams{
					Meta: p.Meta, ProgressToken: w.token, Progress: p.Progress, Total: p.Total, Message: p.Message,
				})
			})
		}
	}
	return func(_ context.Context, p *mcp.ProgressNotificationParams) {
		// The client request's context routes the notification to its
		// response stream. upstream holds the answer until the progress
		// sent before it has come through here (see upstream/order.go).
		// Once the request is over — answered, or cancelled by the client
		// — its progress stops, as the spec wants: the client has
		// forgotten the token, and over stdio it would come after the
		// answer. Except for a task-augmented call, whose token lasts as
		// long as the task it created: that progress goes out on its own.
		nctx := ctx
		if nctx.Err() != nil {
			if !augmented {
				return
			}
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
func closeClientStream(extra *mcp.RequestExtra) func(time.Duration) bool {
	if extra == nil || extra.CloseSSEStream == nil {
		return nil
	}
	resumable := extra.Header.Get("Mcp-Protocol-Version") >= "2025-11-25"
	return func(retry time.Duration) bool {
		extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: retry})
		return !resumable
	}
}

// callArguments checks that the client's arguments are a JSON object and
// forwards them as raw bytes. Absent or null arguments become {}, here
// only (upstream sends what it is given): TypeScript servers reject
// "arguments": null.
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

// maskResult hides the config's secrets in the text of an error result
// mcpmux made itself.
func (pl *pipeline) maskResult(res *mcp.CallToolResult) *mcp.CallToolResult {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			t.Text = pl.mask.Mask(t.Text)
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
