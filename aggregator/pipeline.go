package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/rewrite"
	"github.com/mcpmux/mcpmux/tracing"
	"github.com/mcpmux/mcpmux/upstream"
)

// The call pipeline.
//
// Every tool call runs through callTool, whatever its entry point: a
// client's tools/call (callMiddleware), mcpmux__call_tool (metaCallTool)
// and a rewrite rule's fallback (toolCall.env). Its steps, in the order
// they run and in the order this file holds them:
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
// (failure.go, passedOn). Each
// step notes what it decided on the call's journal record (c.rec), which
// clientCall writes when the client's call ends.

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
}

// newToolCall describes a client's tools/call request.
func (a *Aggregator) newToolCall(req *mcp.CallToolRequest) *toolCall {
	c := &toolCall{session: req.Session, extra: req.Extra}
	if req.Params != nil {
		c.name, c.args, c.meta = req.Params.Name, req.Params.Arguments, req.Params.Meta
	}
	c.meta, c.mcpTask = takeAugment(c.meta)
	c.runID = a.runIDOf(c.meta, c.extra)
	return c
}

// derive is a new call of the same caller, to another tool: what
// mcpmux__call_tool and fallbacks make.
func (c *toolCall) derive(name string, args json.RawMessage) *toolCall {
	d := *c
	d.name, d.args = name, args
	d.rec = c.rec.Derived()
	d.mcpTask = nil // mcpmux's own call, answered with a result: it runs a task-required tool itself
	return &d
}

// callMiddleware runs every tools/call of p's clients through the
// pipeline, listed names or not: the SDK would answer a name it has not
// registered with a JSON-RPC error before any handler runs.
func (a *Aggregator) callMiddleware(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				res := a.clientCall(ctx, p, r)
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
func (a *Aggregator) toolHandler(p *profile) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := a.clientCall(ctx, p, req)
		if err := res.wireError(); err != nil {
			return nil, err
		}
		return res.typed(), nil
	}
}

// callTool runs c through the pipeline of profile p.
func (a *Aggregator) callTool(ctx context.Context, p *profile, c *toolCall) *result {
	v := p.view.Load()
	if v.held[c.name] != nil && a.pins.stateChanged() {
		a.pins.resync() // mcpmux approve wrote the state file: apply it now
		v = p.view.Load()
	}
	// 1. Route.
	e, fix, answer := a.route(v, c)
	if answer == nil {
		answer = a.notListedTo(ctx, c, e)
	}
	if answer != nil {
		return decoded(answer)
	}
	c.rec.Routed(e.Server, fix.exposedName(e))
	if d := v.cat.drift[e.Name]; d != nil {
		c.rec.Drifted(d.Changed) // pin.on_change: warn
	}
	c.span.Set("mcpmux.server", e.Server)
	c.span.Set("mcpmux.corrected_to", fix.exposedName(e))
	if v.lazy {
		a.lazy.touch(c.session, e.Name)
	}
	// 2. Rules before.
	rules := a.current.Load().Rules()
	rc, env := a.ruleCall(p, c, e)
	if refusal := a.rulesBefore(ctx, rules, rc, env); refusal != nil {
		a.answered(c, e.Server, e.Tool, metrics.OutcomeRefused)
		return fix.annotate(decoded(refusal))
	}
	// 3. Run.
	res := a.run(ctx, p, c, e)
	if a.mcpTasks.taskCreated(p, c, e, res) || a.mcpTasks.extensionTaskCreated(ctx, p, c, e, res) {
		return res // a CreateTaskResult or task handle: what follows applies to the task's result (mcptasks.go, tasks2026.go)
	}
	// 4. Unknown-tool retry.
	res = a.retryElsewhere(ctx, p, c, e, res)
	// 5. Rules after: decoded only for rules that may act on it.
	if rules.Inspects(rc, res.isError()) {
		rctx, span := tracing.StartInternal(ctx, "mcpmux.rules.after")
		res = decoded(rules.After(rctx, rc, res.typed(), env))
		span.End("", "")
	}
	return fix.annotate(res)
}

// route finds the entry a call goes to. For a name the view does not list
// it returns, instead, the answer to the call (blacklisted, unknown,
// ambiguous), or the entry auto-correction chose with the correction to
// note on the result.
func (a *Aggregator) route(v *view, c *toolCall) (*Entry, *correction, *mcp.CallToolResult) {
	name := c.name
	if e := v.visible[name]; e != nil {
		return e, nil, nil
	}
	if !v.resolvable(name) {
		a.answered(c, "", "", metrics.OutcomeUnknown)
		return nil, nil, toolError("Unknown tool '%s': no server of this client has a tool of that name (the name has %d bytes, longer than any tool's). Check the names in the tool list and try again.", quoteName(name), len(name))
	}
	if e := v.hidden[name]; e != nil {
		return nil, nil, a.blacklisted(c, e)
	}
	if e := v.blacklistedName(name); e != nil {
		return nil, nil, a.blacklisted(c, e)
	}
	if d := v.held[name]; d != nil {
		return nil, nil, a.pins.quarantined(c, d)
	}
	server, known, tool, candidates := a.lookup(v, name)
	// A server of the profile that is not up lists no tools: a call naming
	// it is told so, not routed to, or called ambiguous between, the
	// servers that have a tool of that name.
	if res := a.notRunning(c, v, server, quoteName(name)); res != nil {
		return nil, nil, res
	}
	switch len(candidates) {
	case 1:
		e := candidates[0]
		a.log.Info("auto-corrected tool call", "session", sessionID(c.session), "requested", name, "chosen", e.Name)
		a.metrics.RuleHit(metrics.RuleCorrected, autoCorrectionRule)
		return e, &correction{server: server, known: known, tool: tool, chosen: e.Server}, nil
	case 0:
		if e := a.hiddenByTool(v, tool); e != nil {
			return nil, nil, a.blacklisted(c, e)
		}
		a.answered(c, "", "", metrics.OutcomeUnknown)
		msg := fmt.Sprintf("Unknown tool '%s': no server of this client has a tool of that name. It is possible that the server name and tool name were confused or mixed up; check the names in the tool list and try again.", quoteName(name))
		if near := closest(name, tool, v, 3); len(near) > 0 {
			msg += " Closest existing tools: " + strings.Join(near, ", ") + "."
		}
		return nil, nil, toolError("%s", msg)
	default:
		names := make([]string, len(candidates))
		for i, e := range candidates {
			names[i] = e.Name
		}
		a.log.Info("ambiguous tool call", "session", sessionID(c.session), "requested", name, "candidates", names)
		a.answered(c, "", "", metrics.OutcomeAmbiguous)
		return nil, nil, toolError("Tool '%s' not found as '%s', and several servers have a tool of that name: %s. Call one of these by its full name.", tool, name, strings.Join(names, ", "))
	}
}

// notListedTo answers a call of a tool its server does not list to the
// caller, for the capabilities the caller declared (server-everything
// lists trigger-url-elicitation only to a client with URL elicitation):
// the tool is as unknown to the caller as its tool list says, and the
// server, which mcpmux's shared connection declares everything to, must
// not run it. Nil when the caller may call e.
func (a *Aggregator) notListedTo(ctx context.Context, c *toolCall, e *Entry) *mcp.CallToolResult {
	if e.meta != nil || c.session == nil {
		return nil
	}
	f := sessionFeatures(c.session)
	srv := a.pool.Get(e.Server)
	if f.ListsAll() || srv == nil {
		return nil
	}
	names, err := srv.ToolsFor(ctx, f)
	if err != nil || names == nil || names[e.Tool] {
		return nil
	}
	a.metrics.CallAnswered("", "", metrics.OutcomeUnknown)
	return toolError("Unknown tool '%s': tool '%s' of server '%s' is not available to this client, as the server does not offer it to a client with the capabilities this one declared (%s). Check the names in the tool list.", quoteName(c.name), e.Tool, e.Server, f)
}

// notRunning answers a call of a name that no server lists because its
// server part is the prefix of a server of the profile that is not up
// (needs login, failed, still starting): such a server lists no tools, and
// the caller is told why and what to do rather than that the tool does not
// exist. Nil when the server part names no such server.
func (a *Aggregator) notRunning(c *toolCall, v *view, prefix, name string) *mcp.CallToolResult {
	if prefix == "" {
		return nil
	}
	for _, s := range a.pool.Servers() {
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
			return nil // up: the tool is unknown to it
		}
		a.answered(c, s.Name(), "", metrics.OutcomeUnavailable)
		return toolError("Tool '%s' cannot be called yet: server '%s' lists no tools because %s. Its tools are listed once it is up.", name, s.Name(), why)
	}
	return nil
}

// blacklisted answers a call of a tool the profile's blacklist hides.
func (a *Aggregator) blacklisted(c *toolCall, e *Entry) *mcp.CallToolResult {
	a.answered(c, e.Server, e.Tool, metrics.OutcomeRefused)
	a.metrics.RuleHit(metrics.RuleRefused, blacklistRule)
	c.rec.Routed(e.Server, "")
	c.rec.Hit(blacklistRule, rewrite.ActionRefused)
	return toolError("Tool '%s' (tool '%s' of server '%s') is disabled for this client by the tool blacklist and cannot be called. Use another tool.", c.name, e.Tool, e.Server)
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
// environment they run in: the aggregator's log and metrics, and
// fallbacks, which are new calls of the same caller through this pipeline.
func (a *Aggregator) ruleCall(p *profile, c *toolCall, e *Entry) (*rewrite.Call, *rewrite.Env) {
	rc := &rewrite.Call{Name: e.Name, Server: e.Server, Tool: e.Tool, Args: c.args, Session: sessionID(c.session), RunID: c.runID}
	onHit := a.RuleHit
	if c.rec != nil || c.span.On() {
		onHit = func(action, rule string) {
			a.RuleHit(action, rule)
			c.rec.Hit(rule, action)
			c.span.Set("mcpmux.rule", rule)
			c.span.Event("mcpmux.rule", "action", action)
		}
	}
	env := &rewrite.Env{
		Log:   a.log,
		Mask:  a.mask,
		OnHit: onHit,
		Call: func(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
			ctx, span := tracing.StartInternal(ctx, "mcpmux.fallback")
			d := c.derive(name, args)
			d.span = span
			span.Set("gen_ai.tool.name", name)
			res := a.callTool(ctx, p, d)
			traceResult(span, res)
			span.End("", "")
			return res.typed()
		},
	}
	return rc, env
}

// run answers a call routed to e: a meta tool itself, a replay from its
// journal, any other tool's server (forward).
func (a *Aggregator) run(ctx context.Context, p *profile, c *toolCall, e *Entry) *result {
	if e.meta != nil {
		return a.meta.call(ctx, p, c, e)
	}
	if res := a.replayed(c, e); res != nil {
		return res
	}
	told := p.lists.generation()
	res := a.forward(ctx, c, e)
	if !a.stateless {
		p.lists.await(ctx, c.session, told)
	}
	if c.rec != nil {
		c.rec.Answered(e.Name, c.args, res.journaled(), false)
	}
	return res
}

// retryElsewhere hands a call to the one other server of the profile that
// has the tool, when e's server answered that it does not know it (its
// list was out of date, or it lists tools it cannot run). The rules that
// act before a call apply to the new server's call too.
func (a *Aggregator) retryElsewhere(ctx context.Context, p *profile, c *toolCall, e *Entry, res *result) *result {
	if e.meta != nil || !res.isError() || !strings.Contains(rewrite.ResultText(res.typed()), "Unknown tool") {
		return res
	}
	alt := withoutServer(p.view.Load().byTool[e.Tool], e.Server)
	if len(alt) != 1 {
		return res
	}
	rc, env := a.ruleCall(p, c, alt[0])
	if refused := a.current.Load().Rules().Before(rc, env); refused != nil {
		a.answered(c, alt[0].Server, alt[0].Tool, metrics.OutcomeRefused)
		return decoded(refused)
	}
	a.log.Info("auto-corrected tool call after the server did not know the tool", "session", sessionID(c.session), "requested", e.Name, "chosen", alt[0].Name)
	a.metrics.RuleHit(metrics.RuleCorrected, autoCorrectionRule)
	res2 := a.run(ctx, p, c, alt[0])
	if res2.isError() {
		return res
	}
	c.rec.Routed(alt[0].Server, alt[0].Name)
	rewrite.PrependNote(res2.typed(), fmt.Sprintf("[Auto-corrected: Server '%s' does not know tool '%s', but it was found only in server '%s', so automatically used '%s' instead] ", e.Server, e.Tool, alt[0].Server, alt[0].Server))
	return res2
}
