package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/journal"
)

// writeJournal writes lines as the pipeline would: two tasks, with every
// outcome, a replayed call and a page whose text is HTML.
func writeJournal(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	lines := []journal.CallLine{
		{Tool: "web__search", Server: "web", DurationMS: 800},
		{Tool: "web__search", Server: "web", DurationMS: 1200, Replayed: true},
		{Tool: "web__scrape", Server: "web", DurationMS: 0.2, Rule: "no-benchmark-answers", Action: "refused", IsError: true},
		{Tool: "web__scrape", Server: "web", DurationMS: 3000, Rule: "scrape-fallback", Action: "fallback"},
		{Tool: "scrape", Server: "web", DurationMS: 500, CorrectedTo: "web__scrape"},
		{Tool: "code__run", Server: "code", DurationMS: 30000, Failure: "timeout", Timeout: "30s", IsError: true},
		{Tool: "code__run", Server: "code", DurationMS: 100, IsError: true, Failure: "lost"},
	}
	write := func(task string, ls []journal.CallLine) {
		var b bytes.Buffer
		for i, l := range ls {
			l.Header = journal.Header{Kind: journal.KindCall, Time: t0.Add(time.Duration(i) * 700 * time.Millisecond), Task: task, Session: "s"}
			l.Arguments = json.RawMessage(`{"q":"<script>alert(1)</script>"}`)
			l.Result = journal.EncodeResult(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "<img src=x onerror=alert(1)> result " + l.Tool}}})
			enc, _ := json.Marshal(l)
			b.Write(append(enc, '\n'))
		}
		b.WriteString("{broken\n")
		if err := os.WriteFile(filepath.Join(dir, journal.FileStem(task)+journal.Ext), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("gaia-1", lines)
	write("gaia/2", lines[:2])
	return dir
}

func TestSummary(t *testing.T) {
	r, err := Read(writeJournal(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tasks) != 2 || r.Unreadable != 2 {
		t.Fatalf("%d tasks, %d unreadable", len(r.Tasks), r.Unreadable)
	}
	g := r.Tasks[0]
	if g.Name != "gaia-1" || g.Calls != 7 || g.Errors != 3 || g.Refusals != 1 || g.Fallbacks != 1 || g.Corrections != 1 || g.Timeouts != 1 || g.Replayed != 1 {
		t.Errorf("task %+v", g)
	}
	var tools []string
	for _, tool := range g.Tools {
		tools = append(tools, tool.Tool)
	}
	if strings.Join(tools, ",") != "code__run,scrape,web__scrape,web__search" || g.Tools[0].SlowestMS != 30000 || g.Tools[0].TotalMS != 30100 || g.Tools[0].Errors != 2 {
		t.Errorf("tools %v, first %+v", tools, g.Tools[0])
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TASK    CALLS  ERRORS", "gaia-1  7      3       1        1          1          0      -     33.5s",
		"task gaia-1: 7 calls, 3 errors, 1 refused, 1 fallback, 1 corrected, 1 timeout, 1 replayed", "code__run    2      2       30.1s  30s", "task gaia/2: 2 calls, 0 errors, 1 replayed", "2 lines could not be read",
		"  refused by no-benchmark-answers: web__scrape {"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Tasks []struct {
			Task  string
			Calls int
			Tools []struct{ Tool string }
		}
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Tasks) != 2 || back.Tasks[1].Calls != 2 || len(back.Tasks[0].Tools) != 4 {
		t.Errorf("JSON %s: %v", js.String(), err)
	}
}

// The page is one file: nothing to fetch, nothing from the calls that a
// browser would run, a section with a timeline per task.
func TestHTMLIsSelfContained(t *testing.T) {
	r, err := Read(writeJournal(t))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// One script, the template's own: nothing of the journal in it.
	script := regexp.MustCompile(`(?s)<script>.*?</script>`)
	if got := script.FindAllString(page, -1); len(got) != 1 || got[0] != script.FindString(pageTemplate) {
		t.Errorf("scripts on the page: %q", got)
	}
	rest := script.ReplaceAllString(page, "")
	for _, bad := range []string{"<script", "<img", "<link", "<iframe", "url(", "@import"} {
		if strings.Contains(rest, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if m := regexp.MustCompile(`<[a-z]+[^>]*\s(src|href)="[^#]`).FindString(page); m != "" {
		t.Errorf("page refers to something outside it: %s", m)
	}
	if n := strings.Count(page, `<section class="task"`); n != 2 {
		t.Errorf("%d task sections", n)
	}
	if n := strings.Count(page, "<rect "); n != 9 {
		t.Errorf("%d timeline bars, want 9", n)
	}
	for _, o := range outcomes {
		if !regexp.MustCompile(`<rect class="o-` + o).MatchString(page) {
			t.Errorf("no bar of outcome %s", o)
		}
	}
	if !strings.Contains(page, "&lt;img src=x onerror=alert(1)&gt; result") {
		t.Error("results are not shown escaped")
	}
}

// The default task's file holding only a catalog is no task; a task with
// calls hours apart keeps each readable, the gap drawn as a break; --json
// has no zero times; errors first on request.
func TestReportShape(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	put := func(task string, lines ...any) {
		var b bytes.Buffer
		for _, l := range lines {
			enc, _ := json.Marshal(l)
			b.Write(append(enc, '\n'))
		}
		if err := os.WriteFile(filepath.Join(dir, journal.FileStem(task)+journal.Ext), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	call := func(task string, at time.Duration, ms float64, isError bool) journal.CallLine {
		return journal.CallLine{Header: journal.Header{Kind: journal.KindCall, Time: t0.Add(at), Task: task}, Tool: "kb__ask", Server: "kb", DurationMS: ms, IsError: isError,
			Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`{"content":[]}`)}
	}
	put("", journal.CatalogLine{Header: journal.Header{Kind: journal.KindCatalog, Time: t0}, Servers: []journal.Server{}})
	put("listed-only", journal.CatalogLine{Header: journal.Header{Kind: journal.KindCatalog, Time: t0, Task: "listed-only"}, Servers: []journal.Server{}})
	put("apart", call("apart", 0, 800, false), call("apart", time.Second, 500, false), call("apart", 18*time.Second, 900, true))
	put("fine", call("fine", time.Minute, 100, false))
	r, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, task := range r.Tasks {
		names = append(names, task.Name)
	}
	if strings.Join(names, ",") != "listed-only,apart,fine" {
		t.Errorf("tasks %v", names)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), "0001-01-01") {
		t.Errorf("a zero time in --json:\n%s", js.String())
	}
	if !r.Sort(SortErrors) || r.Tasks[0].Name != "apart" || r.Sort("loudest") {
		t.Error("errors first")
	}

	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 tasks, 4 calls", "task fine: 1 call, 0 errors;", "task listed-only: 0 calls, 0 errors; no calls, 1 tool list recorded"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}

	// The 16 s gap is a break: the calls before it take most of the width.
	p := taskView(r.Tasks[0])
	if len(p.Timeline.Breaks) != 1 || !strings.Contains(p.Timeline.Breaks[0].Label, "16.5s idle") {
		t.Fatalf("breaks %+v", p.Timeline.Breaks)
	}
	if first := p.Timeline.Bars[0]; first.W < 200 {
		t.Errorf("the first call is %.1f wide of %d", first.W, timelineWidth)
	}
	if last := p.Timeline.Bars[2]; last.X+last.W > timelineWidth+minBarWidth || last.W < 200 {
		t.Errorf("last bar %+v", last)
	}
}
