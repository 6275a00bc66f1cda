package rewrite

import (
	"fmt"
	"slices"
	"strings"
)

// A kind is one kind of rewrite rule: the fields of a Spec that are its
// own, and how a spec of the kind compiles. A new kind is a file holding
// its kind value, its rule types and its compile function, and an entry in
// kinds.
type kind struct {
	// name is what a rule's kind: says, e.g. "refuse".
	name string
	// set returns the YAML names of the kind's own fields that s sets
	// (every kind has name, kind and tools besides).
	set func(s *Spec) []string
	// compile adds the rules s stands for to r. tools are s.Tools,
	// compiled.
	compile func(r *Rules, s *Spec, tools toolSet) error
}

// kinds are the kinds of rewrite rules, in the order a rule that names
// none is matched against them (kindOf).
var kinds = []*kind{
	refuseKind,
	fallbackKind,
}

// KindNames are the names a rule's kind: accepts, in the order of kinds.
func KindNames() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	return names
}

// kindOf returns the kind of s: the one it names, or, for a rule written
// without kind: (as every rule was before rules named their kind), the
// one kind whose fields it sets. This is the only place a kind is
// inferred. A rule that sets fields of another kind than its own, or of
// several kinds without naming one, is an error.
func kindOf(s *Spec) (*kind, error) {
	if s.Kind != "" {
		i := slices.IndexFunc(kinds, func(k *kind) bool { return k.name == s.Kind })
		if i < 0 {
			return nil, &FieldError{Field: "kind", Err: fmt.Errorf("unknown rule kind %q (%s)", s.Kind, strings.Join(KindNames(), ", "))}
		}
		k := kinds[i]
		for _, other := range kinds {
			if other == k {
				continue
			}
			if f := other.set(s); len(f) > 0 {
				return nil, &FieldError{Field: f[0], Err: fmt.Errorf("not a field of a %s rule (it is one of kind %s): make it a rule of its own", k.name, other.name)}
			}
		}
		return k, nil
	}
	var found []*kind
	for _, k := range kinds {
		if len(k.set(s)) > 0 {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("the rule does nothing: set block_urls (with message) to refuse calls, or on_error with fallback")
	case 1:
		return found[0], nil
	}
	var parts []string
	for _, k := range found {
		parts = append(parts, fmt.Sprintf("%s (%s)", k.name, strings.Join(k.set(s), ", ")))
	}
	return nil, fmt.Errorf("the rule sets fields of several kinds, %s: write one rule of each kind", strings.Join(parts, " and "))
}
