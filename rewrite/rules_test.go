package rewrite

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/logs"
)

// seedRules are the two rules config/mcpmux.yaml ships, plus redaction
// for search tools.
var seedRules = []*Spec{
	{
		Name:      "no-benchmark-answers",
		Tools:     []string{"*scrape*", "*fetch*"},
		BlockURLs: []string{"huggingface.co/datasets/**", "huggingface.co/spaces/**"},
		Message:   "You are trying to scrape a Hugging Face dataset for answers, please do not use the scrape tool for this purpose.",
	},
	{
		Name:      "no-benchmark-links",
		Tools:     []string{"*search*"},
		BlockURLs: []string{"huggingface.co/datasets/**"},
		Message:   "Do not search Hugging Face datasets for answers.",
		Redact:    true,
	},
	{
		Name:     "scrape-fallback",
		Tools:    []string{"*scrape*"},
		OnError:  "unhandled errors",
		Fallback: &FallbackSpec{Tool: "fetch__fetch", Args: map[string]any{"url": "{{url}}", "max_length": 5000, "note": "from {{url}}"}},
	},
}

func mustCompile(t *testing.T, specs []*Spec) *Rules {
	t.Helper()
	r, err := Compile(specs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func call(name string, args string) *Call {
	server, tool, _ := strings.Cut(name, "__")
	return &Call{Name: name, Server: server, Tool: tool, Args: json.RawMessage(args), Session: "s1", RunID: "t1"}
}

func TestCompileErrors(t *testing.T) {
	ok := func(s Spec) []*Spec { return []*Spec{seedRules[0], &s} }
	for _, tt := range []struct {
		specs []*Spec
		want  string
	}{
		{[]*Spec{nil}, "rewrite.0: empty rule"},
		{ok(Spec{Tools: []string{"*"}, BlockURLs: []string{"a.com/**"}, Message: "m"}), "rewrite.1.name: missing"},
		{ok(Spec{Name: "x", Tools: []string{"[scrape"}, BlockURLs: []string{"a.com/**"}, Message: "m"}), `rewrite.1.tools.0: rule "x": "[scrape": malformed glob`},
		{ok(Spec{Name: "x", Tools: []string{""}, BlockURLs: []string{"a.com/**"}, Message: "m"}), "rewrite.1.tools.0: rule \"x\": empty pattern"},
		{ok(Spec{Name: "x", BlockURLs: []string{"a.com/[x"}, Message: "m"}), "rewrite.1.block_urls.0: rule \"x\": \"a.com/[x\": segment"},
		{ok(Spec{Name: "x", BlockURLs: []string{"a.com/**"}}), "rewrite.1.message: rule \"x\": missing"},
		{ok(Spec{Name: "x", Message: "m"}), "rewrite.1.block_urls: rule \"x\": missing"},
		{ok(Spec{Name: "x", Redact: true}), "rewrite.1.block_urls"},
		{ok(Spec{Name: "x"}), "rewrite.1: rule \"x\": the rule does nothing"},
		{ok(Spec{Name: "x", OnError: "boom"}), "rewrite.1.fallback: rule \"x\": missing"},
		{ok(Spec{Name: "x", Fallback: &FallbackSpec{Tool: "t"}}), "rewrite.1.on_error: rule \"x\": missing"},
		{ok(Spec{Name: "x", OnError: "boom", Fallback: &FallbackSpec{}}), "rewrite.1.fallback.tool: rule \"x\": missing"},
		{ok(Spec{Name: "x", OnError: "boom", Fallback: &FallbackSpec{Tool: "t", Args: map[string]any{"u": "{{}}"}}}), "rewrite.1.fallback.args.u: rule \"x\""},
		{ok(Spec{Name: "x", OnError: "boom", Fallback: &FallbackSpec{Tool: "t", Args: map[string]any{"u": "{{a b}}"}}}), "not an argument name"},
		{ok(Spec{Name: "x", OnError: "boom", Fallback: &FallbackSpec{Tool: "t", Args: map[string]any{"u": "{{url"}}}), "rewrite.1.fallback.args.u: rule \"x\": \"{{url\": unbalanced"},
		{ok(Spec{Name: "x", OnError: "boom", Fallback: &FallbackSpec{Tool: "t", Args: map[string]any{"o": map[string]any{"l": []any{"ok", "{{}"}}}}}), "rewrite.1.fallback.args.o.l.1"},
	} {
		_, err := Compile(tt.specs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(...) = %v, want an error with %q", err, tt.want)
		}
	}
	r := mustCompile(t, seedRules)
	if r.Len() != 4 { // refuse, refuse + redact, fallback
		t.Errorf("seed rules compiled to %d rules, want 4", r.Len())
	}
	var none *Rules
	if none.Before(call("a__scrape", `{}`), nil) != nil || none.Len() != 0 {
		t.Error("nil rules must do nothing")
	}
}

func TestRefuse(t *testing.T) {
	r := mustCompile(t, seedRules)
	var logs bytes.Buffer
	hits := map[string]int{}
	env := &Env{Log: slog.New(slog.NewTextHandler(&logs, nil)), OnHit: func(action, rule string) { hits[action+" "+rule]++ }}
	refusals := 0
	for _, tt := range []struct {
		tool, args string
		refused    bool
	}{
		{"tool-searching__scrape_website", `{"url": "HTTPS://WWW.HuggingFace.co/datasets/x"}`, true},
		{"tool-searching__scrape_website", `{"url": "huggingface.co/%64atasets/x"}`, true},
		{"tool-searching__scrape_website", `{"url": "hf.co/spaces/y"}`, true},
		{"tool-searching__scrape_website", `{"url": "huggingface.co/./datasets/x"}`, true},
		{"tool-searching__scrape_website", `{"url": "huggingface.co//datasets/x"}`, true},
		{"fetch__fetch", `{"prompt": "Summarise https://huggingface.co/datasets/gaia-benchmark/GAIA for me"}`, true},
		{"fetch__fetch", `{"pages": [{"urls": ["https://example.com", ["hf.co/spaces/y"]]}]}`, true},
		{"fetch__fetch", `{"https://huggingface.co/datasets/x": true}`, true}, // a key
		{"browser__scrape", `{"url": "huggingface.co/models/x"}`, false},
		{"browser__scrape", `{"url": "example.com/datasets/x"}`, false},
		{"browser__scrape", `{"max": 5, "url": 7}`, false},
		{"browser__scrape", ``, false},
		{"code__run_python", `{"code": "open('https://huggingface.co/datasets/x')"}`, false}, // not a matching tool
		{"search__google_search", `{"q": "site:huggingface.co/datasets/gaia answers"}`, true},
		// Tabs and newlines that a WHATWG parser (browsers, Node, Python)
		// drops, and C0 controls and spaces it trims.
		{"fetch__fetch", `{"url": "https://hugging\nface.co/datasets/x"}`, true},
		{"fetch__fetch", `{"url": "https://huggingface.co/data\tsets/x"}`, true},
		{"fetch__fetch", `{"url": "https://huggingface.co\r\n/datasets/x"}`, true},
		{"fetch__fetch", `{"url": "ht\ttps:/\n/hf.co/spa\r\nces/y"}`, true},
		{"fetch__fetch", `{"url": "\u0000\u001f https://huggingface.co/datasets/x \u0001"}`, true},
		{"fetch__fetch", `{"text": "please read https://hugging\nface.co/datasets/x now"}`, true},
		{"fetch__fetch", `{"url": "https://huggingface.co/models\n/x"}`, false},
	} {
		res := r.Before(call(tt.tool, tt.args), env)
		if (res != nil) != tt.refused {
			t.Errorf("%s %s: refused=%v, want %v", tt.tool, tt.args, res != nil, tt.refused)
			continue
		}
		if res != nil {
			refusals++
		}
		if res != nil && (!res.IsError || !strings.HasPrefix(ResultText(res), "You are trying") && !strings.HasPrefix(ResultText(res), "Do not search")) {
			t.Errorf("%s: refusal = %+v %q", tt.tool, res.IsError, ResultText(res))
		}
	}
	if hits["refused no-benchmark-answers"]+hits["refused no-benchmark-links"] != refusals || hits["refused no-benchmark-links"] != 1 {
		t.Errorf("OnHit saw %v for %d refusals", hits, refusals)
	}
	if !strings.Contains(logs.String(), `msg="rewrite rule applied" rule=no-benchmark-answers action=refused tool=tool-searching__scrape_website session=s1 task=t1 pattern=huggingface.co/datasets/**`) {
		t.Errorf("refusal not logged as expected:\n%s", logs.String())
	}
}

func TestRedact(t *testing.T) {
	r := mustCompile(t, seedRules)
	res := &mcp.CallToolResult{
		Content: []mcp.Content{
			&mcp.TextContent{Text: "1. GAIA answers https://huggingface.co/datasets/gaia-benchmark/GAIA.\n2. Paper https://arxiv.org/abs/2311.12983\n3. [mirror](https://hf.co/datasets/x/resolve/main/a.json)"},
			&mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"},
		},
		StructuredContent: map[string]any{"results": []any{map[string]any{"link": "huggingface.co/datasets/gaia"}, map[string]any{"link": "https://example.com"}}},
	}
	got := r.After(context.Background(), call("search__google_search", `{"q": "gaia"}`), res, nil)
	want := "[Rewrite rule 'no-benchmark-links' removed 3 link(s) to blocked pages from this result] 1. GAIA answers [link removed].\n2. Paper https://arxiv.org/abs/2311.12983\n3. [mirror]([link removed])"
	if ResultText(got) != want {
		t.Errorf("redacted text:\n%s\nwant:\n%s", ResultText(got), want)
	}
	sc, _ := json.Marshal(got.StructuredContent)
	if string(sc) != `{"results":[{"link":"[link removed]"},{"link":"https://example.com"}]}` {
		t.Errorf("redacted structured content: %s", sc)
	}
	// A tool the rule does not name keeps its links; so does a result with none.
	clean := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "https://huggingface.co/datasets/x"}}}
	if ResultText(r.After(context.Background(), call("files__read", `{}`), clean, nil)) != "https://huggingface.co/datasets/x" {
		t.Error("redacted a tool no rule names")
	}
	plain := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no links https://huggingface.co/models/x"}}}
	if ResultText(r.After(context.Background(), call("search__google_search", `{}`), plain, nil)) != "no links https://huggingface.co/models/x" {
		t.Error("changed a result without blocked links")
	}
}

func TestFallback(t *testing.T) {
	r := mustCompile(t, seedRules)
	failed := func(text string) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	}
	type fallbackCall struct {
		name string
		args string
	}
	for _, tt := range []struct {
		name      string
		tool      string
		args      string
		res       *mcp.CallToolResult
		answer    *mcp.CallToolResult // of the fallback tool
		want      string
		wantCalls []fallbackCall
	}{
		{
			name: "used", tool: "tool-searching__scrape_website", args: `{"url": "https://example.com/a", "big": 12345678901234567890}`,
			res:       failed("Error: Unhandled errors while scraping"),
			answer:    &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "# Page"}}},
			want:      "[Fallback: tool 'tool-searching__scrape_website' failed (unhandled errors), so rule 'scrape-fallback' called 'fetch__fetch' instead] # Page",
			wantCalls: []fallbackCall{{"fetch__fetch", `{"max_length":5000,"note":"from https://example.com/a","url":"https://example.com/a"}`}},
		},
		{
			name: "fails too", tool: "tool-searching__scrape_website", args: `{"url": "https://example.com/a"}`,
			res:       failed("unhandled errors"),
			answer:    failed("HTTP 404"),
			want:      "unhandled errors",
			wantCalls: []fallbackCall{{"fetch__fetch", `{"max_length":5000,"note":"from https://example.com/a","url":"https://example.com/a"}`}},
		},
		{
			name: "other error", tool: "tool-searching__scrape_website", args: `{"url": "https://example.com/a"}`,
			res:  failed("rate limited"),
			want: "rate limited",
		},
		{
			name: "success", tool: "tool-searching__scrape_website", args: `{"url": "https://example.com/a"}`,
			res:  &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "unhandled errors: none"}}},
			want: "unhandled errors: none",
		},
		{
			name: "other tool", tool: "fetch__fetch", args: `{"url": "https://example.com/a"}`,
			res:  failed("unhandled errors"),
			want: "unhandled errors",
		},
		{
			name: "argument missing", tool: "a__scrape", args: `{"link": "https://example.com/a"}`,
			res:  failed("unhandled errors"),
			want: "unhandled errors",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls []fallbackCall
			env := &Env{Call: func(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
				calls = append(calls, fallbackCall{name, string(args)})
				// The fallback's own failure goes to no further fallback.
				if again := r.After(ctx, call("x__scrape", `{"url": "u"}`), failed("unhandled errors"), nil); ResultText(again) != "unhandled errors" {
					t.Errorf("a fallback's failure went to another fallback: %q", ResultText(again))
				}
				return tt.answer
			}}
			got := r.After(context.Background(), call(tt.tool, tt.args), tt.res, env)
			if ResultText(got) != tt.want {
				t.Errorf("result %q, want %q", ResultText(got), tt.want)
			}
			if len(calls) != len(tt.wantCalls) {
				t.Fatalf("fallback calls %v, want %v", calls, tt.wantCalls)
			}
			for i := range calls {
				if calls[i] != tt.wantCalls[i] {
					t.Errorf("fallback call %v, want %v", calls[i], tt.wantCalls[i])
				}
			}
		})
	}
}

func TestTemplateKeepsTypes(t *testing.T) {
	tpl, err := compileArgs(map[string]any{"n": "{{ n }}", "s": "n={{n}}", "list": []any{"{{obj}}"}, "lit": 3})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.render(map[string]any{"n": json.Number("42"), "obj": map[string]any{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"list":[{"a":"b"}],"lit":3,"n":42,"s":"n=42"}` {
		t.Errorf("rendered %s", got)
	}
	if names := tpl.names(); strings.Join(names, ",") != "n,obj" {
		t.Errorf("names %v", names)
	}
}

// A failed fallback's error, logged cut to 300 bytes, is masked first: a
// secret across the cut does not show its first characters.
func TestFallbackFailureLogIsMaskedBeforeTheCut(t *testing.T) {
	const secret = "sk-Zq9f8e7d6c5b4a3210"
	var out bytes.Buffer
	m := &logs.Masker{}
	m.Add(secret)
	env := &Env{
		Log:  logs.Masked(slog.New(slog.NewTextHandler(&out, nil)), m),
		Mask: m,
		Call: func(context.Context, string, json.RawMessage) *mcp.CallToolResult {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("e", 295) + secret}}}
		},
	}
	failed := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "unhandled errors"}}}
	mustCompile(t, seedRules).After(context.Background(), call("web__scrape", `{"url": "https://example.com"}`), failed, env)
	if !strings.Contains(out.String(), "outcome=failed") || strings.Contains(out.String(), secret[:5]) {
		t.Errorf("log:\n%s", out.String())
	}
}

// Refusals lists the refusals of the rules matching a call, which a
// URLBlocker built from them applies to single URLs as the rules apply to
// arguments.
func TestRefusalsAndURLBlocker(t *testing.T) {
	r := mustCompile(t, seedRules)
	if got := r.Refusals(call("files__read", `{}`)); got != nil {
		t.Errorf("refusals of a tool no rule names: %v", got)
	}
	got := r.Refusals(call("fetch__fetch", `{}`))
	if len(got) != 1 || got[0].Rule != "no-benchmark-answers" || len(got[0].BlockURLs) != 2 || !strings.HasPrefix(got[0].Message, "You are trying") {
		t.Fatalf("refusals of fetch__fetch: %+v", got)
	}
	b, err := NewURLBlocker(got)
	if err != nil {
		t.Fatal(err)
	}
	for u, blocked := range map[string]bool{
		"https://huggingface.co/datasets/x":                      true,
		"https://HF.co/./spaces/y":                               true,
		"https://hugging\nface.co/datasets/x":                    true,
		"https://r.jina.ai/https://huggingface.co/datasets/x":    true,
		"https://a.example/?u=https%3A%2F%2Fhf.co%2Fdatasets%2F": true,
		"https://huggingface.co/models/x":                        false,
		"https://example.com/datasets/x":                         false,
	} {
		if got := b.Blocked(u) != nil; got != blocked {
			t.Errorf("Blocked(%q) = %v, want %v", u, got, blocked)
		}
	}
	if _, err := NewURLBlocker([]Refusal{{Rule: "bad", BlockURLs: []string{"/no-host"}}}); err == nil || !strings.Contains(err.Error(), `rule "bad"`) {
		t.Errorf("a bad pattern: %v", err)
	}
	var none *URLBlocker
	if none.Blocked("https://huggingface.co/datasets/x") != nil {
		t.Error("a nil blocker blocked")
	}
}
