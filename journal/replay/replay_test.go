package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
	"github.com/mcpmux/mcpmux/journal"
)

// record writes a call of tool with args answered by answer, as the
// pipeline would.
func record(j *journal.Journal, task, tool, args, answer string) {
	c := j.Begin(journal.Start{Task: task, Tool: tool, Arguments: json.RawMessage(args)})
	c.Routed(strings.Split(tool, "__")[0], "")
	res := testkit.TextResult(answer)
	c.Answered(tool, json.RawMessage(args), journal.EncodeResult(res), false)
	c.End(encoded(res))
}

func recorded(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	j := journal.New(nil)
	j.Configure(dir, 1<<20)
	defer j.Close()
	record(j, "t1", "web__search", `{"q":"moon","n":1}`, "first")
	record(j, "t1", "web__search", `{"q":"moon","n":1}`, "second")
	record(j, "t1", "web__search", `{"q":"sun"}`, "sun")
	record(j, "t2", "web__search", `{"q":"moon","n":1}`, "t2 moon")
	record(j, "", "web__search", `{}`, "no task")
	// A fallback: the scraper's error, then fetch's page, under one line.
	c := j.Begin(journal.Start{Task: "t1", Tool: "web__scrape", Arguments: json.RawMessage(`{"url":"u"}`)})
	c.Routed("web", "")
	c.Answered("web__scrape", json.RawMessage(`{"url":"u"}`), journal.EncodeResult(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "unhandled errors"}}}), false)
	c.Derived().Answered("fetch__fetch", json.RawMessage(`{"url":"u"}`), journal.EncodeResult(testkit.TextResult("page")), false)
	c.Hit("scrape-fallback", "fallback")
	c.End(encoded(testkit.TextResult("[Fallback] page")))
	// A refusal: nothing to replay.
	c = j.Begin(journal.Start{Task: "t1", Tool: "web__scrape", Arguments: json.RawMessage(`{"url":"hf"}`)})
	c.Hit("no-benchmark-answers", "refused")
	c.End(encoded(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refused"}}}))
	j.Catalog(journal.Header{Task: "t1"}, []journal.Server{{Name: "web", Prefix: "web", Tools: []*mcp.Tool{{Name: "search"}, {Name: "old"}}}})
	j.Catalog(journal.Header{Task: "t2", Profile: "p"}, []journal.Server{{Name: "web", Prefix: "web", Tools: []*mcp.Tool{{Name: "scrape"}, {Name: "search"}}}, {Name: "fetch", Prefix: "fetch", Tools: []*mcp.Tool{{Name: "fetch"}}}})
	return dir
}

func TestNthCallGetsNthAnswer(t *testing.T) {
	r := Open(Options{Dir: recorded(t)})
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	for i, want := range []string{"first", "second", "second"} {
		// Same arguments, other spelling.
		res, replayed := r.Answer("t1", "web__search", json.RawMessage(` {"n": 1.0, "q": "moon"} `))
		if testkit.Text(res) != want || !replayed || res.Meta[MetaKey] != true {
			t.Errorf("call %d: %q replayed=%v meta=%v, want %q", i+1, testkit.Text(res), replayed, res.Meta, want)
		}
	}
	for _, c := range []struct{ task, tool, args, want string }{
		{"t2", "web__search", `{"q":"moon","n":1}`, "t2 moon"},
		{"", "web__search", ``, "no task"},
		{"t1", "web__scrape", `{"url":"u"}`, "unhandled errors"},
		{"t1", "fetch__fetch", `{"url":"u"}`, "page"},
	} {
		if res, ok := r.Answer(c.task, c.tool, json.RawMessage(c.args)); testkit.Text(res) != c.want || !ok {
			t.Errorf("%s %s %s: %q", c.task, c.tool, c.args, testkit.Text(res))
		}
	}
	lines, skipped, calls := r.Stats()
	if lines != 9 || skipped != 0 || calls != 6 {
		t.Errorf("stats: %d lines, %d skipped, %d calls", lines, skipped, calls)
	}
}

func TestMiss(t *testing.T) {
	dir := recorded(t)
	r := Open(Options{Dir: dir})
	for _, c := range []struct{ task, tool, args, want string }{
		{"t1", "web__search", `{"q":"mars"}`, "no recorded call of this tool with these arguments in task 't1'. It recorded 3 call(s) of this tool in this task"},
		{"t3", "web__search", `{"q":"moon","n":1}`, "in task 't3'. Call it"},
		{"t1", "web__scrape", `{"url":"hf"}`, "task 't1'. It recorded 1 "}, // the refusal is no answer
	} {
		res, replayed := r.Answer(c.task, c.tool, json.RawMessage(c.args))
		if res == nil || !res.IsError || replayed || !strings.Contains(testkit.Text(res), c.want) || !strings.Contains(testkit.Text(res), "Tool 'web__") {
			t.Errorf("%s %s: %q", c.task, c.args, testkit.Text(res))
		}
	}
	if res, _ := Open(Options{Dir: dir, MissCalls: true}).Answer("t1", "web__search", json.RawMessage(`{"q":"mars"}`)); res != nil {
		t.Errorf("miss: call answered %q", testkit.Text(res))
	}
	bad := Open(Options{Dir: filepath.Join(dir, "nope"), MissCalls: true})
	if res, _ := bad.Answer("t1", "web__search", nil); bad.Err() == nil || res == nil || !strings.Contains(testkit.Text(res), "could not be read") {
		t.Errorf("unreadable journal: %v, %q", bad.Err(), testkit.Text(res))
	}
}

func TestCatalogIsMerged(t *testing.T) {
	var got []string
	for _, s := range Open(Options{Dir: recorded(t)}).Catalog() {
		var tools []string
		for _, tool := range s.Tools {
			tools = append(tools, tool.Name)
		}
		got = append(got, s.Name+"="+s.Prefix+":"+strings.Join(tools, ","))
	}
	if strings.Join(got, " ") != "fetch=fetch:fetch web=web:scrape,search,old" {
		t.Errorf("catalog %v", got)
	}
}

// A line that is not JSON (a file edited by hand) is skipped, not fatal.
func TestBrokenLinesAreSkipped(t *testing.T) {
	dir := recorded(t)
	f, err := os.OpenFile(filepath.Join(dir, "t1.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{not json\n")
	f.Close()
	r := Open(Options{Dir: dir})
	if _, skipped, _ := r.Stats(); skipped != 1 || r.Err() != nil {
		t.Errorf("skipped %d, err %v", skipped, r.Err())
	}
	if res, _ := r.Answer("t1", "web__search", json.RawMessage(`{"q":"sun"}`)); testkit.Text(res) != "sun" {
		t.Errorf("%q", testkit.Text(res))
	}
}

// encoded is res as End takes it.
func encoded(res *mcp.CallToolResult) (json.RawMessage, bool) {
	return journal.EncodeResult(res), res.IsError
}
