package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// TestRemoteServers aggregates url: servers: Streamable HTTP, a URL that
// only speaks legacy SSE (found by falling back), and an explicit type: sse;
// configured headers must reach them.
func TestRemoteServers(t *testing.T) {
	t.Parallel()
	var sawKey atomic.Int32
	requireKey := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Api-Key") != "s3cret" {
				http.Error(w, "missing key", http.StatusUnauthorized)
				return
			}
			sawKey.Add(1)
			h.ServeHTTP(w, r)
		})
	}
	srv := echoFixture()
	mux := http.NewServeMux()
	mux.Handle("/mcp", requireKey(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	mux.Handle("/sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close) // after mcpmux has stopped (cleanups run last-in first-out)

	dir := writeConfig(t, map[string]string{
		"tool/streamable.yaml": fmt.Sprintf("url: %s/mcp\nheaders:\n  X-Api-Key: \"${oc.env:E2E_REMOTE_KEY}\"\n", ts.URL),
		"tool/fallback.yaml":   fmt.Sprintf("url: %s/sse\n", ts.URL),
		"tool/legacy.yaml":     fmt.Sprintf("url: %s/sse\ntype: sse\n", ts.URL),
	})
	setenv(t, "E2E_REMOTE_KEY", "s3cret")
	cs, _ := startStdio(t, dir)
	names := toolNames(t, cs)
	for _, server := range []string{"streamable", "fallback", "legacy"} {
		if !slices.Contains(names, server+"__echo") {
			t.Errorf("%s__echo missing from %v", server, names)
			continue
		}
		if got := resultText(callTool(t, cs, server+"__echo", map[string]any{"text": server})); got != "echo: "+server {
			t.Errorf("%s__echo = %q", server, got)
		}
	}
	if sawKey.Load() == 0 {
		t.Error("the configured header never reached the server")
	}
	out, _, _ := runMcpmux(t, "check", "--config", dir)
	for _, want := range []string{"streamable-http", "sse"} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not show transport %q:\n%s", want, out)
		}
	}
}

// TestCrashedServerRestarts: a child that dies mid-call gives that call an
// isError, and is restarted for the next calls.
func TestCrashedServerRestarts(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/echo.yaml":  fixture("echo", "echo"),
		"tool/other.yaml": fixture("other", "echo"),
	})
	cs, _ := startStdio(t, dir)
	pid := callTool(t, cs, "echo__pid", nil)
	start := time.Now()
	res := callTool(t, cs, "echo__crash", nil)
	if !res.IsError || !strings.Contains(resultText(res), "stopped answering") {
		t.Errorf("crash mid-call = %q (isError %v)", resultText(res), res.IsError)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the crashed call took %v to answer", d)
	}
	// The other server was not disturbed.
	if got := resultText(callTool(t, cs, "other__echo", map[string]any{"text": "x"})); got != "echo: x" {
		t.Errorf("other server after the crash: %q", got)
	}
	// Poll until the restarted child answers.
	res = testkit.Await(t, "the server is back", func() *mcp.CallToolResult { return callTool(t, cs, "echo__pid", nil) }, func(res *mcp.CallToolResult) bool { return !res.IsError })
	if resultText(res) == resultText(pid) {
		t.Fatalf("same pid %s after a crash", resultText(pid))
	}
	if _, err := strconv.Atoi(resultText(res)); err != nil {
		t.Fatalf("pid = %q", resultText(res))
	}
	if names := toolNames(t, cs); !slices.Contains(names, "echo__echo") {
		t.Errorf("tools after restart: %v", names)
	}
}
