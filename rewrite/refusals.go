package rewrite

import (
	"encoding/json"
	"fmt"
)

// RefusalsMetaKey is the _meta key of a downstream call that carries the
// refusals (block_urls rules) that apply to it, so that a tool server which
// fetches pages can hold every URL it is about to read — a redirect
// target, a link it follows — to the rules that checked the call's
// arguments. The built-in fetch engine does (package fetchserver); for any
// other server it is an extra _meta key.
//
// mcpmux always sets this key itself: a value the client put there is
// dropped (or replaced), so that an agent cannot remove the rules that
// apply to it.
const RefusalsMetaKey = "mcpmux/refuse_urls"

// Refusal is one rule's refusal as RefusalsMetaKey carries it.
type Refusal struct {
	Rule      string   `json:"rule"`       // the rule's name
	BlockURLs []string `json:"block_urls"` // its patterns, as written
	Message   string   `json:"message"`    // its answer to a refused call
}

// Refusals returns the refusals of the rules whose tools match c, in rule
// order; nil if there are none.
func (r *Rules) Refusals(c *Call) []Refusal {
	if r == nil {
		return nil
	}
	var out []Refusal
	for _, b := range r.before {
		if rf, ok := b.(*refuse); ok && rf.tools.match(c) {
			out = append(out, Refusal{Rule: rf.name, BlockURLs: rf.urls.raw(), Message: rf.message})
		}
	}
	return out
}

// URLBlocker matches single URLs (a redirect target, say) against
// refusals.
type URLBlocker struct {
	refusals []Refusal
	urls     []urlSet // compiled BlockURLs of each refusal
}

// NewURLBlocker compiles refusals; a pattern that does not compile is an
// error naming its rule.
func NewURLBlocker(refusals []Refusal) (*URLBlocker, error) {
	b := &URLBlocker{refusals: refusals}
	for _, rf := range refusals {
		set := make(urlSet, 0, len(rf.BlockURLs))
		for _, raw := range rf.BlockURLs {
			p, err := compileURLPattern(raw)
			if err != nil {
				return nil, fmt.Errorf("rule %q: %w", rf.Rule, err)
			}
			set = append(set, p)
		}
		b.urls = append(b.urls, set)
	}
	return b, nil
}

// ParseRefusals reads the value of RefusalsMetaKey from a _meta, and
// compiles it; no key gives a nil blocker.
func ParseRefusals(meta map[string]any) (*URLBlocker, error) {
	v, ok := meta[RefusalsMetaKey]
	if !ok || v == nil {
		return nil, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RefusalsMetaKey, err)
	}
	var refusals []Refusal
	if err := json.Unmarshal(data, &refusals); err != nil {
		return nil, fmt.Errorf("%s: want a list of {rule, block_urls, message}: %w", RefusalsMetaKey, err)
	}
	b, err := NewURLBlocker(refusals)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RefusalsMetaKey, err)
	}
	return b, nil
}

// Blocked returns the refusal whose patterns match the URL u, or nil. u is
// searched as the rules search a call's arguments: a URL inside it (a
// proxy's https://r.jina.ai/https://...) or in its query counts too. A nil
// blocker blocks nothing.
func (b *URLBlocker) Blocked(u string) *Refusal {
	if b == nil {
		return nil
	}
	for i, set := range b.urls {
		if set.firstMatch(u) != "" {
			return &b.refusals[i]
		}
	}
	return nil
}

// raw returns the patterns as written.
func (s urlSet) raw() []string {
	out := make([]string, len(s))
	for i := range s {
		out[i] = s[i].raw
	}
	return out
}
