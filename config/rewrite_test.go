package config

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/rewrite"
)

// The shipped mcpmux.yaml loads, matches its schema and has the seed's
// rules on.
func TestShippedSettings(t *testing.T) {
	data, err := os.ReadFile(SettingsFile)
	if err != nil {
		t.Fatal(err)
	}
	const line = "# yaml-language-server: $schema=schema/mcpmux.schema.json"
	if first, _, _ := strings.Cut(string(data), "\n"); first != line {
		t.Errorf("first line %q, want %q", first, line)
	}
	if err := compileSchema(t, "mcpmux.schema.json").Validate(yamlInstance(t, data)); err != nil {
		t.Errorf("schema: %v", err)
	}
	s, ferr := ParseSettings(SettingsFile, data, env(nil))
	if ferr != nil {
		t.Fatal(ferr)
	}
	var names []string
	for _, r := range s.Rewrite {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "scrape-fallback" || s.AntiCheat != rewrite.PackBenchmarkAnswers {
		t.Errorf("shipped rules %v, anti_cheat %q", names, s.AntiCheat)
	}
	// The pack's refusal and redaction, then the fallback.
	if s.Rules().Len() != 3 {
		t.Errorf("%d compiled rules, want 3", s.Rules().Len())
	}
}

// A bad rule makes mcpmux.yaml invalid, with the file, the line of the
// field and its path in the error.
func TestRewriteRuleErrors(t *testing.T) {
	const head = "timeout: 60s\nrewrite:\n  - name: ok\n    tools: [\"*fetch*\"]\n    block_urls: [\"huggingface.co/datasets/**\"]\n    message: no\n"
	for _, tt := range []struct{ yaml, want string }{
		{head + "  - name: bad-glob\n    tools: [\"[scrape\"]\n    block_urls: [x.com]\n    message: m\n", `mcpmux.yaml:8: rewrite.1.tools.0: rule "bad-glob": "[scrape": malformed glob`},
		{head + "  - name: bad-url\n    block_urls:\n      - x.com/ok\n      - /no-host\n    message: m\n", `mcpmux.yaml:10: rewrite.1.block_urls.1: rule "bad-url": "/no-host": a pattern starts with a host`},
		{head + "  - name: no-tool\n    on_error: boom\n    fallback: {args: {url: \"{{url}}\"}}\n", `mcpmux.yaml:9: rewrite.1.fallback.tool: rule "no-tool": missing`},
		{head + "  - name: bad-var\n    on_error: boom\n    fallback:\n      tool: fetch__fetch\n      args:\n        url: \"{{ }}\"\n", `mcpmux.yaml:12: rewrite.1.fallback.args.url: rule "bad-var"`},
		{head + "  - tools: [\"*\"]\n    on_error: boom\n    fallback: {tool: t}\n", `mcpmux.yaml:7: rewrite.1.name: missing`},
		{head + "  - name: two-kinds\n    kind: refuse\n    block_urls: [x.com]\n    message: m\n    on_error: boom\n", `mcpmux.yaml:11: rewrite.1.on_error: rule "two-kinds": not a field of a refuse rule`},
		{head + "  - name: odd-kind\n    kind: redact\n    block_urls: [x.com]\n", `mcpmux.yaml:8: rewrite.1.kind: rule "odd-kind": unknown rule kind "redact" (refuse, fallback`},
		{"anti_cheat: benchmark-answer\n", `mcpmux.yaml:1: anti_cheat: unknown policy pack "benchmark-answer" (benchmark-answers, or off)`},
	} {
		_, ferr := ParseSettings("mcpmux.yaml", []byte(tt.yaml), nil)
		if ferr == nil || !strings.Contains(ferr.Error(), tt.want) {
			t.Errorf("error %v\nwant %q in it, for\n%s", ferr, tt.want, tt.yaml)
		}
	}
}

// The schema flags the rules the loader rejects for missing fields.
func TestSchemaAgreesOnRules(t *testing.T) {
	sch := compileSchema(t, "mcpmux.schema.json")
	for _, ex := range []schemaExample{
		{doc: "rewrite: [{name: r, block_urls: [a.com/**], message: m, redact: true}]\n", valid: true},
		{doc: "rewrite: [{name: r, tools: [\"*\"], on_error: boom, fallback: {tool: t}}]\n", valid: true},
		{doc: "rewrite: [{name: r}]\n"},
		{doc: "anti_cheat: benchmark-answers\n", valid: true},
		{doc: "anti_cheat: off\n", valid: true},
		{doc: "anti_cheat: gaia\n"},
		{doc: "rewrite: [{block_urls: [a.com/**], message: m}]\n"},
		{doc: "rewrite: [{name: r, block_urls: [a.com/**]}]\n"},
		{doc: "rewrite: [{name: r, message: m}]\n"},
		{doc: "rewrite: [{name: r, redact: true}]\n"},
		{doc: "rewrite: [{name: r, on_error: boom}]\n"},
		{doc: "rewrite: [{name: r, fallback: {tool: t}}]\n"},
		{doc: "rewrite: [{name: r, on_error: boom, fallback: {tool: \"\"}}]\n"},
		{doc: "rewrite: [{name: r, kind: refuse, block_urls: [a.com/**], message: m, redact: true}]\n", valid: true},
		{doc: "rewrite: [{name: r, kind: fallback, on_error: boom, fallback: {tool: t}}]\n", valid: true},
		{doc: "rewrite: [{name: r, kind: block, block_urls: [a.com/**], message: m}]\n"},
		{doc: "rewrite: [{name: r, kind: refuse, on_error: boom, fallback: {tool: t}}]\n"},
		{doc: "rewrite: [{name: r, kind: fallback, block_urls: [a.com/**], message: m}]\n"},
		{doc: "rewrite: [{name: r, kind: refuse, block_urls: [a.com/**], message: m, on_error: boom, fallback: {tool: t}}]\n"},
		{doc: "rewrite: [{name: r, block_urls: [a.com/**], message: m, on_error: boom, fallback: {tool: t}}]\n"},
	} {
		serr := sch.Validate(yamlInstance(t, []byte(ex.doc)))
		_, lerr := ParseSettings("mcpmux.yaml", []byte(ex.doc), nil)
		if (serr == nil) != ex.valid || (lerr == nil) != ex.valid {
			t.Errorf("%s: schema %v, loader %v; want valid=%v", ex.doc, serr, lerr, ex.valid)
		}
	}
}
