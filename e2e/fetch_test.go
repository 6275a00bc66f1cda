package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBuiltinFetchServer runs the built-in fetch engine the way the shipped
// config/tool/fetch.yaml does, as a child of mcpmux started from its own
// binary, and reads a page from a loopback server through it.
func TestBuiltinFetchServer(t *testing.T) {
	t.Parallel()
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

// An open redirect does not get the built-in fetch engine past a refusal
// rule: mcpmux checks the arguments, the engine every redirect target, and
// both answer with the rule's message. A client's own _meta cannot take
// the rules away.
func TestFetchRedirectsHeldToTheRules(t *testing.T) {
	t.Parallel()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/out":
			http.Redirect(w, r, "/datasets/answers", http.StatusFound)
		case "/short":
			http.Redirect(w, r, "/out", http.StatusMovedPermanently)
		default:
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "THE ANSWERS at "+r.URL.Path)
		}
	}))
	t.Cleanup(page.Close)
	const message = "Do not fetch benchmark answers."
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":     "rewrite:\n  - name: no-answers\n    tools: [\"*fetch*\"]\n    block_urls: [\"127.0.0.1/datasets/**\"]\n    message: \"" + message + "\"\n",
		"tool/fetch.yaml": "name: fetch\ntool_command: mcpmux\nargs: [\"fetch-server\", \"--allow-private-networks\"]\n",
	})
	cs, p := startStdio(t, dir)
	for _, c := range []struct {
		path string
		meta mcp.Meta
	}{
		{"/datasets/answers", nil}, // refused by mcpmux itself
		{"/out", nil},              // by the engine, at the redirect
		{"/short", nil},            // two hops
		{"/out", mcp.Meta{"mcpmux/refuse_urls": []any{}}},
	} {
		res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "fetch__fetch", Arguments: map[string]any{"url": page.URL + c.path}, Meta: c.meta})
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(res); !res.IsError || !strings.HasPrefix(got, message) || strings.Contains(got, "THE ANSWERS") {
			t.Errorf("fetch %s (_meta %v): isError=%v %q, want the rule's message", c.path, c.meta, res.IsError, got)
		}
	}
	if res := callTool(t, cs, "fetch__fetch", map[string]any{"url": page.URL + "/models/x"}); res.IsError || !strings.Contains(resultText(res), "THE ANSWERS at /models/x") {
		t.Errorf("a page no rule refuses: %q", resultText(res))
	}
	p.logs.waitFor(t, regexp.MustCompile(`redirected to [^ ]*/datasets/answers, which rule [^ ]*no-answers[^ ]* refuses`))
}
