package rewrite

import (
	"fmt"
	"slices"
	"strings"
)

// PackBenchmarkAnswers is the anti_cheat policy pack for agents under
// evaluation: no tool may be called with a link to a source of benchmark
// answers, and such links are removed from every result.
const PackBenchmarkAnswers = "benchmark-answers"

// BenchmarkAnswerURLs are the sources PackBenchmarkAnswers refuses: Hugging
// Face datasets and Spaces (where GAIA, HLE, SimpleQA and the like publish
// questions with answers, and leaderboards show them) in every form a
// fetcher reaches them — the site, its API (which serves parquet), the
// dataset viewer's server (which serves rows), the resolve cache, Spaces'
// own hosts, hf.co (an alias, see hostAliases) and the hf-mirror.com
// mirror. Each entry matches as block_urls do (docs/policies.md).
var BenchmarkAnswerURLs = []string{
	"huggingface.co/datasets/**",
	"huggingface.co/api/datasets/**",
	"huggingface.co/api/resolve-cache/datasets/**",
	"huggingface.co/spaces/**",
	"huggingface.co/api/spaces/**",
	"huggingface.co/api/resolve-cache/spaces/**",
	"datasets-server.huggingface.co/**",
	"hf.space/**",
	"*.hf.space/**",
	"hf-mirror.com/**",
	"*.hf-mirror.com/**",
	"s3.amazonaws.com/datasets.huggingface.co/**",
}

// benchmarkAnswersMessage answers a refused call.
const benchmarkAnswersMessage = "You are trying to read benchmark answers (a Hugging Face dataset or Space, its API, dataset viewer or a mirror), please do not use any tool for this purpose."

// packs are the bundled policy packs by name: rules as a config would
// write them, applied to every tool (no tools list).
var packs = map[string][]*Spec{
	PackBenchmarkAnswers: {{
		Name:      PackBenchmarkAnswers,
		Kind:      refuseKind.name,
		BlockURLs: BenchmarkAnswerURLs,
		Message:   benchmarkAnswersMessage,
		Redact:    true,
	}},
}

// PackNames are the names anti_cheat accepts besides "off".
func PackNames() []string {
	names := make([]string, 0, len(packs))
	for n := range packs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// CompilePack compiles the policy pack name; "" and "off" are none (nil
// rules).
func CompilePack(name string) (*Rules, error) {
	if name == "" || name == "off" {
		return nil, nil
	}
	specs, ok := packs[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy pack %q (%s, or off)", name, strings.Join(PackNames(), ", "))
	}
	return Compile(specs)
}

// Then returns the rules of r followed by those of next: a policy pack
// runs before the configured rules, so they cannot undo it.
func (r *Rules) Then(next *Rules) *Rules {
	switch {
	case r == nil:
		return next
	case next == nil:
		return r
	}
	return &Rules{
		before: append(slices.Clip(r.before), next.before...),
		after:  append(slices.Clip(r.after), next.after...),
	}
}
