package rewrite

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// argsTemplate builds a fallback's arguments from the failed call's: each
// {{name}} in a string value is replaced by the argument name. A value
// that is exactly "{{name}}" takes the argument as it is (a number stays a
// number); inside a longer string it is written as text.
type argsTemplate struct {
	root any // the args map with strings compiled to *textTemplate
}

// textTemplate is a string with placeholders: parts alternate literal
// text and argument names, starting with text.
type textTemplate struct {
	parts []string
}

var placeholderRE = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)
var argNameRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$.-]*$`)

// compileArgs compiles a fallback's args; field names the args key of an
// error (for rewrite.N.fallback.args.KEY).
func compileArgs(args map[string]any) (*argsTemplate, error) {
	root, err := compileValue(args, "fallback.args")
	if err != nil {
		return nil, err
	}
	return &argsTemplate{root: root}, nil
}

func compileValue(v any, field string) (any, error) {
	switch v := v.(type) {
	case string:
		return compileText(v, field)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := compileValue(e, fmt.Sprintf("%s.%d", field, i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			x, err := compileValue(v[k], field+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	}
	return v, nil
}

func compileText(s, field string) (any, error) {
	locs := placeholderRE.FindAllStringSubmatchIndex(s, -1)
	t := &textTemplate{}
	last := 0
	for _, m := range locs {
		name := s[m[2]:m[3]]
		if !argNameRE.MatchString(name) {
			return nil, &FieldError{Field: field, Err: fmt.Errorf("%q: {{%s}} is not an argument name: write {{name}} with the name of an argument of the failed call, e.g. {{url}}", s, name)}
		}
		t.parts = append(t.parts, s[last:m[0]], name)
		last = m[1]
	}
	rest := s[last:]
	if strings.Contains(rest, "{{") || strings.Contains(rest, "}}") {
		return nil, &FieldError{Field: field, Err: fmt.Errorf("%q: unbalanced {{ }}: write {{name}} with the name of an argument of the failed call", s)}
	}
	if len(t.parts) == 0 {
		return s, nil
	}
	t.parts = append(t.parts, rest)
	return t, nil
}

// names returns the argument names the template uses.
func (a *argsTemplate) names() []string {
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case *textTemplate:
			for i := 1; i < len(v.parts); i += 2 {
				seen[v.parts[i]] = true
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(a.root)
	return slices.Sorted(maps.Keys(seen))
}

// render builds the arguments from the failed call's; it fails if a
// placeholder names an argument the call did not have.
func (a *argsTemplate) render(args map[string]any) (json.RawMessage, error) {
	v, err := renderValue(a.root, args)
	if err != nil {
		return nil, err
	}
	if v == nil {
		v = map[string]any{}
	}
	return json.Marshal(v)
}

func renderValue(v any, args map[string]any) (any, error) {
	switch v := v.(type) {
	case *textTemplate:
		if len(v.parts) == 3 && v.parts[0] == "" && v.parts[2] == "" {
			x, ok := args[v.parts[1]]
			if !ok {
				return nil, fmt.Errorf("the call has no argument %q", v.parts[1])
			}
			return x, nil
		}
		var b strings.Builder
		for i, p := range v.parts {
			if i%2 == 0 {
				b.WriteString(p)
				continue
			}
			x, ok := args[p]
			if !ok {
				return nil, fmt.Errorf("the call has no argument %q", p)
			}
			if s, ok := x.(string); ok {
				b.WriteString(s)
			} else {
				j, _ := json.Marshal(x)
				b.Write(j)
			}
		}
		return b.String(), nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := renderValue(e, args)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			x, err := renderValue(e, args)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	}
	return v, nil
}
