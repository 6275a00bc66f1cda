package aggregator

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/front"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// Clients of 2026-07-28 over HTTP have no session: their per-client
// connections are keyed by the task a request names (within its token),
// else by its token. Two clients (two go-sdk client sessions, each call an
// HTTP request of its own) with the same task share one connection of a
// per-client server; another task, or the same task under another token,
// gets its own; a task named in _meta is the same as in X-Task-Id.
func TestSessionlessPerClientKeyedByTask(t *testing.T) {
	who := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The fixture's session: one per connection mcpmux opens.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%p", req.Session)}}}, nil
	}
	h := newHarness(t, map[string]*mcp.Server{
		"browser": fixtureServer("browser", map[string]mcp.ToolHandler{"who": who}),
	}, "", map[string]string{"browser": "session: per-client"})
	h.front = h.serveHTTP(&front.Options{Tokens: front.NewTokens("token-of-alice-0123456789", "token-of-bob-0123456789")})
	ts := httptest.NewServer(h.front)
	t.Cleanup(ts.Close)

	connect := func(token, task string) *mcp.ClientSession {
		t.Helper()
		hdr := http.Header{"Authorization": {"Bearer " + token}}
		if task != "" {
			hdr.Set("X-Task-Id", task)
		}
		return testkit.Connect2026(context.Background(), t, mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil),
			&mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: testkit.HeaderTransport{Header: hdr}}})
	}
	conn := func(cs *mcp.ClientSession, metaTask string) string {
		t.Helper()
		p := &mcp.CallToolParams{Name: "browser__who", Arguments: map[string]any{}}
		if metaTask != "" {
			p.Meta = mcp.Meta{"task_id": metaTask}
		}
		res, err := cs.CallTool(context.Background(), p)
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		return text(res)
	}
	aliceT1, aliceT1again := connect("token-of-alice-0123456789", "T1"), connect("token-of-alice-0123456789", "T1")
	t1 := conn(aliceT1, "")
	if again := conn(aliceT1, ""); again != t1 {
		t.Errorf("two calls of task T1: connections %s and %s, want one", t1, again)
	}
	if other := conn(aliceT1again, ""); other != t1 {
		t.Errorf("another client of task T1: connection %s, want T1's %s", other, t1)
	}
	t2 := conn(connect("token-of-alice-0123456789", "T2"), "")
	if t2 == t1 {
		t.Error("tasks T1 and T2 share a connection")
	}
	alice := connect("token-of-alice-0123456789", "")
	if viaMeta := conn(alice, "T2"); viaMeta != t2 {
		t.Errorf("task T2 named in _meta: connection %s, want T2's %s", viaMeta, t2)
	}
	bobT1 := conn(connect("token-of-bob-0123456789", "T1"), "")
	if bobT1 == t1 {
		t.Error("task T1 of another token shares the first token's connection")
	}
	// No task: the token is the client.
	p1, p2 := conn(alice, ""), conn(connect("token-of-alice-0123456789", ""), "")
	if p1 != p2 || p1 == t1 || p1 == t2 {
		t.Errorf("calls without a task under one token: %s and %s (tasks: %s, %s), want one connection of their own", p1, p2, t1, t2)
	}
	if n := h.pool.Get("browser").Status().Clients; n != 4 {
		t.Errorf("%d per-client connections open, want 4 (alice/T1, alice/T2, bob/T1, alice)", n)
	}
}
