package aggregator

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/rewrite"
)

// anticheatHarness has a browser (browser_navigate), an agent-style
// WebFetch, a code runner and a search tool that links to a dataset; it
// counts the calls that reach a server.
func anticheatHarness(t *testing.T, settings string) (*harness, *atomic.Int32) {
	reached := new(atomic.Int32)
	echo := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		reached.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + string(req.Params.Arguments)}}}, nil
	}
	browser := fixtureServer("playwright", map[string]mcp.ToolHandler{"browser_navigate": echo})
	agent := fixtureServer("agent", map[string]mcp.ToolHandler{"WebFetch": echo, "run_python": echo,
		"search": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "1. GAIA https://huggingface.co/datasets/gaia-benchmark/GAIA\n2. Rows https://datasets-server.huggingface.co/rows?dataset=gaia\n3. Paper https://arxiv.org/abs/2311.12983"}},
				StructuredContent: map[string]any{"links": []any{"https://x.hf.space/answers", "https://example.com"}},
			}, nil
		},
	})
	return newHarness(t, map[string]*mcp.Server{"playwright": browser, "agent": agent}, settings, nil), reached
}

// TestAntiCheatPack: anti_cheat: benchmark-answers refuses a link to a
// benchmark-answer source in any argument of any tool, removes such links
// from results, and the journal records each blocked attempt (issue 27,
// item 2).
func TestAntiCheatPack(t *testing.T) {
	dir := t.TempDir()
	h, reached := anticheatHarness(t, fmt.Sprintf("anti_cheat: benchmark-answers\njournal: {dir: %q}\n", dir))
	cs := h.client(DefaultProfile)
	refused := []struct {
		tool string
		args map[string]any
	}{
		{"playwright__browser_navigate", map[string]any{"url": "https://huggingface.co/datasets/gaia-benchmark/GAIA"}},
		{"agent__WebFetch", map[string]any{"url": "https://huggingface.co/api/datasets/gaia-benchmark/GAIA/parquet", "prompt": "answers"}},
		{"agent__WebFetch", map[string]any{"url": "https://datasets-server.huggingface.co/rows?dataset=gaia-benchmark%2FGAIA&config=2023_all&split=validation"}},
		{"agent__WebFetch", map[string]any{"url": "https://hf-mirror.com/datasets/gaia-benchmark/GAIA"}},
		{"agent__WebFetch", map[string]any{"url": "https://huggingface.co/models'/../datasets/gaia-benchmark/GAIA"}},
		{"agent__run_python", map[string]any{"code": "import requests\nprint(requests.get('https://gaia-benchmark-leaderboard.hf.space/answers').text)"}},
		{"playwright__browser_navigate", map[string]any{"url": "https://hf.co/spaces/gaia-benchmark/leaderboard"}},
	}
	for _, tt := range refused {
		res := callTask(t, cs, "gaia-1", tt.tool, tt.args)
		if !res.IsError || !strings.Contains(text(res), "benchmark answers") {
			t.Errorf("%s %v: isError=%v %q, want the refusal", tt.tool, tt.args, res.IsError, text(res))
		}
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("%d refused calls reached a server", n)
	}
	for _, u := range []string{"https://huggingface.co/models/x", "https://example.com/datasets/x", "https://huggingface.co/papers/2311.12983"} {
		if res := callTask(t, cs, "gaia-1", "playwright__browser_navigate", map[string]any{"url": u}); res.IsError {
			t.Errorf("%s refused: %q", u, text(res))
		}
	}

	res := callTask(t, cs, "gaia-1", "agent__search", map[string]any{"q": "gaia"})
	got := text(res)
	if strings.Contains(got, "huggingface.co") || !strings.Contains(got, "1. GAIA [link removed]\n2. Rows [link removed]\n3. Paper https://arxiv.org/abs/2311.12983") ||
		!strings.Contains(got, "removed 3 link(s)") {
		t.Errorf("search result not redacted: %q", got)
	}
	if sc := fmt.Sprint(res.StructuredContent); strings.Contains(sc, "hf.space") || !strings.Contains(sc, "example.com") {
		t.Errorf("structured content: %s", sc)
	}

	blocked := 0
	for _, l := range journalLines(t, dir, "gaia-1") {
		if l.Rule == rewrite.PackBenchmarkAnswers && l.Action == "refused" {
			blocked++
		}
	}
	if blocked != len(refused) {
		t.Errorf("the journal records %d blocked attempts, want %d", blocked, len(refused))
	}
}

// TestAntiCheatOff: without the pack (or with anti_cheat: off) the same
// calls reach their servers.
func TestAntiCheatOff(t *testing.T) {
	for _, settings := range []string{"", "anti_cheat: off\n"} {
		h, reached := anticheatHarness(t, settings)
		res := call(t, h.client(DefaultProfile), "playwright__browser_navigate", map[string]any{"url": "https://huggingface.co/datasets/x"})
		if res.IsError || reached.Load() != 1 {
			t.Errorf("settings %q: isError=%v %q", settings, res.IsError, text(res))
		}
	}
}
