package aggregator

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// ttlServer is a 2026-07-28 server whose lists say they stay fresh for
// ttlMs, with one tool, one prompt and one resource.
func ttlServer(name string, ttlMs int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = ttlMs },
	})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, echo(name+":"))
	s.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	s.AddResource(&mcp.Resource{URI: "file:///" + name, Name: name}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	return s
}

// ownResourceServer lists, to every connection but its first (mcpmux's
// shared one), a resource of that connection's own: what a per-client
// server makes for its client.
func ownResourceServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "own", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, echo("own:"))
	s.AddResource(&mcp.Resource{URI: "file:///shared", Name: "shared"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	var (
		mu    sync.Mutex
		first mcp.Session
	)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListResourcesResult); ok && err == nil {
				mu.Lock()
				if first == nil {
					first = req.GetSession()
				}
				own := req.GetSession() != first
				mu.Unlock()
				if own {
					lr.Resources = append(lr.Resources, &mcp.Resource{URI: "own://mine", Name: "mine"})
				}
			}
			return res, err
		}
	})
	return s
}

// A sessionless client's lists may be cached for the smallest ttlMs the
// servers behind gave theirs (a 2025-11-25 server that gives none, and
// announces its changes instead, does not shorten it), and are "private" where they hold what only that
// client sees: the resources a per-client server listed to its own
// connection.
func TestSessionlessListCacheHints(t *testing.T) {
	servers := map[string]*mcp.Server{
		"slow": ttlServer("slow", 60000),
		"fast": ttlServer("fast", 5000),
		"old":  fixtureServer("old", map[string]mcp.ToolHandler{"echo": echo("old:")}), // no ttl
	}
	h := newHarness(t, servers, "", pinned2025("old"))
	c := stdioLines(t, h.agg, DefaultProfile)
	type hints struct {
		TTL   *int   `json:"ttlMs"`
		Scope string `json:"cacheScope"`
	}
	for _, method := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		res, errj := c.call(method, map[string]any{"_meta": sessionlessMeta(`{}`)})
		var got hints
		if errj != nil || json.Unmarshal(res, &got) != nil || got.TTL == nil || *got.TTL != 5000 || got.Scope != "public" {
			t.Errorf("%s: %s %s, want ttlMs 5000 (the smallest of the 2026 servers) and cacheScope public", method, res, errj)
		}
	}

	own := newHarness(t, map[string]*mcp.Server{"own": ownResourceServer()}, "", map[string]string{"own": "session: per-client"})
	oc := stdioLines(t, own.agg, DefaultProfile)
	// Its connection is opened by its first call.
	if _, errj := oc.call("tools/call", map[string]any{"name": "own__echo", "arguments": map[string]any{}, "_meta": sessionlessMeta(`{}`)}); errj != nil {
		t.Fatal(string(errj))
	}
	var got hints
	testkit.Eventually(t, "the client's own resource is listed", func() bool {
		res, errj := oc.call("resources/list", map[string]any{"_meta": sessionlessMeta(`{}`)})
		got = hints{}
		_ = json.Unmarshal(res, &got)
		return errj == nil && strings.Contains(string(res), "own://mine")
	})
	if got.Scope != "private" || got.TTL == nil || *got.TTL != 0 {
		t.Errorf("resources/list with the client's own resource: %+v, want cacheScope private, ttlMs 0", got)
	}
	if res, _ := oc.call("tools/list", map[string]any{"_meta": sessionlessMeta(`{}`)}); !strings.Contains(string(res), `"cacheScope":"public"`) {
		t.Errorf("tools/list: %s, want cacheScope public", res)
	}
}
