package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/journal/replay"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/rewrite"
	"github.com/mcpmux/mcpmux/tracing"
	"github.com/mcpmux/mcpmux/upstream"
)

// The call pipeline.
//
// Every tool call runs through pipeline.call, whatever its entry point: a
// client's tools/call (callMiddleware, clientCall), mcpmux__call_tool
// (metaCallTool) and a rewrite rule's fallback (ruleCall). Its steps, in
// the order they run and in the order this file holds them:
//
//  1. route: the name to the entry of the profile's view; a name the view
//     does not list is blacklisted, auto-corrected, ambiguous or unknown
//  2. rules before: a rewrite rule may refuse the call
//  3. run: a meta tool answers itself; a replay answers from the journal
//     (journal.go); any other call goes to its server (forward.go:
//     arguments, timeout, max_concurrency, metrics, errors as results,
//     masking, max_result_bytes)
//  4. unknown-tool retry: a server that says it does not know the tool
//     hands the call to the one other server that has it
//  5. rules after: redact, fallback (a fallback is a new call through this
//     pipeline)
//
// It always returns a result: what goes wrong is an isError result whose
// text says what happened and what to do, never a JSON-RPC error of
// mcpmux's. A server's JSON-RPC error that means something to the client
// (such as -32042, open this URL first) reaches it as that error
// (failure.go, passedOn). Each step returns its result and what it
// decided, an outcome, which settle records (outcome.go): the metrics,
// the span and the journal record (c.rec) hear of a call from there only.

// pipeline runs tool calls: routing, the rules, forwarding to a server
// (forward.go), replay, the unknown-tool retry, result capping. It is
// apart from Aggregator, which builds the catalog and keeps client
// sessions, and is given what it needs by New, as fields: the pool, the
// current settings, metrics and journals, and a few funcs for what
// belongs to others (client sessions, meta tools, pins, MCP tasks). It
// holds no *Aggregator, so that what a call depends on is all in sight
// here.
type pipeline struct {
	log       *slog.Logger
	mask      *logs.Masker // secrets of the config, hidden in what clients see
	pool      *upstream.Pool
	metrics   *metrics.Metrics
	stateless bool // see Options.Stateless: no list_changed to wait for
	// settings are the current settings: timeouts, rules,
	// max_result_bytes.
	settings func() *config.Settings
	// journal writes the client's calls, frozen is the replayed journal
	// appended to with replay.miss: record; replay answers from it (nil
	// without replay). See journal.go.
	journal, frozen *journal.Journal
	replay          func() *replay.Replay
	// tasks are the MCP tasks of clients (mcptasks.go): how a call is
	// sent, and the task an answer creates.
	tasks *mcpTasks
	// request and runIDOf are request.go's: the upstream request made for
	// a client's request, and the run it belongs to.
	request func(ctx context.Context, srv *upstream.Server, ss *mcp.ServerSession, runID string) upstream.Request
	runIDOf func(meta mcp.Meta, extra *mcp.RequestExtra) string
	// applyApprovals applies what mcpmux approve wrote to tool_pinning's
	// state since it was read, if anything (pinning.go).
	applyApprovals func()
	// runMeta runs a meta tool (meta.go); touchExposed marks a tool of a
	// lazy catalog as used (lazy.go).
	runMeta      func(ctx context.Context, p *profile, c *toolCall, e *Entry) *result
	touchExposed func(ss *mcp.ServerSession, name string)
	// sessionTools are the tools of v a client may see (lists.go), which
	// its journal line records.
	sessionTools func(ctx context.Context, v *view, ss *mcp.ServerSession) []*Entry
	// linkOutputFiles serves the files a result of an output_dir server
	// names to the caller (outputfiles.go).
	linkOutputFiles func(ctx context.Context, ss *mcp.ServerSession, cfg *config.Server, res *mcp.CallToolResult, since time.Time) *mcp.CallToolResult
}

// toolCall is one tool call on its way through the pipeline.
type toolCall struct {
	name    string          // the name called
	args    json.RawMessage // the arguments as the caller sent them
	meta    mcp.Meta        // the request's _meta
	session *mcp.ServerSession
	extra   *mcp.RequestExtra
	runID   string        // the caller's evaluation task id (runIDOf)
	rec     *journal.Call // the journal's record of the client's call; nil without a journal
	// mcpTask is the client's params.task (MCP tasks, mcptasks.go): the
	// call is task-augmented.
	mcpTask json.RawMessage
	// span is the span of the client's request (or of the fallback
	// that made this call), which the pipeline's steps describe; zero
	// without tracing.
	span tracing.Span
	// ends says how the call ends (settle): a client's call, a fallback's,
	// or one its caller's call ends.
	ends ending
}

// newToolCall describes a client's tools/call request.
func (pl *pipeline) newToolCall(req *mcp.CallToolRequest) *toolCall {
	c := &toolCall{session: req.Session, extra: req.Extra, ends: endsClientCall}
	if req.Params != nil {
		c.name, c.args, c.meta = req.Params.Name, req.Params.Arguments, req.Params.Meta
	}
	c.meta, c.mcpTask = takeAugment(c.meta)
	c.runID = pl.runIDOf(c.meta, c.extra)
	return c
}

// derive is a new call of the same caller, to another tool: what
// mcpmux__call_tool and fallbacks make.
func (c *toolCall) derive(name string, args json.RawMessage) *toolCall {
	d := *c
	d.name, d.args = name, args
	d.rec = c.rec.Derived()
	d.mcpTask = nil // mcpmux's own call, answered with a result: it runs a task-required tool itself
	d.ends = endsWithCaller
	return &d
}

// callMiddleware runs every tools/call of p's clients through the
// pipeline, listed names or not: the SDK would answer a name it has not
// registered with a JSON-RPC error before any handler runs.
func (pl *pipeline) callMiddleware(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				res := pl.clientCall(ctx, p, r)
				if err := res.wireError(); err != nil {
					return nil, err
				}
				return res.wire(), nil
			}
			return next(ctx, method, req)
		}
	}
}

// toolHandler is the handler tools are registered with. callMiddleware
// answers every tools/call before the SDK would call it; should a call
// reach it anyway, it takes the same pipeline.
func (pl *pipeline) toolHandler(p *profile) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := pl.clientCall(ctx, p, req)
		if err := res.wireError(); err != nil {
			return nil, err
		}
		return res.typed(), nil
	}
}

// clientCall runs a client's tools/call through the pipeline; its journal
// line is written when it ends (settle).
func (pl *pipeline) clientCall(ctx context.Context, p *profile, req *mcp.CallToolRequest) *result {
	c := pl.newToolCall(req)
	c.span = tracing.FromContext(ctx)
	if pl.journal.On() || pl.frozen.On() {
		c.rec = pl.journal.BeginFrozen(journal.Start{
			Task: c.runID, Session: sessionID(c.session), Profile: p.name, Client: clientOf(c.session),
			Tool: c.name, Arguments: c.args,
			Catalog: func() []journal.Server {
				v := p.view.Load()
				return catalogOf(v, pl.sessionTools(ctx, v, c.session))
			},
		}, pl.frozen)
	}
	return pl.call(ctx, p, c)
}

// call runs c through the pipeline of profile p: the one entry point of
// every tool call, and the one place its outcome is settled.
func (pl *pipeline) call(ctx context.Context, p *profile, c *toolCall) *result {
	res := pl.steps(ctx, p, c)
	pl.settle(ctx, c, outcome{}, res)
	return res
}

// steps are the pipeline's, in order; each step's outcome is settled as
// the step ends.
func (pl *pipeline) steps(ctx context.Context, p *profile, c *toolCall) *result {
	v := p.view.Load()
	if v.held[c.name] != nil {
		pl.applyApprovals() // mcpmux approve may have released the tool
		v = p.view.Load()
	}
	// 1. Route.
	e, fix, answer, out := pl.route(ctx, v, c)
	pl.settle(ctx, c, out, nil)
	if answer != nil {
		return decoded(answer)
	}
	if v.lazy {
		pl.touchExposed(c.session, e.Name)
	}
	// 2. Rules before.
	rules := pl.settings().Rules()
	rc, env := pl.ruleCall(ctx, p, c, e)
	if refusal := rulesBefore(ctx, rules, rc, env); refusal != nil {
		pl.settle(ctx, c, answered(metrics.OutcomeRefused, e.Server, e.Tool), nil)
		return fix.annotate(decoded(refusal))
	}
	// 3. Run.
	res, out := pl.run(ctx, p, c, e)
	pl.settle(ctx, c, out, nil)
	if pl.tasks.taskCreated(p, c, e, res) || pl.tasks.extensionTaskCreated(ctx, p, c, e, res) {
		return res // a CreateTaskResult or task handle: what follows applies to the task's result (mcptasks.go, tasks2026.go)
	}
	// 4. Unknown-tool retry.
	res, out = pl.retryElsewhere(ctx, p, c, e, res)
	pl.settle(ctx, c, out, nil)
	// 5. Rules after: decoded only for rules that may act on it.
	if rules.Inspects(rc, res.isError()) {
		rctx, span := tracing.StartInternal(ctx, "mcpmux.rules.after")
		res = decoded(rules.After(rctx, rc, res.typed(), env))
		span.End("", "")
	}
	return fix.annotate(res)
}

// route finds the entry a call goes to, with the outcome to settle: where
// it went. For a name the view does not list it returns, instead, the
// answer to the call (blacklisted, quarantined, unknown, ambiguous, not
// listed to the caller) and its outcome, or the entry auto-correction
// chose with the correction to note on the result.
func (pl *pipeline) route(ctx context.Context, v *view, c *toolCall) (*Entry, *correction, *mcp.CallToolResult, outcome) {
	e, fix, answer, out := pl.resolve(v, c)
	if answer != nil {
		return nil, nil, answer, out
	}
	if answer, notListed := pl.notListedTo(ctx, c, e); answer != nil {
		notListed.corrected = out.corrected // auto-correction chose e, and counts
		return nil, nil, answer, notListed
	}
	out.route = &routing{server: e.Server, correctedTo: fix.exposedName(e)}
	if d := v.cat.drift[e.Name]; d != nil {
		out.route.drift = d.Changed // pin.on_change: warn
	}
	return e, fix, nil, out
}

// resolve finds the entry of the name called, as route does, before
// notListedTo looks at the caller.
func (pl *pipeline) resolve(v *view, c *toolCall) (*Entry, *correction, *mcp.CallToolResult, outcome) {
	name := c.name
	if e := v.visible[name]; e != nil {
		return e, nil, nil, outcome{}
	}
	if !v.resolvable(name) {
		return nil, nil, toolError("Unknown tool '%s': no server of this client has a tool of that name (the name has %d bytes, longer than any tool's). Check the names in the tool list and try again.", quoteName(name), len(name)), answered(metrics.OutcomeUnknown, "", "")
	}
	if e := v.hidden[name]; e != nil {
		return blacklisted(c, e)
	}
	if e := v.blacklistedName(name); e != nil {
		return blacklisted(c, e)
	}
	if d := v.held[name]; d != nil {
		return quarantined(c, d)
	}
	server, known, tool, candidates := lookup(v, name)
	// A server of the profile that is not up lists no tools: a call naming
	// it is told so, not routed to, or called ambiguous between, the
	// servers that have a tool of that name.
	if res, out := pl.notRunning(v, server, quoteName(name)); res != nil {
		return nil, nil, res, out
	}
	switch len(candidates) {
	case 1:
		e := candidates[0]
		pl.log.Info("auto-corrected tool call", "session", sessionID(c.session), "requested", name, "chosen", e.Name)
		return e, &correction{server: server, known: known, tool: tool, chosen: e.Server}, nil, outcome{corrected: true}
	case 0:
		if e := hiddenByTool(v, tool); e != nil {
			return blacklisted(c, e)
		}
		msg := fmt.Sprintf("Unknown tool '%s': no server of this client has a tool of that name. It is possible that the server name and tool name were confused or mixed up; check the names in the tool list and try again.", quoteName(name))
		if near := closest(name, tool, v, 3); len(near) > 0 {
			msg += " Closest existing tools: " + strings.Join(near, ", ") + "."
		}
		return nil, nil, toolError("%s", msg), answered(metrics.OutcomeUnknown, "", "")
	default:
		names := make([]string, len(candidates))
		for i, e := range candidates {
			names[i] = e.Name
		}
		pl.log.Info("ambiguous tool call", "session", sessionID(c.session), "requested", name, "candidates", names)
		return nil, nil, toolError("Tool '%s' not found as '%s', and several servers have a tool of that name: %s. Call one of these by its full name.", tool, name, strings.Join(names, ", ")), answered(metrics.OutcomeAmbiguous, "", "")
	}
}

// notListedTo answers a call of a tool its server does not list to the
// caller, for the capabilities the caller declared (server-everything
// lists trigger-url-elicitation only to a client with URL elicitation):
// the tool is as unknown to the caller as its tool list says, and the
// server, which mcpmux's shared connection declares everything to, must
// not run it. Nil when the caller may call e.
func (pl *pipeline) notListedTo(ctx context.Context, c *toolCall, e *Entry) (*mcp.CallToolResult, outcome) {
	if e.meta != nil || c.session == nil {
		return nil, outcome{}
	}
	f := sessionFeatures(c.session)
	srv := pl.pool.Get(e.Server)
	if f.ListsAll() || srv == nil {
		return nil, outcome{}
	}
	names, err := srv.ToolsFor(ctx, f)
	if err != nil || names == nil || names[e.Tool] {
		return nil, outcome{}
	}
	return toolError("Unknown tool '%s': tool '%s' of server '%s' is not available to this client, as the server does not offer it to a client with the capabilities this one declared (%s). Check the names in the tool list.", quoteName(c.name), e.Tool, e.Server, f), answered(metrics.OutcomeUnknown, "", "")
}

// notRunning answers a call of a name that no server lists because its
// server part is the prefix of a server of the profile that is not up
// (needs login, failed, still starting): such a server lists no tools, and
// the caller is told why and what to do rather than that the tool does not
// exist. Nil when the server part names no such server.
func (pl *pipeline) notRunning(v *view, prefix, name string) (*mcp.CallToolResult, outcome) {
	if prefix == "" {
		return nil, outcome{}
	}
	for _, s := range pl.pool.Servers() {
		if s.Config().NamePrefix() != prefix || !v.hasServer(s.Name()) {
			continue
		}
		st := s.Status()
		var why string
		switch st.State {
		case upstream.StateNeedsLogin:
			why = fmt.Sprintf("the server %s, where mcpmux runs, then try again", st.Error)
		case upstream.StateStarting:
			why = "the server is still starting; try again shortly"
		case upstream.StateFailed, upstream.StateRestarting:
			state := string(st.State)
			if st.Error != "" {
				state += ": " + st.Error
			}
			why = fmt.Sprintf("the server is not running (%s); mcpmux restarts it automatically, so try again shortly, or use another tool", state)
		default:
			return nil, outcome{} // up: the tool is unknown to it
		}
		return toolError("Tool '%s' cannot be called yet: server '%s' lists no tools because %s. Its tools are listed once it is up.", name, s.Name(), why), answered(metrics.OutcomeUnavailable, s.Name(), "")
	}
	return nil, outcome{}
}

// blacklisted answers a call of a tool the profile's blacklist hides: a
// refusal by the blacklist's rule, routed to no server but noted as e's
// on the journal line.
func blacklisted(c *toolCall, e *Entry) (*Entry, *correction, *mcp.CallToolResult, outcome) {
	out := answered(metrics.OutcomeRefused, e.Server, e.Tool)
	out.route, out.hit = &routing{server: e.Server}, ruleHit{blacklistRule, rewrite.ActionRefused}
	return nil, nil, toolError("Tool '%s' (tool '%s' of server '%s') is disabled for this client by the tool blacklist and cannot be called. Use another tool.", c.name, e.Tool, e.Server), out
}

// quarantined answers a call of a tool hidden because it drifted (pin,
// tool_pinning: pinning.go): a refusal by the rule that pinned it.
func quarantined(c *toolCall, d *Drift) (*Entry, *correction, *mcp.CallToolResult, outcome) {
	out := answered(metrics.OutcomeRefused, d.Server, d.Tool)
	out.route, out.hit = &routing{server: d.Server, drift: d.Changed}, ruleHit{d.By, rewrite.ActionRefused}
	why := fmt.Sprintf("its definition changed since it was pinned (%s changed), and mcpmux.yaml's pin refuses a changed tool", d.Changed)
	if d.By == toolPinningRule {
		why = fmt.Sprintf("its definition changed since it was first trusted (%s changed), and it is quarantined until an operator approves it (mcpmux approve %s %s)", d.Changed, d.Server, d.Tool)
	}
	return nil, nil, toolError("Tool '%s' (tool '%s' of server '%s') was not called: %s. Use another tool. What changed:\n%s", c.name, d.Tool, d.Server, why, d.Diff), out
}

// correction is what auto-correction changed about a call.
type correction struct {
	server string // the server part of the name called; "" for a bare name
	known  bool   // whether that server is one of the profile's
	tool   string // the tool part
	chosen string // the server the call went to
}

// exposedName is the name auto-correction chose, e's; "" for a nil
// correction (the name called was e's).
func (fix *correction) exposedName(e *Entry) string {
	if fix == nil {
		return ""
	}
	return e.Name
}

// annotate puts the correction's note in front of the result; the wording
// for an unknown server is the seed's, which agents already know. A nil
// correction leaves r as it is.
func (fix *correction) annotate(r *result) *result {
	if fix == nil {
		return r
	}
	res := r.typed()
	var what string
	switch {
	case fix.server == "":
		what = fmt.Sprintf("Tool '%s' was called without a server name", fix.tool)
	case fix.known:
		what = fmt.Sprintf("Server '%s' has no tool '%s'", fix.server, fix.tool)
	default:
		what = fmt.Sprintf("Server '%s' not found", fix.server)
	}
	note := fmt.Sprintf("[Auto-corrected: %s, but tool '%s' was found only in server '%s', so automatically used '%s' instead] ", what, fix.tool, fix.chosen, fix.chosen)
	if res.IsError {
		note = fmt.Sprintf("[Auto-corrected: %s, but tool '%s' was found only in server '%s', attempted auto-correction but still failed] ", what, fix.tool, fix.chosen)
	}
	rewrite.PrependNote(res, note)
	return r
}

// ruleCall describes a call routed to e for the rewrite rules, with the
// environment they run in: the pipeline's log, settle for their hits, and
// fallbacks, which are new calls of the same caller through this pipeline.
//
// A rule acts within a step, not as one: each of its actions is settled
// as it happens (OnHit), so that the journal has them in the rules' order.
// ctx is the call's, which settle gets (a fallback's call runs under
// the context the rule gives it).
func (pl *pipeline) ruleCall(ctx context.Context, p *profile, c *toolCall, e *Entry) (*rewrite.Call, *rewrite.Env) {
	rc := &rewrite.Call{Name: e.Name, Server: e.Server, Tool: e.Tool, Args: c.args, Session: sessionID(c.session), RunID: c.runID}
	env := &rewrite.Env{
		Log:  pl.log,
		Mask: pl.mask,
		OnHit: func(action, rule string) {
			pl.settle(ctx, c, outcome{hit: ruleHit{rule, action}}, nil)
		},
		Call: func(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
			ctx, span := tracing.StartInternal(ctx, "mcpmux.fallback")
			d := c.derive(name, args)
			d.span, d.ends = span, endsFallback // settle marks and ends the span
			span.Set("gen_ai.tool.name", name)
			return pl.call(ctx, p, d).typed()
		},
	}
	return rc, env
}

// run answers a call routed to e: a meta tool itself (which counts its
// call: metaTools.call), a replay from its journal, any other tool's server
// (forward). The outcome carries the answer for the journal, encoded as
// it is now: later steps may change the result.
func (pl *pipeline) run(ctx context.Context, p *profile, c *toolCall, e *Entry) (*result, outcome) {
	if e.meta != nil {
		return pl.runMeta(ctx, p, c, e), outcome{}
	}
	if res, out := pl.replayed(c, e); res != nil {
		return res, out
	}
	told := p.lists.generation()
	res, out := pl.forward(ctx, c, e)
	if !pl.stateless {
		p.lists.await(ctx, c.session, told)
	}
	if c.rec != nil {
		out.answer = &answer{tool: e.Name, args: c.args, result: res.journaled()}
	}
	return res, out
}

// retryElsewhere hands a call to the one other server of the profile that
// has the tool, when e's server answered that it does not know it (its
// list was out of date, or it lists tools it cannot run). The rules that
// act before a call apply to the new server's call too. The outcome is
// the new server's call's, routed there if it answered with a result
// (which the caller then gets); the zero outcome when there was no retry.
func (pl *pipeline) retryElsewhere(ctx context.Context, p *profile, c *toolCall, e *Entry, res *result) (*result, outcome) {
	if e.meta != nil || !res.isError() || !strings.Contains(rewrite.ResultText(res.typed()), "Unknown tool") {
		return res, outcome{}
	}
	alt := withoutServer(p.view.Load().byTool[e.Tool], e.Server)
	if len(alt) != 1 {
		return res, outcome{}
	}
	rc, env := pl.ruleCall(ctx, p, c, alt[0])
	if refused := pl.settings().Rules().Before(rc, env); refused != nil {
		return decoded(refused), answered(metrics.OutcomeRefused, alt[0].Server, alt[0].Tool)
	}
	pl.log.Info("auto-corrected tool call after the server did not know the tool", "session", sessionID(c.session), "requested", e.Name, "chosen", alt[0].Name)
	res2, out := pl.run(ctx, p, c, alt[0])
	out.corrected = true
	if res2.isError() {
		return res, out
	}
	out.route = &routing{server: alt[0].Server, correctedTo: alt[0].Name}
	rewrite.PrependNote(res2.typed(), fmt.Sprintf("[Auto-corrected: Server '%s' does not know tool '%s', but it was found only in server '%s', so automatically used '%s' instead] ", e.Server, e.Tool, alt[0].Server, alt[0].Server))
	return res2, out
}
