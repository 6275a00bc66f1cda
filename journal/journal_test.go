package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// readLines decodes every line of a file, failing on any that is not
// whole JSON.
func readLines(t *testing.T, path string) []Line {
	t.Helper()
	var out []Line
	err := Scan(path, func(_ int64, b []byte) error {
		var l Line
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("line %d is not JSON (%v): %s", len(out)+1, err, b)
		}
		out = append(out, l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newJournal(t *testing.T, maxBytes int64) (*Journal, string, *atomic.Int32) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "journal")
	errs := new(atomic.Int32)
	j := New(&Options{OnError: func() { errs.Add(1) }})
	j.Configure(dir, maxBytes)
	t.Cleanup(j.Close)
	return j, dir, errs
}

func TestCallLine(t *testing.T) {
	j, dir, errs := newJournal(t, 1<<20)
	c := j.Begin(Start{Task: "task-1", Session: "s1", Profile: "p", Client: &Client{Name: "agent", Version: "2"}, Tool: "web_scrape", Arguments: json.RawMessage(`{"url": "https://x/broken"}`)})
	c.Routed("web", "web__scrape")
	c.Answered("web__scrape", json.RawMessage(`{"url": "https://x/broken"}`), EncodeResult(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "unhandled errors"}}}), false)
	// A fallback: a derived call's hits and answers count, its route not.
	d := c.Derived()
	d.Routed("fetch", "")
	d.Answered("fetch__fetch", json.RawMessage(`{"url":"https://x/broken"}`), EncodeResult(testkit.TextResult("page")), true)
	d.Failed("timeout", time.Second)
	c.Hit("scrape-fallback", "fallback")
	d.End(encoded(testkit.TextResult("ignored")))
	c.End(encoded(testkit.TextResult("[Fallback: ...] page")))

	lines := readLines(t, filepath.Join(dir, "task-1.jsonl"))
	if len(lines) != 1 || errs.Load() != 0 {
		t.Fatalf("%d lines, %d errors", len(lines), errs.Load())
	}
	l := lines[0]
	if l.Kind != KindCall || l.Task != "task-1" || l.Session != "s1" || l.Profile != "p" || l.Client.Name != "agent" || l.Client.Version != "2" ||
		l.Tool != "web_scrape" || l.Server != "web" || l.CorrectedTo != "web__scrape" || l.Rule != "scrape-fallback" || l.Action != "fallback" ||
		l.Hits != nil || l.Failure != "" || !l.Replayed || l.IsError || time.Since(l.Time) > time.Minute || l.DurationMS <= 0 {
		t.Errorf("line: %+v", l)
	}
	if string(l.Arguments) != `{"url": "https://x/broken"}` {
		t.Errorf("arguments %s", l.Arguments)
	}
	if res, err := DecodeResult(l.Result); err != nil || res.Content[0].(*mcp.TextContent).Text != "[Fallback: ...] page" {
		t.Errorf("result %s: %v", l.Result, err)
	}
	if l.Answers == nil || len(*l.Answers) != 2 || (*l.Answers)[1].Tool != "fetch__fetch" {
		t.Errorf("answers: %+v", l.Answers)
	}
	st, err := os.Stat(filepath.Join(dir, "task-1.jsonl"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("file mode: %v %v", st.Mode(), err)
	}
}

// The usual call: one answer, passed on as it came, is not written twice.
// Arguments a client sent over several lines still make one line.
func TestMultilineArguments(t *testing.T) {
	j, dir, _ := newJournal(t, 1<<20)
	c := j.Begin(Start{Tool: "x", Arguments: json.RawMessage("{\n  \"a\": \"b\\nc\"\r\n}")})
	c.End(encoded(testkit.TextResult("a")))
	if l := readLines(t, filepath.Join(dir, DefaultTask+Ext)); len(l) != 1 || string(l[0].Arguments) != `{"a":"b\nc"}` {
		t.Errorf("lines %+v", l)
	}
}

func TestPlainCallHasNoAnswers(t *testing.T) {
	j, dir, _ := newJournal(t, 1<<20)
	args := json.RawMessage(`{"text":"hi"}`)
	c := j.Begin(Start{Tool: "fx__echo", Arguments: args})
	c.Routed("fx", "")
	res := testkit.TextResult("hi")
	c.Answered("fx__echo", args, EncodeResult(res), false)
	c.End(encoded(res))
	// A refusal: no server answered.
	r := j.Begin(Start{Tool: "fx__scrape", Arguments: args})
	r.Routed("fx", "")
	r.Hit("no-benchmark-answers", "refused")
	r.End(encoded(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}))

	lines := readLines(t, filepath.Join(dir, DefaultTask+Ext))
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	if lines[0].Answers != nil || lines[0].Task != "" {
		t.Errorf("plain call: answers %+v", lines[0].Answers)
	}
	if lines[1].Answers == nil || len(*lines[1].Answers) != 0 || !lines[1].IsError || lines[1].Action != "refused" {
		t.Errorf("refusal: %+v", lines[1])
	}
	raw, _ := os.ReadFile(filepath.Join(dir, DefaultTask+Ext))
	if !bytes.Contains(raw, []byte(`"answers":[]`)) || !bytes.Contains(raw, []byte(`"is_error":false`)) {
		t.Errorf("file:\n%s", raw)
	}
}

// 64 writers of one task, lines of very different sizes: every line of
// the file is whole.
func TestConcurrentLinesAreWhole(t *testing.T) {
	j, dir, errs := newJournal(t, 1<<30)
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := range 10 {
				payload := strings.Repeat(fmt.Sprint(w), 1+(w*i*997)%20000)
				c := j.Begin(Start{Task: "t", Tool: "x", Arguments: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))})
				c.End(encoded(testkit.TextResult(payload)))
			}
		})
	}
	wg.Wait()
	lines := readLines(t, filepath.Join(dir, "t"+Ext))
	if len(lines) != 64*10 || errs.Load() != 0 {
		t.Fatalf("%d lines, want %d; %d errors", len(lines), 64*10, errs.Load())
	}
}

func TestRotation(t *testing.T) {
	j, dir, errs := newJournal(t, 4096)
	for i := range 40 {
		c := j.Begin(Start{Task: "t", Tool: "x", Arguments: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		c.End(encoded(testkit.TextResult(strings.Repeat("a", 300))))
	}
	cur, old := filepath.Join(dir, "t"+Ext), filepath.Join(dir, "t"+Ext+".1")
	for _, p := range []string{cur, old} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 4096 || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %v", p, st.Size(), st.Mode())
		}
	}
	a, b := readLines(t, old), readLines(t, cur)
	var last int
	if err := json.Unmarshal(b[len(b)-1].Arguments, &struct{ I *int }{&last}); err != nil || last != 39 {
		t.Errorf("last line %s", b[len(b)-1].Arguments)
	}
	if len(a)+len(b) >= 40 || len(a) == 0 || errs.Load() != 0 {
		t.Errorf("%d + %d lines kept of 40 (older ones rotated away), %d errors", len(a), len(b), errs.Load())
	}
	// The new file begins with the catalog of the calls' profile.
	j.Configure(dir+"-cat", 4096)
	for i := range 20 {
		c := j.Begin(Start{Task: "t", Tool: "x", Catalog: func() []Server { return []Server{{Name: "s"}} }, Arguments: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		c.End(encoded(testkit.TextResult(strings.Repeat("a", 300))))
	}
	for _, p := range []string{filepath.Join(dir+"-cat", "t"+Ext), filepath.Join(dir+"-cat", "t"+Ext+".1")} {
		if l := readLines(t, p); l[0].Kind != KindCatalog {
			t.Errorf("%s begins with %+v", p, l[0])
		}
	}
	files, skipped, err := Files(dir)
	if err != nil || len(skipped) != 0 || len(files) != 2 || files[0] != old || files[1] != cur {
		t.Errorf("Files = %v, %v", files, err)
	}
}

// A journal that cannot be written is logged once and counted per line;
// the writer carries on, and resumes when it can write again.
func TestUnwritableJournal(t *testing.T) {
	var logBuf testkit.Buffer
	errs := new(atomic.Int32)
	j := New(&Options{Log: slog.New(slog.NewTextHandler(&logBuf, nil)), OnError: func() { errs.Add(1) }})
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	j.Configure(filepath.Join(blocker, "journal"), 1<<20) // a directory below a regular file
	for range 3 {
		j.Begin(Start{Task: "t", Tool: "x"}).End(encoded(testkit.TextResult("a")))
	}
	if errs.Load() != 3 || strings.Count(logBuf.String(), "cannot write") != 1 {
		t.Errorf("%d errors; log:\n%s", errs.Load(), logBuf.String())
	}

	// Disk full: the task's file is /dev/full.
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	if err := os.Symlink("/dev/full", filepath.Join(dir, "full"+Ext)); err != nil {
		t.Fatal(err)
	}
	j.Configure(dir, 1<<20)
	j.Begin(Start{Task: "full", Tool: "x"}).End(encoded(testkit.TextResult("a")))
	j.Begin(Start{Task: "ok", Tool: "x"}).End(encoded(testkit.TextResult("a")))
	if errs.Load() != 4 {
		t.Errorf("%d errors after a full disk", errs.Load())
	}
	if lines := readLines(t, filepath.Join(dir, "ok"+Ext)); len(lines) != 1 {
		t.Errorf("other task: %d lines", len(lines))
	}
	if err := os.Remove(filepath.Join(dir, "full"+Ext)); err != nil {
		t.Fatal(err)
	}
	j.Begin(Start{Task: "full", Tool: "x"}).End(encoded(testkit.TextResult("a")))
	if errs.Load() != 4 || !strings.Contains(logBuf.String(), "writing again") {
		t.Errorf("%d errors after the disk came back; log:\n%s", errs.Load(), logBuf.String())
	}
}

func TestSecretsAreMasked(t *testing.T) {
	m := &logs.Masker{}
	m.Add("sk-live-123456", "true", `back\`)
	dir := t.TempDir()
	j := New(&Options{Log: logs.Masked(slog.New(slog.DiscardHandler), m), Mask: m})
	j.Configure(dir, 1<<20)
	c := j.Begin(Start{Task: "t", Tool: "x", Client: &Client{Name: "sk-live-123456"}, Arguments: json.RawMessage(`{"key":"sk-live-123456","ok":true,"p":"a\\back\\\"q"}`)})
	c.Answered("x", json.RawMessage(`{"key":"sk-live-123456"}`), EncodeResult(testkit.TextResult("your key is sk-live-123456")), false)
	c.End(encoded(testkit.TextResult("your key is sk-live-123456")))
	raw, err := os.ReadFile(filepath.Join(dir, "t"+Ext))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("sk-live")) {
		t.Errorf("secret written:\n%s", raw)
	}
	l := readLines(t, filepath.Join(dir, "t"+Ext))[0]
	var args map[string]any
	if err := json.Unmarshal(l.Arguments, &args); err != nil || args["ok"] != true || args["key"] != logs.MaskText {
		t.Errorf("arguments %s: %v", l.Arguments, err)
	}
	if l.Client.Name != logs.MaskText || l.IsError {
		t.Errorf("line %+v", l)
	}
}

// TestEscapedSecretsAreMasked: a secret a JSON encoder wrote with
// escapes (\u00e4 for a non-ASCII character, \/ for a slash, a surrogate
// pair) is masked as a decoder reads it (issue 27, item 8).
func TestEscapedSecretsAreMasked(t *testing.T) {
	m := &logs.Masker{}
	m.Add("pässwört-1", "tok/en/42", "key-😀-9")
	for _, raw := range []string{
		`{"a":"p\u00e4ssw\u00f6rt-1"}`,
		`{"a":"x tok\/en\/42 y"}`,
		`{"a":"\u006b\u0065\u0079-\ud83d\ude00-9"}`,
		`["tok\u002fen/42"]`,
		`{"p\u00e4ssw\u00f6rt-1":1}`,
	} {
		got := maskJSON(m, json.RawMessage(raw))
		var v any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if dec := fmt.Sprint(v); strings.Contains(dec, "pässwört") || strings.Contains(dec, "tok/en") || strings.Contains(dec, "😀") {
			t.Errorf("maskJSON(%s) = %s: the secret decodes", raw, got)
		}
	}
	// Escapes without a secret: the value comes back as it was.
	if raw := `{"a":"line\nnext \u00e4 \/"}`; string(maskJSON(m, json.RawMessage(raw))) != raw {
		t.Errorf("changed %s", raw)
	}
}

// The catalog goes first into a task's file, once per profile, and again
// when it changes.
func TestCatalogLines(t *testing.T) {
	j, dir, _ := newJournal(t, 1<<20)
	cat := []Server{{Name: "fx", Prefix: "fx", Tools: []*mcp.Tool{{Name: "echo", InputSchema: map[string]any{"type": "object"}}}}}
	asked := 0
	catalog := func() []Server { asked++; return cat }
	for range 2 {
		j.Begin(Start{Task: "t", Profile: "p", Tool: "fx__echo", Catalog: catalog}).End(encoded(testkit.TextResult("a")))
	}
	j.Catalog(Header{Task: "t", Profile: "p", Session: "s"}, cat) // unchanged: no line
	j.Catalog(Header{Task: "t", Profile: "q", Session: "s"}, cat) // another profile
	cat2 := append(cat, Server{Name: "web", Prefix: "", Tools: []*mcp.Tool{{Name: "scrape"}}})
	j.Catalog(Header{Task: "t", Profile: "p", Session: "s"}, cat2)

	var kinds []string
	for _, l := range readLines(t, filepath.Join(dir, "t"+Ext)) {
		kinds = append(kinds, l.Kind+":"+l.Profile+fmt.Sprint(len(l.Servers)))
	}
	if got := strings.Join(kinds, " "); got != "catalog:p1 call:p0 call:p0 catalog:q1 catalog:p2" || asked != 1 {
		t.Errorf("lines %s; catalog asked %d times", got, asked)
	}
}

func TestFileStem(t *testing.T) {
	for task, want := range map[string]string{
		"":           DefaultTask,
		"gaia-17.v2": "gaia-17.v2",
		"a/b":        "a_b~",
		"a_b":        "a_b",
		"..":         "_.~",
		"_default":   "_default~",
		"tâche 1":    "t_che_1~",
	} {
		got := FileStem(task)
		if got != want && !(strings.HasSuffix(want, "~") && strings.HasPrefix(got, want) && len(got) == len(want)+24) {
			t.Errorf("FileStem(%q) = %q, want %q", task, got, want)
		}
	}
	if FileStem("a/b") == FileStem("a?b") {
		t.Error("two tasks share a file")
	}
	if long := FileStem(strings.Repeat("x", 300)); len(long) > 128 {
		t.Errorf("long task: %d bytes", len(long))
	}
}

// TestFileStemIsInjective: no literal id takes the file of an altered
// one, and ids that share their first 100 characters keep their own
// files (issue 27, item 11).
func TestFileStemIsInjective(t *testing.T) {
	long := strings.Repeat("x", 200)
	ids := []string{
		"a/b", "a_b", "a?b", "a_b-c14cddc0", "a_b-" + FileStem("a/b")[4:], FileStem("a/b"), FileStem(FileStem("a/b")),
		long, long + "y", long[:128], long[:129], FileStem(long), FileStem(long + "y"),
		strings.Repeat("a", 127) + "é", strings.Repeat("a", 127) + "è", "_default", "", ".", "_.",
	}
	seen := map[string]string{}
	for _, id := range ids {
		stem := FileStem(id)
		if other, dup := seen[stem]; dup {
			t.Errorf("%q and %q share the file %s", id, other, stem)
		}
		seen[stem] = id
	}
}

func TestCanonical(t *testing.T) {
	same := [][]string{
		{`{"b":1,"a":[1.0,"x"]}`, ` { "a" : [ 1 , "x" ] , "b" : 1e0 } `},
		{``, `null`, `{}`, ` {} `},
		{`{"n":0.1}`, `{"n":1e-1}`},
		{`{"s":"é"}`, `{"s":"\u00e9"}`},
	}
	for _, group := range same {
		first, ok := Canonical(json.RawMessage(group[0]))
		if !ok {
			t.Fatalf("%s: not JSON", group[0])
		}
		for _, s := range group[1:] {
			if c, ok := Canonical(json.RawMessage(s)); !ok || !bytes.Equal(c, first) {
				t.Errorf("Canonical(%s) = %s, want %s", s, c, first)
			}
		}
	}
	for _, pair := range [][2]string{{`{"a":1}`, `{"a":"1"}`}, {`{"a":1}`, `{"a":1.5}`}, {`[1,2]`, `[2,1]`}} {
		a, _ := Canonical(json.RawMessage(pair[0]))
		b, _ := Canonical(json.RawMessage(pair[1]))
		if bytes.Equal(a, b) {
			t.Errorf("%s and %s compare equal", pair[0], pair[1])
		}
	}
	if _, ok := Canonical(json.RawMessage(`{"a":`)); ok {
		t.Error("truncated JSON is canonical")
	}
}

// encoded is res as End takes it.
func encoded(res *mcp.CallToolResult) (json.RawMessage, bool) {
	return EncodeResult(res), res.IsError
}
