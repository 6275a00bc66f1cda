package rewrite

import (
	"fmt"
	"path"
)

// toolSet is a rule's tools: globs matched against the exposed name and
// the server's own name of a tool; empty matches every tool.
type toolSet []string

func compileTools(globs []string) (toolSet, error) {
	for i, g := range globs {
		if g == "" {
			return nil, &FieldError{Field: fmt.Sprintf("tools.%d", i), Err: fmt.Errorf("empty pattern")}
		}
		if err := checkGlob(g); err != nil {
			return nil, &FieldError{Field: fmt.Sprintf("tools.%d", i), Err: fmt.Errorf("%q: %v (use *, ? and [...] as in shell globs)", g, err)}
		}
	}
	return toolSet(globs), nil
}

func (t toolSet) match(c *Call) bool {
	if len(t) == 0 {
		return true
	}
	for _, g := range t {
		if ok, _ := path.Match(g, c.Name); ok {
			return true
		}
		if ok, _ := path.Match(g, c.Tool); ok {
			return true
		}
	}
	return false
}
