package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
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
	for _, want := range []string{"task gaia-001: 9 calls, 3 errors, 1 refused, 1 fallbacks, 1 corrected, 1 timeouts", "task gaia-002: 5 calls, 1 errors", "kb__block"} {
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
	if to := os.Getenv(screenshotEnv); to != "" {
		b, _ := os.ReadFile(shot)
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
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
