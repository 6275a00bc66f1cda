package rewrite

import (
	"reflect"
	"strings"
	"testing"
)

// A rule that names its kind compiles as the same rule written without
// one: the kind only says what the fields already did.
func TestKindNamedOrInferred(t *testing.T) {
	kinds := []string{"refuse", "refuse", "fallback"}
	for i, s := range seedRules {
		named := *s
		named.Kind = kinds[i]
		got, want := mustCompile(t, []*Spec{&named}), mustCompile(t, []*Spec{s})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s with kind %s compiles to %+v, without it to %+v", s.Name, kinds[i], got, want)
		}
	}
}

// An unknown kind, a field of another kind, or fields of two kinds in a
// rule without kind: are errors that say which.
func TestKindErrors(t *testing.T) {
	fb := &FallbackSpec{Tool: "t"}
	for _, tt := range []struct {
		spec Spec
		want string
	}{
		{Spec{Name: "x", Kind: "block", BlockURLs: []string{"a.com/**"}, Message: "m"}, `rewrite.0.kind: rule "x": unknown rule kind "block" (refuse, fallback`},
		{Spec{Name: "x", Kind: "Refuse", BlockURLs: []string{"a.com/**"}, Message: "m"}, `unknown rule kind "Refuse"`},
		{Spec{Name: "x", Kind: "refuse", BlockURLs: []string{"a.com/**"}, Message: "m", OnError: "boom"}, `rewrite.0.on_error: rule "x": not a field of a refuse rule (it is one of kind fallback)`},
		{Spec{Name: "x", Kind: "fallback", OnError: "boom", Fallback: fb, Redact: true}, `rewrite.0.redact: rule "x": not a field of a fallback rule (it is one of kind refuse)`},
		{Spec{Name: "x", Kind: "fallback"}, `rewrite.0.on_error: rule "x": missing`},
		{Spec{Name: "x", Kind: "refuse"}, `rewrite.0.block_urls: rule "x": missing`},
		{Spec{Name: "x", BlockURLs: []string{"a.com/**"}, Message: "m", OnError: "boom", Fallback: fb}, `rewrite.0: rule "x": the rule sets fields of several kinds, refuse (block_urls, message) and fallback (on_error, fallback): write one rule of each kind`},
		{Spec{Name: "x", Kind: "refuse", Tools: []string{"[x"}, BlockURLs: []string{"a.com/**"}, Message: "m"}, `rewrite.0.tools.0`},
	} {
		_, err := Compile([]*Spec{&tt.spec})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%+v) = %v, want an error with %q", tt.spec, err, tt.want)
		}
	}
}
