package aggregator

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/journal/replay"
)

// replay.miss: record: the first run calls the servers and appends their
// answers to the journal it replays; a second run is answered from it
// (a new call still goes live and is appended); a third, with no server
// at all, gets every answer identical, repeated calls in order.
func TestFrozenAnswers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "frozen") // not there yet
	var served atomic.Int32
	live := func(run string) map[string]*mcp.Server {
		return map[string]*mcp.Server{"web": fixtureServer("web", map[string]mcp.ToolHandler{
			"search": func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				n := served.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s answer %d to %s", run, n, req.Params.Arguments)}}}, nil
			},
		})}
	}
	type call struct {
		task string
		q    string
	}
	calls := []call{{"t1", "moon"}, {"t1", "moon"}, {"t1", "sun"}, {"t2", "moon"}}
	run := func(h *harness, calls []call) []string {
		cs := h.client(DefaultProfile)
		var out []string
		for _, c := range calls {
			res := callTask(t, cs, c.task, "web__search", map[string]any{"q": c.q})
			if res.IsError {
				t.Fatalf("%v: %s", c, text(res))
			}
			out = append(out, text(res))
		}
		return out
	}
	record := fmt.Sprintf("replay: {from: %q, miss: record}\n", dir)

	first := run(newHarness(t, live("first"), record, nil), calls)
	if served.Load() != 4 || first[0] == first[1] {
		t.Fatalf("first run: %d served, %q", served.Load(), first)
	}

	served.Store(0)
	h := newHarness(t, live("second"), record, nil)
	second := run(h, append(calls, call{"t3", "stars"}))
	if served.Load() != 1 {
		t.Errorf("second run: the servers answered %d calls, want the new one only", served.Load())
	}
	for i := range first {
		if second[i] != first[i] {
			t.Errorf("call %d: %q, first run %q", i, second[i], first[i])
		}
	}

	off := newHarness(t, nil, fmt.Sprintf("replay: {from: %q, catalog: recorded}\n", dir), nil)
	cs := off.client(DefaultProfile)
	third := run(off, append(calls, call{"t3", "stars"}))
	for i := range third {
		if third[i] != second[i] {
			t.Errorf("offline call %d: %q, recorded %q", i, third[i], second[i])
		}
	}
	if res := callTask(t, cs, "t1", "web__search", map[string]any{"q": "moon"}); res.Meta[replay.MetaKey] != true || text(res) != first[1] {
		t.Errorf("a third identical call gets the last answer: %q", text(res))
	}
}
