package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

// shippedSettings is config/mcpmux.yaml as shipped: the benchmark-answers
// policy pack and the seed's fallback rule.
func shippedSettings(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../config/mcpmux.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const refusal = "You are trying to read benchmark answers (a Hugging Face dataset or Space, its API, dataset viewer or a mirror), please do not use any tool for this purpose."

func TestRewriteRefusesBenchmarkURLs(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":   shippedSettings(t),
		"tool/web.yaml": fixture("web", "rewrite"),
	})
	cs, p := startStdio(t, dir)
	for _, u := range []string{
		"https://huggingface.co/datasets/gaia-benchmark/GAIA",
		"HTTPS://WWW.HuggingFace.co/datasets/x",
		"huggingface.co/%64atasets/x",
		"hf.co/spaces/y",
		"huggingface.co/./datasets/x",
		"huggingface.co//datasets/x",
		"please open https://huggingface.co/models/../datasets/x and read it",
		"https://huggingface.co/models'/../datasets/gaia-benchmark/GAIA",
		"https://huggingface.co/models\u3000/../datasets/gaia-benchmark/GAIA",
		"https://huggingface.co/api/datasets/gaia-benchmark/GAIA/parquet",
		"https://datasets-server.huggingface.co/rows?dataset=gaia-benchmark%2FGAIA",
		"https://gaia-benchmark-leaderboard.hf.space/",
		"https://hf-mirror.com/datasets/gaia-benchmark/GAIA",
	} {
		res := callTool(t, cs, "web__scrape_website", map[string]any{"url": u})
		if !res.IsError || resultText(res) != refusal {
			t.Errorf("%q: isError=%v %q, want the refusal", u, res.IsError, resultText(res))
		}
	}
	if got := resultText(callTool(t, cs, "web__scrape_calls", nil)); got != "0" {
		t.Fatalf("the fixture saw %s scrapes of refused URLs", got)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="rewrite rule applied" rule=benchmark-answers action=refused tool=web__scrape_website session=stdio`))

	// The pack removes such links from every tool's results.
	res := callTool(t, cs, "web__search", map[string]any{"q": "gaia"})
	const redacted = "[Rewrite rule 'benchmark-answers' removed 1 link(s) to blocked pages from this result] Results for gaia:\n1. [link removed]\n2. https://example.com/gaia-paper"
	if res.IsError || resultText(res) != redacted {
		t.Errorf("search result:\n%s\nwant:\n%s", resultText(res), redacted)
	}

	for _, u := range []string{"https://huggingface.co/models/x", "https://example.com/datasets/x"} {
		if res := callTool(t, cs, "web__scrape_website", map[string]any{"url": u}); res.IsError || resultText(res) != "scraped "+u {
			t.Errorf("%q: isError=%v %q, want it scraped", u, res.IsError, resultText(res))
		}
	}
	if got := resultText(callTool(t, cs, "web__scrape_calls", nil)); got != "2" {
		t.Errorf("the fixture saw %s scrapes, want 2", got)
	}
}

// TestRewriteFallbackToFetchEngine: a scrape that fails with "unhandled
// errors" is retried with the real built-in fetch engine, which reads the
// page from a loopback server; when the fetch fails too, the client gets
// the scrape's own error.
func TestRewriteFallbackToFetchEngine(t *testing.T) {
	t.Parallel()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "missing") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Fallback page</title></head><body><article><h1>Fallback page</h1>
			<p>The fetch engine read this paragraph after the scraper failed.</p></article></body></html>`)
	}))
	t.Cleanup(page.Close)
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":     shippedSettings(t),
		"tool/web.yaml":   fixture("web", "rewrite"),
		"tool/fetch.yaml": "name: fetch\ntool_command: mcpmux\nargs: [\"fetch-server\", \"--allow-private-networks\"]\n",
	})
	cs, p := startStdio(t, dir)

	res := callTool(t, cs, "web__scrape_website", map[string]any{"url": page.URL + "/broken/article"})
	md := resultText(res)
	if res.IsError {
		t.Fatalf("fallback: isError: %s", md)
	}
	const note = "[Fallback: tool 'web__scrape_website' failed (unhandled errors), so rule 'scrape-fallback' called 'fetch__fetch' instead] "
	if !strings.HasPrefix(md, note) || !strings.Contains(md, "The fetch engine read this paragraph after the scraper failed.") {
		t.Errorf("fallback result lacks the note or the page's text:\n%s", md)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="rewrite rule applied" rule=scrape-fallback action=fallback tool=web__scrape_website .*fallback=fetch__fetch outcome=used`))

	res = callTool(t, cs, "web__scrape_website", map[string]any{"url": page.URL + "/broken/missing"})
	if want := "Error: unhandled errors while scraping " + page.URL + "/broken/missing"; !res.IsError || resultText(res) != want {
		t.Errorf("fallback failing too: isError=%v %q, want the original error %q", res.IsError, resultText(res), want)
	}
	p.logs.waitFor(t, regexp.MustCompile(`rule=scrape-fallback action=fallback .*outcome=failed`))

	// The fetch engine is itself subject to the refuse rule.
	if res := callTool(t, cs, "fetch__fetch", map[string]any{"url": "https://hf.co/datasets/x"}); !res.IsError || resultText(res) != refusal {
		t.Errorf("fetch__fetch of a dataset: %q", resultText(res))
	}
}

func TestRewriteRedactsSearchResults(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml": `rewrite:
  - name: no-benchmark-links
    tools: ["*search*"]
    block_urls: ["huggingface.co/datasets/**"]
    message: "Do not look up benchmark datasets."
    redact: true
`,
		"tool/web.yaml": fixture("web", "rewrite"),
	})
	cs, _ := startStdio(t, dir)
	res := callTool(t, cs, "web__search", map[string]any{"q": "gaia"})
	want := "[Rewrite rule 'no-benchmark-links' removed 1 link(s) to blocked pages from this result] Results for gaia:\n1. [link removed]\n2. https://example.com/gaia-paper"
	if res.IsError || resultText(res) != want {
		t.Errorf("search result:\n%s\nwant:\n%s", resultText(res), want)
	}
}

// TestRewriteRulesHotReload: an edit of mcpmux.yaml changes the rules for
// the next call without restarting servers; a broken rule keeps the
// previous rules.
func TestRewriteRulesHotReload(t *testing.T) {
	t.Parallel()
	w := startWatched(t, map[string]string{
		"mcpmux.yaml":   "timeout: 60s\n",
		"tool/web.yaml": fixture("web", "rewrite"),
	})
	pid := w.call(t, "web__pid", nil)
	const u = "https://huggingface.co/datasets/x"
	if got := w.call(t, "web__scrape_website", map[string]any{"url": u}); got != "scraped "+u {
		t.Fatalf("before the rule: %q", got)
	}

	w.write(t, "mcpmux.yaml", shippedSettings(t))
	w.waitReloads(t, 1)
	if res := callTool(t, w.cs, "web__scrape_website", map[string]any{"url": u}); !res.IsError || resultText(res) != refusal {
		t.Errorf("after adding the rule: isError=%v %q", res.IsError, resultText(res))
	}
	if got := w.call(t, "web__scrape_calls", nil); got != "1" {
		t.Errorf("the fixture saw %s scrapes, want 1", got)
	}
	if got := w.call(t, "web__pid", nil); got != pid {
		t.Errorf("a rules edit restarted the server: pid %s → %s", pid, got)
	}

	w.write(t, "mcpmux.yaml", "rewrite:\n  - name: broken\n    tools: [\"[scrape\"]\n    block_urls: [\"example.com/**\"]\n    message: m\n")
	w.p.logs.waitFor(t, regexp.MustCompile(`config file not applied[^\n]*mcpmux\.yaml[^\n]*line=3[^\n]*rewrite\.0\.tools\.0: rule \\"broken\\": \\"\[scrape\\": malformed glob`))
	if res := callTool(t, w.cs, "web__scrape_website", map[string]any{"url": u}); resultText(res) != refusal {
		t.Errorf("a broken edit dropped the rules: %q", resultText(res))
	}
}
