package aggregator

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/rewrite"
)

// handle runs the whole pipeline for a call routed to e (its name already
// resolved): the rewrite rules before it, the upstream call, and the rules
// after it. Rules come from the current settings, so an edit of
// mcpmux.yaml applies to the next call.
func (a *Aggregator) handle(ctx context.Context, p *profile, req *mcp.CallToolRequest, e *Entry) *mcp.CallToolResult {
	rules := a.current.Load().Rules()
	if rules.Len() == 0 {
		return a.redirecting(ctx, p, req, e)
	}
	c, env := a.rewriteCall(p, req, e)
	if res := rules.Before(c, env); res != nil {
		return res
	}
	return rules.After(ctx, c, a.redirecting(ctx, p, req, e), env)
}

// refused returns the refusal of a call routed to e by the rules that act
// before a call, or nil.
func (a *Aggregator) refused(p *profile, req *mcp.CallToolRequest, e *Entry) *mcp.CallToolResult {
	rules := a.current.Load().Rules()
	if rules.Len() == 0 {
		return nil
	}
	c, env := a.rewriteCall(p, req, e)
	return rules.Before(c, env)
}

// rewriteCall describes a call routed to e for the rewrite rules, with
// the environment they run in: the aggregator's log, and fallbacks called
// as the same client calling another tool of its profile.
func (a *Aggregator) rewriteCall(p *profile, req *mcp.CallToolRequest, e *Entry) (*rewrite.Call, *rewrite.Env) {
	c := &rewrite.Call{
		Name:    e.Name,
		Server:  e.Server,
		Tool:    e.Tool,
		Args:    req.Params.Arguments,
		Session: sessionID(req.Session),
		Task:    a.taskOf(req.Params.Meta, req.Extra),
	}
	return c, &rewrite.Env{Log: a.log, Call: a.fallbackCaller(p, req), OnHit: a.RuleHit}
}

// fallbackCaller calls a rule's fallback tool like a new call of the
// client: by exposed name, through the profile's view (so the blacklist,
// auto-correction and refuse rules apply), with the request's _meta (task
// and progress token).
func (a *Aggregator) fallbackCaller(p *profile, req *mcp.CallToolRequest) func(context.Context, string, json.RawMessage) *mcp.CallToolResult {
	return func(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
		freq := &mcp.CallToolRequest{
			Session: req.Session,
			Extra:   req.Extra,
			Params:  &mcp.CallToolParamsRaw{Meta: req.Params.Meta, Name: name, Arguments: args},
		}
		v := p.view.Load()
		if e := v.visible[name]; e != nil {
			return a.handle(ctx, p, freq, e)
		}
		return a.resolve(ctx, p, v, freq)
	}
}
