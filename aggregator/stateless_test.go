package aggregator

//lint:file-ignore SA1019 the tests check that sampling, roots and logging of MCP 2025-11-25, which mcpmux forwards, are refused without a session.

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessServer serves the fixtures over stateless HTTP.
func statelessServer(t *testing.T, servers map[string]*mcp.Server) (*harness, *httptest.Server) {
	t.Helper()
	// The servers' requests to their client: MCP 2025-11-25.
	h := newHarness(t, servers, "", pinned2025(slices.Collect(maps.Keys(servers))...))
	h.agg = New(&Options{Pool: h.pool, Settings: h.agg.Settings(), Stateless: true})
	h.agg.Sync()
	h.agg.MarkReady()
	h.front = h.serveHTTP(nil)
	ts := httptest.NewServer(h.front)
	t.Cleanup(ts.Close)
	return h, ts
}

// Stateless, no response carries a session id and every request stands
// alone: a client works through any replica, calls included; GET (a
// session's stream) is not allowed; the capabilities promise nothing that
// needs a stream outside a request; a subscription is refused, and a
// downstream server's request to the client gets an error that says why.
func TestStateless(t *testing.T) {
	asker := fixtureServer("asker", map[string]mcp.ToolHandler{"echo": echo("asker:")})
	asker.AddTool(&mcp.Tool{Name: "sample", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
			if err == nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		})
	asker.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://r", Text: "r"}}}, nil
	})
	h, ts := statelessServer(t, map[string]*mcp.Server{"asker": asker})

	resp, body := post(t, ts.URL+"/mcp", initBody, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("initialize: %d, session id %q, want 200 without one: %s", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body)
	}
	// A call without any initialize before it, as on a replica that
	// never saw this client.
	resp, body = post(t, ts.URL+"/mcp", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"asker__echo","arguments":{"text":"anywhere"}}}`,
		map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "asker:anywhere") {
		t.Errorf("a call on its own: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v, want 405", resp, err)
	}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("a go-sdk client to a stateless front: %v", err)
	}
	defer cs.Close()
	caps := cs.InitializeResult().Capabilities
	if caps.Tools.ListChanged || caps.Resources.ListChanged || caps.Resources.Subscribe || caps.Prompts.ListChanged {
		t.Errorf("capabilities promise notifications a stateless front cannot send: tools %+v, resources %+v, prompts %+v", caps.Tools, caps.Resources, caps.Prompts)
	}
	if res := call(t, cs, "asker__echo", map[string]any{"text": "hi"}); res.IsError || text(res) != "asker:hi" {
		t.Errorf("call: %+v", res)
	}
	if res := call(t, cs, "asker__sample", nil); !res.IsError || !strings.Contains(text(res), "stateless") {
		t.Errorf("a server's sampling request: %q, want an error saying mcpmux serves stateless", text(res))
	}
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "test://r"}); err == nil {
		t.Error("a subscription was accepted: its updates could never reach the client")
	}
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://r"}); err != nil {
		t.Errorf("reading a resource: %v", err)
	}
	if n := h.front.OpenSessions(); n != 0 {
		t.Errorf("%d sessions tracked, want none", n)
	}
}

// A draining stateless replica refuses initialize, where a client starts,
// and serves every other request.
func TestStatelessDrain(t *testing.T) {
	h, ts := statelessServer(t, map[string]*mcp.Server{"alpha": fixtureServer("alpha", map[string]mcp.ToolHandler{"echo": echo("alpha:")})})
	h.agg.Drain()
	resp, body := post(t, ts.URL+"/mcp", initBody, nil)
	if _, code, _ := rpcErrorBody(t, body); resp.StatusCode != http.StatusServiceUnavailable || code != -32000 {
		t.Errorf("initialize while draining: %d %s, want 503", resp.StatusCode, body)
	}
	resp, body = post(t, ts.URL+"/mcp", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"}}}`,
		map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "alpha:x") {
		t.Errorf("a call while draining: %d %s", resp.StatusCode, body)
	}
}
