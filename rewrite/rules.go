package rewrite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FieldError is a problem with one field of a rule; Field is its path in
// mcpmux.yaml, e.g. "rewrite.1.fallback.tool".
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %v", e.Field, e.Err) }
func (e *FieldError) Unwrap() error { return e.Err }

// beforeRule may answer a call before it reaches the server.
type beforeRule interface {
	before(c *Call, env *Env) *mcp.CallToolResult
}

// afterRule may change the result of a call.
type afterRule interface {
	after(ctx context.Context, c *Call, res *mcp.CallToolResult, env *Env) *mcp.CallToolResult
	// inspects reports whether the rule may act on the result of c, which
	// is an error result or not, without looking inside it.
	inspects(c *Call, isError bool) bool
}

var (
	_ beforeRule = (*refuse)(nil)
	_ afterRule  = (*redact)(nil)
	_ afterRule  = (*fallback)(nil)
)

// Rules are compiled rewrite rules. A nil *Rules has none.
type Rules struct {
	before []beforeRule
	after  []afterRule
}

// Compile checks and compiles rule specs, in order. A problem is a
// *FieldError naming the field as "rewrite.N.field" (N counts from 0).
func Compile(specs []*Spec) (*Rules, error) {
	r := &Rules{}
	for i, s := range specs {
		if err := r.add(s); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				fe = &FieldError{Err: err}
			}
			field := fmt.Sprintf("rewrite.%d", i)
			if fe.Field != "" {
				field += "." + fe.Field
			}
			msg := fe.Err
			if s != nil && s.Name != "" {
				msg = fmt.Errorf("rule %q: %w", s.Name, fe.Err)
			}
			return nil, &FieldError{Field: field, Err: msg}
		}
	}
	return r, nil
}

// add compiles one spec into the rules it stands for, as its kind
// (kind.go) says.
func (r *Rules) add(s *Spec) error {
	if s == nil {
		return fmt.Errorf("empty rule")
	}
	if strings.TrimSpace(s.Name) == "" {
		return &FieldError{Field: "name", Err: fmt.Errorf("missing: every rule needs a name, for logs and notes")}
	}
	tools, err := compileTools(s.Tools)
	if err != nil {
		return err
	}
	k, err := kindOf(s)
	if err != nil {
		return err
	}
	return k.compile(r, s, tools)
}

// Len returns the number of compiled rules (a spec may give two).
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.before) + len(r.after)
}

// Before runs the rules that act before a call. It returns the result
// that answers the call instead of the server (a refusal), or nil to go
// on.
func (r *Rules) Before(c *Call, env *Env) *mcp.CallToolResult {
	if r == nil {
		return nil
	}
	for _, rule := range r.before {
		if res := rule.before(c, env); res != nil {
			return res
		}
	}
	return nil
}

// Inspects reports whether a rule that acts on results may act on the
// result of c, an error result or not: a caller that holds the result
// encoded need decode it for After only then.
func (r *Rules) Inspects(c *Call, isError bool) bool {
	if r == nil {
		return false
	}
	for _, rule := range r.after {
		if rule.inspects(c, isError) {
			return true
		}
	}
	return false
}

// After runs the rules that act on a call's result, in order, and returns
// the result for the client. ctx is the call's; a fallback call runs
// under it.
func (r *Rules) After(ctx context.Context, c *Call, res *mcp.CallToolResult, env *Env) *mcp.CallToolResult {
	if r == nil {
		return res
	}
	for _, rule := range r.after {
		res = rule.after(ctx, c, res, env)
	}
	return res
}
