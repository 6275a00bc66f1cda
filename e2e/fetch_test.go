package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestBuiltinFetchServer runs the built-in fetch engine the way the shipped
// config/tool/fetch.yaml does, as a child of mcpmux started from its own
// binary, and reads a page from a loopback server through it.
func TestBuiltinFetchServer(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/article" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Fetch e2e</title><script>var tracking = "SCRIPT-TEXT";</script></head><body>
			<nav><a href="/">NAV-TEXT Home</a></nav>
			<article><h1>Fetch e2e</h1>
			<p>The built-in fetch engine turns this paragraph into Markdown, with <em>emphasis</em> and a <a href="/next">relative link</a>.</p>
			</article></body></html>`)
	}))
	t.Cleanup(page.Close)

	dir := writeConfig(t, map[string]string{
		"tool/fetch.yaml": "name: fetch\ntool_command: mcpmux\nargs: [\"fetch-server\", \"--allow-private-networks\"]\n",
	})
	cs, _ := startStdio(t, dir)
	if names := toolNames(t, cs); !slices.Contains(names, "fetch__fetch") {
		t.Fatalf("tool list %v lacks fetch__fetch", names)
	}

	res := callTool(t, cs, "fetch__fetch", map[string]any{"url": page.URL + "/article"})
	md := resultText(res)
	if res.IsError {
		t.Fatalf("fetch__fetch: isError: %s", md)
	}
	for _, want := range []string{"# Fetch e2e", "into Markdown, with *emphasis*", "[relative link](" + page.URL + "/next)"} {
		if !strings.Contains(md, want) {
			t.Errorf("result lacks %q:\n%s", want, md)
		}
	}
	for _, noise := range []string{"NAV-TEXT", "SCRIPT-TEXT"} {
		if strings.Contains(md, noise) {
			t.Errorf("result contains %q:\n%s", noise, md)
		}
	}

	// A failure is an isError result that passes through mcpmux as such.
	res = callTool(t, cs, "fetch__fetch", map[string]any{"url": page.URL + "/missing"})
	if text := resultText(res); !res.IsError || !strings.Contains(text, "HTTP 404 Not Found") {
		t.Errorf("fetch of a missing page: isError=%v %q, want an isError with the status", res.IsError, text)
	}
}
