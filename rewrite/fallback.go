package rewrite

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fallbackKind is the rule that calls the fallback tool when a matching
// tool failed with text containing on_error.
var fallbackKind = &kind{
	name: "fallback",
	set: func(s *Spec) []string {
		var f []string
		if s.OnError != "" {
			f = append(f, "on_error")
		}
		if s.Fallback != nil {
			f = append(f, "fallback")
		}
		return f
	},
	compile: compileFallback,
}

func compileFallback(r *Rules, s *Spec, tools toolSet) error {
	if strings.TrimSpace(s.OnError) == "" {
		return &FieldError{Field: "on_error", Err: fmt.Errorf("missing: fallback needs on_error, the text of the failures it handles (e.g. \"unhandled errors\")")}
	}
	if s.Fallback == nil {
		return &FieldError{Field: "fallback", Err: fmt.Errorf("missing: on_error needs fallback: {tool: NAME, args: {...}}")}
	}
	if strings.TrimSpace(s.Fallback.Tool) == "" {
		return &FieldError{Field: "fallback.tool", Err: fmt.Errorf("missing: name the tool to call instead, by its exposed name (e.g. fetch__fetch)")}
	}
	args, err := compileArgs(s.Fallback.Args)
	if err != nil {
		return err
	}
	r.after = append(r.after, &fallback{name: s.Name, tools: tools, onError: strings.ToLower(s.OnError), tool: s.Fallback.Tool, args: args})
	return nil
}

// fallback calls another tool when a matching tool failed (an isError
// result, which is also what a transport error or timeout becomes) with
// text containing onError. The client gets the fallback's result with a
// note, or, if the fallback fails too, the original error.
type fallback struct {
	name    string
	tools   toolSet
	onError string // lower case; matched case-insensitively
	tool    string
	args    *argsTemplate
}

type noFallbackKey struct{}

// withoutFallback marks a context whose calls are themselves fallbacks:
// their failures are not handed to another fallback, so rules cannot loop.
func withoutFallback(ctx context.Context) context.Context {
	return context.WithValue(ctx, noFallbackKey{}, true)
}

func (f *fallback) inspects(c *Call, isError bool) bool { return isError && f.tools.match(c) }

func (f *fallback) after(ctx context.Context, c *Call, res *mcp.CallToolResult, env *Env) *mcp.CallToolResult {
	if !res.IsError || env == nil || env.Call == nil || ctx.Err() != nil || ctx.Value(noFallbackKey{}) != nil {
		return res
	}
	if !f.tools.match(c) || !strings.Contains(strings.ToLower(ResultText(res)), f.onError) {
		return res
	}
	decoded, _ := c.args()
	argsMap, _ := decoded.(map[string]any)
	args, err := f.args.render(argsMap)
	if err != nil {
		// Not a hit: the rule could not act on this call.
		env.logger().Warn("rewrite fallback skipped", "rule", f.name, "tool", c.Name, "fallback", f.tool, "session", c.Session, "task", c.RunID, "error", err)
		return res
	}
	res2 := env.Call(withoutFallback(ctx), f.tool, args)
	if res2 == nil || res2.IsError {
		text := ""
		if res2 != nil {
			// Masked before it is cut: cut first, a secret across the cut
			// would show its first characters in the log.
			text = env.Mask.Mask(ResultText(res2))
			if len(text) > 300 {
				text = strings.ToValidUTF8(text[:300], "") + "..."
			}
		}
		record(env, f.name, ActionFallback, c, "fallback", f.tool, "outcome", "failed", "error", text)
		return res
	}
	record(env, f.name, ActionFallback, c, "fallback", f.tool, "outcome", "used")
	PrependNote(res2, fmt.Sprintf("[Fallback: tool '%s' failed (%s), so rule '%s' called '%s' instead] ", c.Name, f.onError, f.name, f.tool))
	return res2
}
