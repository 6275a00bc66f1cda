package aggregator

//lint:file-ignore SA1019 the test checks the deprecated logging of MCP 2026-07-28 (still functional).

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/front"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// ping and logging/setLevel of a 2026-07-28 client over HTTP, as a go-sdk
// v1.8.0 client sends them (the MCP-Protocol-Version header of
// 2026-07-28, no request _meta): ping is answered {}; logging/setLevel
// keeps the level of the client the request names (its token here), whose
// later requests without a level of their own get its log messages; one
// that names none gets -32601 (404). Sent as requests of 2026-07-28 (with
// the _meta), both are methods MCP 2026-07-28 removed: 404, -32601.
func TestRemovedMethodsOverHTTP(t *testing.T) {
	logger := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "a log line"})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil
	}
	h := newHarness(t, map[string]*mcp.Server{"s": fixtureServer("s", map[string]mcp.ToolHandler{"log": logger})}, "", nil)
	h.front = h.serveHTTP(&front.Options{Tokens: front.NewTokens("token-of-alice-0123456789", "token-of-bob-0123456789")})
	ts := httptest.NewServer(h.front)
	t.Cleanup(ts.Close)
	url := ts.URL + "/mcp"
	hdr := func(token, method string) map[string]string {
		m := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if token != "" {
			m["Authorization"] = "Bearer " + token
		}
		return m
	}
	alice, bob := "token-of-alice-0123456789", "token-of-bob-0123456789"

	for _, c := range []struct {
		name, token, body string
		status            int
		want              string
	}{
		{"ping", alice, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 200, `"result":{}`},
		{"ping with params", bob, `{"jsonrpc":"2.0","id":"p","method":"ping","params":{}}`, 200, `"id":"p","result":{}`},
		{"setLevel", alice, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`, 200, `"result":{}`},
		{"setLevel of a bad level", alice, `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"loud"}}`, 400, `-32602`},
		{"ping of 2026-07-28", alice, `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, 404, `-32601`},
		{"setLevel of 2026-07-28", alice, `{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"info","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, 404, `-32601`},
	} {
		method := "ping"
		if strings.Contains(c.body, "setLevel") {
			method = "logging/setLevel"
		}
		resp, body := testkit.Post(t, url, c.body, hdr(c.token, method))
		if resp.StatusCode != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want %d with %s", c.name, resp.StatusCode, body, c.status, c.want)
		}
	}

	call := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"s__log","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	if _, body := testkit.Post(t, url, call, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "s__log", "Authorization": "Bearer " + alice}); !strings.Contains(body, "a log line") || !strings.Contains(body, "logged") {
		t.Errorf("alice's call after her logging/setLevel: %s, want the log message and the result", body)
	}
	if _, body := testkit.Post(t, url, call, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "s__log", "Authorization": "Bearer " + bob}); strings.Contains(body, "a log line") || !strings.Contains(body, "logged") {
		t.Errorf("bob's call (he set no level): %s, want the result alone", body)
	}
}

// A kept level is forgotten when its client has sent nothing for the
// idle period; every request that reads it keeps it.
func TestKeptLevelsForgottenWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &keptLevels{idle: time.Minute}
		k.set("principal:a", "debug")
		k.set("principal:b", "error")
		time.Sleep(40 * time.Second) // synctest's clock, not a wait
		if got := k.get("principal:a"); got != "debug" {
			t.Errorf("a after 40s: %q", got)
		}
		time.Sleep(40 * time.Second)
		if got, low := k.get("principal:a"), k.lowest(); got != "debug" || low != "debug" {
			t.Errorf("a after 40s more (read 40s ago): %q, lowest %q", got, low)
		}
		if got := k.get("principal:b"); got != "" {
			t.Errorf("b, idle for 80s: %q, want it forgotten", got)
		}
		time.Sleep(2 * time.Minute)
		if k.any() && k.lowest() != "" {
			t.Errorf("levels kept after every client left: %q", k.lowest())
		}
	})
}
