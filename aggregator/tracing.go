package aggregator

import (
	"context"
	"errors"
	"reflect"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/rewrite"
	"github.com/mcpmux/mcpmux/tracing"
)

// traceMiddleware starts the span of each client request of p's clients
// (package tracing), first in the chain, so that the wait for start-up is
// in it. With tracing off it costs one atomic load.
func (a *Aggregator) traceMiddleware(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if a.tracing.Load() == nil {
				return next(ctx, method, req)
			}
			return a.traced(ctx, p, method, req, next)
		}
	}
}

// traced runs a request under its span, named and described after the
// OpenTelemetry semantic conventions for MCP ({mcp.method.name} {target};
// mcp.*, gen_ai.* attributes) with mcpmux's own (mcpmux.profile,
// mcpmux.task; the pipeline adds mcpmux.server, mcpmux.outcome,
// mcpmux.rule, mcpmux.corrected_to).
func (a *Aggregator) traced(ctx context.Context, p *profile, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	var meta mcp.Meta
	if params := req.GetParams(); params != nil && !reflect.ValueOf(params).IsNil() {
		meta = params.GetMeta()
	}
	var target, tool, prompt, uri string
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r.Params != nil {
			target, tool = r.Params.Name, r.Params.Name
		}
	case *mcp.GetPromptRequest:
		if r.Params != nil {
			target, prompt = r.Params.Name, r.Params.Name
		}
	case *mcp.ReadResourceRequest:
		if r.Params != nil {
			uri = r.Params.URI
		}
	}
	name := method
	if target != "" {
		name += " " + target
	}
	extra := req.GetExtra()
	var header map[string][]string
	if extra != nil {
		header = extra.Header
	}
	ctx, span := a.tracing.StartRequest(ctx, name, meta, header)
	span.Set("mcp.method.name", method)
	span.Set("gen_ai.tool.name", tool)
	if tool != "" {
		span.Set("gen_ai.operation.name", "execute_tool")
	}
	span.Set("gen_ai.prompt.name", prompt)
	span.Set("mcp.resource.uri", uri)
	span.Set("mcpmux.profile", p.name)
	span.Set("mcpmux.task", a.runIDOf(meta, extra))
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		span.Set("mcp.session.id", ss.ID())
		if ip := ss.InitializeParams(); ip != nil {
			span.Set("mcp.protocol.version", ip.ProtocolVersion)
		}
	}
	if v, ok := meta[mcp.MetaKeyProtocolVersion].(string); ok {
		span.Set("mcp.protocol.version", v)
	}
	if header != nil {
		span.Set("network.transport", "tcp")
	} else {
		span.Set("network.transport", "pipe")
	}
	res, err := next(ctx, method, req)
	var errType, msg string
	if err != nil {
		errType, msg = "_OTHER", err.Error()
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			errType = strconv.FormatInt(werr.Code, 10)
			span.Set("rpc.response.status_code", errType)
		}
	}
	span.End(errType, msg)
	return res, err
}

// rulesBefore runs the rules that act before a call, in a span of their
// own when the call is traced.
func rulesBefore(ctx context.Context, rules *rewrite.Rules, rc *rewrite.Call, env *rewrite.Env) *mcp.CallToolResult {
	if !tracing.Recording(ctx) {
		return rules.Before(rc, env)
	}
	_, span := tracing.StartInternal(ctx, "mcpmux.rules.before")
	refusal := rules.Before(rc, env)
	if refusal != nil {
		span.Set("mcpmux.outcome", metrics.OutcomeRefused)
	}
	span.End("", "")
	return refusal
}

// traceResult marks span failed when res is an isError result, with the
// tool's text as its description.
func traceResult(span tracing.Span, res *result) {
	if span.On() && res.isError() {
		span.Fail("tool_error", rewrite.ResultText(res.typed()))
	}
}
