package aggregator

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

const rewriteSettings = `
profiles:
  strict:
    tool_blacklist: [["fetch", "fetch"]]
rewrite:
  - name: no-benchmark-answers
    tools: ["*scrape*", "*fetch*"]
    block_urls: ["huggingface.co/datasets/**"]
    message: "Refused: benchmark answers."
  - name: no-benchmark-links
    tools: ["*search*"]
    block_urls: ["huggingface.co/datasets/**"]
    message: "Refused: benchmark search."
    redact: true
  - name: scrape-fallback
    tools: ["*scrape*"]
    on_error: "unhandled errors"
    fallback: {tool: "fetch__fetch", args: {url: "{{url}}"}}
`

// rewriteHarness has a scraper that fails on /broken, a fetch tool and a
// search tool, and counts the calls that reach the scraper and fetch.
func rewriteHarness(t *testing.T, settings string) (h *harness, scrapes, fetches *atomic.Int32) {
	scrapes, fetches = new(atomic.Int32), new(atomic.Int32)
	urlArg := func(req *mcp.CallToolRequest) string {
		var a struct{ URL string }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return a.URL
	}
	web := fixtureServer("web", map[string]mcp.ToolHandler{
		"scrape": func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			scrapes.Add(1)
			if u := urlArg(req); strings.Contains(u, "/broken") {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Scrape failed: Unhandled errors in " + u}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "scraped " + urlArg(req)}}}, nil
		},
		"scrape_rpc": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("unhandled errors in the scraper")
		},
		"search": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "see https://hf.co/datasets/gaia and https://example.com/a"}}}, nil
		},
	})
	fetch := fixtureServer("fetch", map[string]mcp.ToolHandler{
		"fetch": func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fetches.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fetched " + urlArg(req)}}}, nil
		},
	})
	return newHarness(t, map[string]*mcp.Server{"web": web, "fetch": fetch}, settings, nil), scrapes, fetches
}

func TestRewriteRulesInThePipeline(t *testing.T) {
	h, scrapes, fetches := rewriteHarness(t, rewriteSettings)
	cs := h.client(DefaultProfile)

	res := call(t, cs, "web__scrape", map[string]any{"url": "HTTPS://WWW.hf.co/%64atasets/gaia/../gaia"})
	if !res.IsError || text(res) != "Refused: benchmark answers." || scrapes.Load() != 0 {
		t.Errorf("refusal: %q isError=%v, scrapes=%d", text(res), res.IsError, scrapes.Load())
	}
	// Auto-correction resolves the name first; the rules see the tool it chose.
	if res := call(t, cs, "scrape", map[string]any{"url": "huggingface.co/datasets/x"}); !strings.Contains(text(res), "Refused: benchmark answers.") || scrapes.Load() != 0 {
		t.Errorf("auto-corrected call: %q, scrapes=%d", text(res), scrapes.Load())
	}

	res = call(t, cs, "web__scrape", map[string]any{"url": "https://example.com/broken"})
	if res.IsError || text(res) != "[Fallback: tool 'web__scrape' failed (unhandled errors), so rule 'scrape-fallback' called 'fetch__fetch' instead] fetched https://example.com/broken" {
		t.Errorf("fallback: %q isError=%v", text(res), res.IsError)
	}
	if fetches.Load() != 1 {
		t.Errorf("fetch called %d times", fetches.Load())
	}

	// A protocol error of the server is a failure too.
	res = call(t, cs, "web__scrape_rpc", map[string]any{"url": "https://example.com/rpc"})
	if res.IsError || !strings.HasPrefix(text(res), "[Fallback: tool 'web__scrape_rpc' failed") || !strings.HasSuffix(text(res), "fetched https://example.com/rpc") {
		t.Errorf("fallback after a JSON-RPC error: %q isError=%v", text(res), res.IsError)
	}

	res = call(t, cs, "web__search", map[string]any{"q": "gaia"})
	if text(res) != "[Rewrite rule 'no-benchmark-links' removed 1 link(s) to blocked pages from this result] see [link removed] and https://example.com/a" {
		t.Errorf("redaction: %q", text(res))
	}

	// The fallback goes through the caller's profile: blacklisted there,
	// it fails, and the client gets the original error.
	strict := h.client("strict")
	res = call(t, strict, "web__scrape", map[string]any{"url": "https://example.com/broken"})
	if !res.IsError || text(res) != "Scrape failed: Unhandled errors in https://example.com/broken" || fetches.Load() != 2 {
		t.Errorf("blacklisted fallback: %q isError=%v, fetches=%d", text(res), res.IsError, fetches.Load())
	}

	// New settings apply to the next call.
	s, ferr := config.ParseSettings("mcpmux.yaml", []byte("timeout: 60s\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	h.agg.SetSettings(s)
	if res := call(t, cs, "web__scrape", map[string]any{"url": "huggingface.co/datasets/x"}); res.IsError || scrapes.Load() != 3 {
		t.Errorf("after removing the rules: %q, scrapes=%d", text(res), scrapes.Load())
	}
}

// A call carries in _meta the refusals of the rules that apply to it, for
// servers that fetch pages to hold redirects to them; the client's own
// value of that key never reaches a server, so it cannot take rules away.
func TestRefusalsTravelInMeta(t *testing.T) {
	metaOf := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		meta := req.Params.Meta
		for k := range meta {
			if strings.HasPrefix(k, "io.modelcontextprotocol/") {
				delete(meta, k) // MCP 2026-07-28's own, which every request carries
			}
		}
		if len(meta) == 0 {
			meta = nil
		}
		b, _ := json.Marshal(meta)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	}
	h := newHarness(t, map[string]*mcp.Server{
		"fetch": fixtureServer("fetch", map[string]mcp.ToolHandler{"fetch": metaOf}),
		"files": fixtureServer("files", map[string]mcp.ToolHandler{"read": metaOf}),
	}, rewriteSettings, nil)
	cs := h.client(DefaultProfile)
	forged := map[string]any{"mcpmux/refuse_urls": []any{}, "trace": "t-1"}
	for _, c := range []struct {
		tool string
		meta map[string]any
		want string
	}{
		{"fetch__fetch", nil, `{"mcpmux/refuse_urls":[{"block_urls":["huggingface.co/datasets/**"],"message":"Refused: benchmark answers.","rule":"no-benchmark-answers"}]}`},
		{"fetch__fetch", forged, `{"mcpmux/refuse_urls":[{"block_urls":["huggingface.co/datasets/**"],"message":"Refused: benchmark answers.","rule":"no-benchmark-answers"}],"trace":"t-1"}`},
		{"files__read", forged, `{"trace":"t-1"}`},
		{"files__read", nil, `null`},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}, Meta: c.meta})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); got != c.want {
			t.Errorf("%s with _meta %v: the server got %s\nwant %s", c.tool, c.meta, got, c.want)
		}
	}
}

// A rule's fallback takes the same pipeline as a client's call: a meta
// tool as the fallback answers, as it does through mcpmux__call_tool.
func TestFallbackToMetaTool(t *testing.T) {
	settings := `
meta_tools: [status, call_tool]
rewrite:
  - name: status-on-failure
    tools: ["*scrape*"]
    on_error: "unhandled errors"
    fallback: {tool: "mcpmux__status", args: {}}
`
	h, _, _ := rewriteHarness(t, settings)
	cs := h.client(DefaultProfile)
	res := call(t, cs, "web__scrape", map[string]any{"url": "https://example.com/broken"})
	want := "[Fallback: tool 'web__scrape' failed (unhandled errors), so rule 'status-on-failure' called 'mcpmux__status' instead] mcpmux is ready"
	if res.IsError || !strings.HasPrefix(text(res), want) {
		t.Errorf("fallback to mcpmux__status: %q isError=%v\nwant it to start with %q", text(res), res.IsError, want)
	}
	direct := call(t, cs, "mcpmux__call_tool", map[string]any{"name": "mcpmux__status", "arguments": map[string]any{}})
	if direct.IsError || !strings.HasPrefix(text(direct), "mcpmux is ready") {
		t.Errorf("mcpmux__call_tool of mcpmux__status: %q isError=%v", text(direct), direct.IsError)
	}
}
