package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const chromiumPath = "/usr/bin/chromium"

// TestPlaywrightPerClientBrowsers: two clients drive their own browsers
// through the real @playwright/mcp; neither sees the other's page, and a
// client's browser is gone when it leaves.
func TestPlaywrightPerClientBrowsers(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("Debian's chromium is not installed at %s (.ci/run installs it: apt-get install chromium)", chromiumPath)
	}
	pages := http.NewServeMux()
	for _, name := range []string{"alpha", "beta"} {
		pages.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "<!doctype html><html><head><title>Page %s</title></head><body><h1>%s</h1></body></html>", name, name)
		})
	}
	site := httptest.NewServer(pages)
	t.Cleanup(site.Close)

	out := t.TempDir()
	launch := filepath.Join(out, "playwright.json")
	if err := os.WriteFile(launch, []byte(`{"browser": {"launchOptions": {"args": ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := npmServer(t, "playwright", "playwright-mcp",
		"--headless", "--executable-path", chromiumPath, "--no-sandbox", "--isolated",
		"--output-dir", out, "--config", launch) +
		"env:\n  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: \"1\"\n" +
		"output_dir: " + out + "\n"
	dir := writeConfig(t, map[string]string{"tool/playwright.yaml": cfg})
	p := startHTTP(t, dir)

	type client struct {
		name string
		cs   *mcp.ClientSession
	}
	var clients []client
	for _, name := range []string{"alpha", "beta"} {
		cs, err := connectHTTP(t, p, "/mcp", http.Header{"X-Task-Id": {"task-" + name}})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, client{name, cs})
	}
	// Both navigate at the same time, then read their own page back.
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			res, err := c.cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "playwright__browser_navigate", Arguments: map[string]any{"url": site.URL + "/" + c.name}})
			if err != nil || res.IsError {
				t.Errorf("%s: navigate: %v %s", c.name, err, resultText(res))
			}
		})
	}
	wg.Wait()
	for _, c := range clients {
		res := callTool(t, c.cs, "playwright__browser_evaluate", map[string]any{"function": "() => document.title"})
		if got := resultText(res); !strings.Contains(got, "Page "+c.name) || strings.Contains(got, "Page "+other(c.name)) {
			t.Errorf("%s reads its page title as %q", c.name, got)
		}
	}

	// Each client has its own child; find the browser processes under it.
	children := perClientPIDs(t, p)
	if len(children) != 2 || children["task-alpha"] == children["task-beta"] {
		t.Fatalf("per-client children = %v, want one per client", children)
	}
	var alphaTree []int
	for _, c := range procTree(children["task-alpha"]) {
		alphaTree = append(alphaTree, c.pid)
	}
	browsers := 0
	for _, pid := range alphaTree {
		if strings.Contains(cmdline(pid), "chromium") {
			browsers++
		}
	}
	if browsers == 0 {
		t.Fatalf("no chromium process under client alpha's child %d (tree %v)", children["task-alpha"], alphaTree)
	}
	if err := clients[0].cs.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, children["task-alpha"])
	for _, pid := range alphaTree {
		waitGone(t, pid)
	}
	if !alive(children["task-beta"]) {
		t.Error("client beta's browser server died when alpha left")
	}
	res := callTool(t, clients[1].cs, "playwright__browser_evaluate", map[string]any{"function": "() => document.title"})
	if !strings.Contains(resultText(res), "Page beta") {
		t.Errorf("beta after alpha left: %q", resultText(res))
	}

	// The snapshot file the result links, on mcpmux's host, is a resource
	// client beta can read (output_dir, docs/protocol.md), over HTTP.
	res = callTool(t, clients[1].cs, "playwright__browser_navigate", map[string]any{"url": site.URL + "/beta"})
	uri := regexp.MustCompile(`\[Snapshot\]\((mcpmux://files/[^)]+)\)`).FindStringSubmatch(resultText(res))
	if uri == nil {
		t.Fatalf("navigate's snapshot link was not made a mcpmux://files/ resource: %s", resultText(res))
	}
	if l, ok := res.Content[len(res.Content)-1].(*mcp.ResourceLink); !ok || l.URI != uri[1] {
		t.Errorf("no resource_link item for %s: last item %#v", uri[1], res.Content[len(res.Content)-1])
	}
	rr, err := clients[1].cs.ReadResource(testContext(t), &mcp.ReadResourceParams{URI: uri[1]})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, `heading "beta"`) {
		t.Fatalf("resources/read %s: %+v, %v", uri[1], rr, err)
	}
}

func other(name string) string {
	if name == "alpha" {
		return "beta"
	}
	return "alpha"
}

// perClientPIDs reads /healthz: task → pid of its per-client child.
func perClientPIDs(t *testing.T, p *process) map[string]int {
	t.Helper()
	resp, err := http.Get(p.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Servers []struct {
			Connections []struct {
				Task string
				PID  int
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, s := range h.Servers {
		for _, c := range s.Connections {
			out[c.Task] = c.PID
		}
	}
	return out
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(b), "\x00", " ")
}
