package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// screenshotEnv names a file to copy the page's screenshot to: how
// docs/journal-report.png is made.
const screenshotEnv = "MCPMUX_JOURNAL_SCREENSHOT"

// TestJournalPageInChromium: a journal of two tasks with every outcome,
// made through mcpmux, summarised by `mcpmux journal`, and its HTML page
// rendered by Debian's headless chromium: every task is on it, and every
// outcome's colour on screen.
func TestJournalPageInChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("Debian's chromium is not installed at %s (.ci/run installs it: apt-get install chromium)", chromiumPath)
	}
	t.Parallel()
	work := t.TempDir()
	journalDir := filepath.Join(work, "journal")
	p := startHTTP(t, writeConfig(t, map[string]string{
		"tool/web.yaml": fixture("web", "rewrite"),
		"tool/kb.yaml":  oracle("Paris", filepath.Join(work, "calls"), "tool_timeouts: {block: 300ms}"),
		"mcpmux.yaml": fmt.Sprintf(`journal: {dir: %q}
rewrite:
  - name: no-benchmark-answers
    tools: ["*scrape*"]
    block_urls: ["huggingface.co/datasets/**"]
    message: "Refused: do not read benchmark answers."
  - name: scrape-fallback
    tools: ["*scrape*"]
    on_error: "unhandled errors"
    fallback: {tool: "kb__echo", args: {text: "{{url}}"}}
`, journalDir),
	}))
	one := taskClient(t, p, "gaia-001")
	toolNames(t, one)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"kb__ask", map[string]any{"q": "What is the capital of France?"}},
		{"web__search", map[string]any{"q": "GAIA benchmark"}},
		{"web__scrape_website", map[string]any{"url": "https://example.com/gaia-paper"}},
		{"web__scrape_website", map[string]any{"url": "https://example.com/broken/page"}},
		{"web__scrape_website", map[string]any{"url": "https://huggingface.co/datasets/gaia-benchmark/GAIA"}},
		{"ask", map[string]any{"q": "And of Spain?"}},
		{"kb__block", map[string]any{"file": filepath.Join(work, "never")}},
		{"kb__lookup", map[string]any{"q": "x"}},
		{"kb__ask", map[string]any{"q": "Final answer?"}},
	} {
		callTool(t, one, c.tool, c.args)
	}
	two := taskClient(t, p, "gaia-002")
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { callTool(t, two, "kb__ask", map[string]any{"q": fmt.Sprint("part ", i)}) })
	}
	wg.Go(func() { callTool(t, two, "kb__block", map[string]any{"file": filepath.Join(work, "never")}) })
	wg.Wait()
	callTool(t, two, "web__search", map[string]any{"q": "answer"})
	stopHTTP(t, p)

	page := filepath.Join(work, "journal.html")
	out, errOut, code := runMcpmux(t, "journal", journalDir, "--html", page)
	if code != 0 {
		t.Fatalf("mcpmux journal: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"task gaia-001: 9 calls, 3 errors, 1 refused, 1 fallback, 1 corrected, 1 timeout", "task gaia-002: 5 calls, 1 error,", "kb__block"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	js, _, code := runMcpmux(t, "journal", "--json", journalDir)
	var summary struct{ Tasks []struct{ Task string } }
	if err := json.Unmarshal([]byte(js), &summary); code != 0 || err != nil || len(summary.Tasks) != 2 {
		t.Errorf("--json: exit %d, %v:\n%s", code, err, js)
	}

	// Rendered: the DOM after loading, and a screenshot.
	dom := chromium(t, work, "--dump-dom", "file://"+page)
	for _, want := range []string{`id="task-gaia-001"`, `id="task-gaia-002"`, "<svg", `class="o-timeout`, "What is the capital of France?"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %s", want)
		}
	}
	shot := filepath.Join(work, "journal.png")
	chromium(t, work, "--screenshot="+shot, "--window-size=1280,1400", "--hide-scrollbars", "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	seen := colours(img)
	for outcome, rgb := range map[string][3]uint8{"ok": {0x2e, 0x9e, 0x5b}, "corrected": {0xc9, 0xa2, 0x27}, "fallback": {0x8e, 0x44, 0xad}, "error": {0xd6, 0x45, 0x41}, "timeout": {0x7b, 0x1f, 0x1f}, "refused": {0xe6, 0x7e, 0x22}} {
		if seen[rgb] < 100 {
			t.Errorf("the screenshot has %d pixels of %s's colour %x", seen[rgb], outcome, rgb)
		}
	}
}

// TestJournalPageOf165Tasks: a generated journal of a whole benchmark
// (165 tasks, as GAIA's validation set, each with its calls, failures,
// costs and idle gaps) summarised by `mcpmux journal` and rendered by
// headless chromium: the table of tasks comes first with every task in
// it, the script sorts it errors first, and each task has its section.
// docs/journal-report.png is its screenshot.
func TestJournalPageOf165Tasks(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("Debian's chromium is not installed at %s (.ci/run installs it: apt-get install chromium)", chromiumPath)
	}
	t.Parallel()
	work := t.TempDir()
	dir := filepath.Join(work, "journal")
	worst := generateBenchmarkJournal(t, dir, 165)

	page := filepath.Join(work, "journal.html")
	out, errOut, code := runMcpmux(t, "journal", dir, "--html", page)
	if code != 0 {
		t.Fatalf("mcpmux journal: exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "165 tasks, ") || strings.Contains(out, "(none)") {
		t.Errorf("summary:\n%.600s", out)
	}
	js, _, _ := runMcpmux(t, "journal", dir, "--json", "--sort", "errors")
	var summary struct {
		Tasks []struct {
			Task string
			Cost map[string]float64
		}
		Cost map[string]float64
	}
	if err := json.Unmarshal([]byte(js), &summary); err != nil || len(summary.Tasks) != 165 || summary.Tasks[0].Task != worst || summary.Cost["USD"] <= 0 {
		t.Fatalf("--json --sort errors: %v, %d tasks, first %+v, cost %v", err, len(summary.Tasks), summary.Tasks[0], summary.Cost)
	}
	if strings.Contains(js, "0001-01-01") {
		t.Error("a zero time in --json")
	}

	// Sorted by the page's script: the URL's #errors-first.
	dom := chromium(t, work, "--dump-dom", "file://"+page+"#errors-first")
	table := dom[strings.Index(dom, `<table class="tasks"`):]
	table = table[:strings.Index(table, "</table>")]
	if n := strings.Count(table, "<tr"); n != 166 {
		t.Errorf("the table of tasks has %d rows, want 165 and its head", n)
	}
	if first := table[strings.Index(table, "<tbody>"):]; !strings.Contains(first[:min(len(first), 300)], worst) {
		t.Errorf("errors first: the first row is not %s: %.300s", worst, first)
	}
	if n := strings.Count(dom, `<section class="task"`); n != 165 {
		t.Errorf("%d task sections", n)
	}
	if !strings.Contains(dom, `<g class="gap">`) {
		t.Error("no idle gap drawn as a break")
	}
	shot := filepath.Join(work, "journal.png")
	chromium(t, work, "--screenshot="+shot, "--window-size=1280,1500", "--hide-scrollbars", "file://"+page+"#errors-first")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if seen := colours(img); seen[[3]uint8{0xd6, 0x45, 0x41}] < 100 {
		t.Errorf("the screenshot shows no task marked with errors (%d pixels)", seen[[3]uint8{0xd6, 0x45, 0x41}])
	}
	if to := os.Getenv(screenshotEnv); to != "" {
		b, _ := os.ReadFile(shot)
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// generateBenchmarkJournal writes a journal of n tasks as mcpmux writes
// them, varied by a fixed seed: sessions with idle gaps, errors,
// refusals, fallbacks, corrections, drift, replayed and priced calls,
// and the default task's file with only a catalog. It returns the task
// with the most errors.
func generateBenchmarkJournal(t *testing.T, dir string, n int) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(32, 165))
	t0 := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	tools := []struct{ tool, server string }{{"search__google_search", "search"}, {"web__scrape_website", "web"}, {"code__run_python", "code"}, {"reader__read_file", "reader"}}
	line := func(v map[string]any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	catalog := line(map[string]any{"kind": "catalog", "time": t0, "task": "", "session": "s0", "profile": "", "servers": []any{}})
	if err := os.WriteFile(filepath.Join(dir, "_default.jsonl"), catalog, 0o600); err != nil {
		t.Fatal(err)
	}
	worst, most := "", -1
	for i := range n {
		task := fmt.Sprintf("gaia-%03d", i+1)
		var b bytes.Buffer
		at := t0.Add(time.Duration(i) * 40 * time.Second)
		errs := 0
		for j := range 2 + rng.IntN(9) {
			tl := tools[rng.IntN(len(tools))]
			ms := 50 + rng.Float64()*float64(rng.IntN(4000))
			l := map[string]any{"kind": "call", "time": at, "task": task, "session": fmt.Sprint("s", i), "profile": "", "tool": tl.tool, "server": tl.server,
				"arguments": map[string]any{"q": fmt.Sprintf("question %d step %d", i, j)}, "duration_ms": ms,
				"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "answer " + task}}}}
			switch r := rng.IntN(20); {
			case r == 0:
				l["is_error"], l["rule"], l["action"] = true, "no-benchmark-answers", "refused"
			case r < 3:
				l["is_error"], l["failure"] = true, "failed"
			case r == 3:
				l["is_error"], l["failure"], l["timeout"] = true, "timeout", "30s"
			case r == 4:
				l["rule"], l["action"] = "scrape-fallback", "fallback"
			case r == 5:
				l["corrected_to"] = tl.tool
			case r == 6:
				l["drift"] = "description"
			}
			if l["is_error"] == true {
				errs++
			}
			if tl.server == "search" {
				l["cost"] = map[string]any{"amount": 0.001, "currency": "USD"}
			}
			b.Write(line(l))
			at = at.Add(time.Duration(ms)*time.Millisecond + time.Duration(rng.IntN(1500))*time.Millisecond)
			if rng.IntN(12) == 0 {
				at = at.Add(18 * time.Second) // the agent thinks, or a second session starts
			}
		}
		if errs > most {
			worst, most = task, errs
		}
		if err := os.WriteFile(filepath.Join(dir, task+".jsonl"), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return worst
}

// chromium runs Debian's chromium headless on a page and returns what it
// prints. --no-sandbox because tests may run as root; the
// --disable-*-networking, -component-update, -sync and -quic flags keep it
// from reaching for the network, which it would otherwise flood with
// refused connections where there is none.
func chromium(t *testing.T, work string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(testContext(t), 45*time.Second)
	defer cancel()
	profile, err := os.MkdirTemp(work, "chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, chromiumPath, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + profile}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// colours counts the pixels of each colour of an image.
func colours(img image.Image) map[[3]uint8]int {
	out := map[[3]uint8]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			out[[3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}]++
		}
	}
	return out
}
