package aggregator

//lint:file-ignore SA1019 the test sets log levels of MCP 2025-11-25, which mcpmux forwards.

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// A client session has one state, made at its initialize and dropped as a
// whole when it ends: its log level stops counting, and what watchers hung
// on it runs once.
func TestClientSessionStateGoesWithTheSession(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{"alpha": fixtureServer("alpha", map[string]mcp.ToolHandler{"echo": echo("")})}, "", nil)
	var started, ended atomic.Int32
	h.agg.WatchSessions(func(context.Context, *mcp.ServerSession) func() {
		started.Add(1)
		return func() { ended.Add(1) }
	})
	quiet := h.client(DefaultProfile)
	chatty := h.client(DefaultProfile)
	if err := quiet.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	if err := chatty.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if started.Load() != 2 || h.agg.clients.lowestLevel() != "debug" {
		t.Fatalf("%d sessions seen, lowest level %q; want 2 and debug", started.Load(), h.agg.clients.lowestLevel())
	}
	chatty.Close()
	testkit.Eventually(t, "the ended session's state is dropped", func() bool { return ended.Load() == 1 })
	if got := h.agg.clients.lowestLevel(); got != "error" {
		t.Errorf("lowest level after the debug session ended: %q, want error", got)
	}
	h.agg.clients.mu.Lock()
	n := len(h.agg.clients.sessions)
	h.agg.clients.mu.Unlock()
	if n != 1 {
		t.Errorf("%d session states, want the open one", n)
	}
}
