package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/journal/replay"
)

// journalLines reads a task's journal file.
func journalLines(t *testing.T, dir, task string) []journal.Line {
	t.Helper()
	var out []journal.Line
	err := journal.Scan(filepath.Join(dir, journal.FileStem(task)+journal.Ext), func(_ int64, b []byte) error {
		var l journal.Line
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		out = append(out, l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func callLines(lines []journal.Line) map[string]journal.Line {
	out := map[string]journal.Line{}
	for _, l := range lines {
		if l.Kind == journal.KindCall {
			out[l.Tool+" "+string(l.Arguments)] = l
		}
	}
	return out
}

// callTask calls a tool as task (by _meta.task_id).
func callTask(t *testing.T, cs *mcp.ClientSession, task, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{"task_id": task}})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// Every call of a client gets one line, with what the pipeline decided:
// the route and auto-correction, rule hits, the failure kind, answers.
func TestJournalRecordsWhatThePipelineDid(t *testing.T) {
	dir := t.TempDir()
	settings := rewriteSettings + fmt.Sprintf("journal: {dir: %q}\nmeta_tools: [call_tool]\n", dir)
	h, _, _ := rewriteHarness(t, settings)
	cs := h.client(DefaultProfile)

	callTask(t, cs, "t1", "web__search", map[string]any{"q": "gaia"})                          // redacted
	callTask(t, cs, "t1", "scrape", map[string]any{"url": "https://example.com/a"})            // auto-corrected
	callTask(t, cs, "t1", "web__scrape", map[string]any{"url": "https://hf.co/datasets/gaia"}) // refused
	callTask(t, cs, "t1", "web__scrape", map[string]any{"url": "https://example.com/broken"})  // fallback
	callTask(t, cs, "t1", "nope__nothing", nil)                                                // unknown
	callTask(t, cs, "t1", "mcpmux__call_tool", map[string]any{"name": "fetch__fetch", "arguments": map[string]any{"url": "u"}})
	callTask(t, cs, "t1", "web__scrape_rpc", map[string]any{}) // a JSON-RPC error
	strict := h.client("strict")
	callTask(t, strict, "t2", "fetch__fetch", map[string]any{"url": "u"}) // blacklisted

	lines := journalLines(t, dir, "t1")
	if lines[0].Kind != journal.KindCatalog || len(lines[0].Servers) != 2 || lines[0].Client.Name != "test-client" {
		t.Fatalf("first line is not the session's catalog: %+v", lines[0])
	}
	calls := callLines(lines)
	if len(calls) != 7 {
		t.Fatalf("%d call lines: %v", len(calls), calls)
	}
	check := func(key string, ok func(l journal.Line) bool) {
		t.Helper()
		l, found := calls[key]
		if !found {
			t.Errorf("no line for %s among %d", key, len(calls))
			return
		}
		if !ok(l) {
			b, _ := json.Marshal(l)
			t.Errorf("%s: %s", key, b)
		}
	}
	check(`web__search {"q":"gaia"}`, func(l journal.Line) bool {
		return l.Server == "web" && l.Rule == "no-benchmark-links" && l.Action == "redacted" && !l.IsError && l.Answers != nil && len(*l.Answers) == 1 &&
			strings.Contains(string(l.Result), "[link removed]") && strings.Contains(string((*l.Answers)[0].Result), "hf.co/datasets")
	})
	check(`scrape {"url":"https://example.com/a"}`, func(l journal.Line) bool {
		return l.Server == "web" && l.CorrectedTo == "web__scrape" && strings.Contains(string(l.Result), "Auto-corrected") && l.Answers != nil
	})
	check(`web__scrape {"url":"https://hf.co/datasets/gaia"}`, func(l journal.Line) bool {
		return l.Rule == "no-benchmark-answers" && l.Action == "refused" && l.IsError && l.Answers != nil && len(*l.Answers) == 0
	})
	check(`web__scrape {"url":"https://example.com/broken"}`, func(l journal.Line) bool {
		return l.Rule == "scrape-fallback" && l.Action == "fallback" && !l.IsError && l.Answers != nil && len(*l.Answers) == 2 && (*l.Answers)[1].Tool == "fetch__fetch"
	})
	check(`nope__nothing {}`, func(l journal.Line) bool {
		return l.Server == "" && l.IsError && strings.Contains(string(l.Result), "Unknown tool")
	})
	check(`mcpmux__call_tool {"arguments":{"url":"u"},"name":"fetch__fetch"}`, func(l journal.Line) bool {
		return l.Server == "mcpmux" && l.Answers != nil && len(*l.Answers) == 1 && (*l.Answers)[0].Tool == "fetch__fetch"
	})
	check(`web__scrape_rpc {}`, func(l journal.Line) bool { return l.Failure == "rejected" && l.IsError })
	if l := callLines(journalLines(t, dir, "t2"))[`fetch__fetch {"url":"u"}`]; l.Rule != "tool_blacklist" || l.Action != "refused" || l.Profile != "strict" {
		t.Errorf("blacklisted: %+v", l)
	}
}

func TestJournalRecordsTimeouts(t *testing.T) {
	dir := t.TempDir()
	slow := fixtureServer("slow", map[string]mcp.ToolHandler{
		"wait": func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	h := newHarness(t, map[string]*mcp.Server{"slow": slow}, fmt.Sprintf("journal: {dir: %q}\n", dir), map[string]string{"slow": "timeout: 50ms\n"})
	res := call(t, h.client(DefaultProfile), "slow__wait", nil)
	l := callLines(journalLines(t, dir, ""))["slow__wait {}"]
	if !res.IsError || l.Failure != "timeout" || l.Timeout != "50ms" || !l.IsError || l.DurationMS < 50 {
		t.Errorf("line %+v", l)
	}
}

// A replay answers from the journal: the server does not see the call,
// the answer is the recorded one, marked, and the rules still act on it.
func TestReplayThroughThePipeline(t *testing.T) {
	dir := t.TempDir()
	live := func(answer string, calls *atomic.Int32) *mcp.Server {
		return fixtureServer("kb", map[string]mcp.ToolHandler{
			"lookup": func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				calls.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s %s see https://hf.co/datasets/x", answer, req.Params.Arguments)}}}, nil
			},
		})
	}
	const rule = "rewrite:\n  - {name: links, tools: [\"*\"], block_urls: [\"huggingface.co/datasets/**\"], message: no, redact: true}\n"
	var first atomic.Int32
	rec := newHarness(t, map[string]*mcp.Server{"kb": live("monday", &first)}, fmt.Sprintf("journal: {dir: %q}\n", dir), nil)
	cs := rec.client(DefaultProfile)
	for _, task := range []string{"t1", "t1", "t2"} {
		callTask(t, cs, task, "kb__lookup", map[string]any{"q": "moon", "n": 1})
	}

	var second atomic.Int32
	replaying := func(options, settings string) *harness {
		return newHarness(t, map[string]*mcp.Server{"kb": live("tuesday", &second)}, fmt.Sprintf("replay: {from: %q%s}\n", dir, options)+rule+settings, nil)
	}
	h := replaying("", "")
	cs = h.client(DefaultProfile)
	for i := range 3 {
		res := callTask(t, cs, "t1", "kb__lookup", map[string]any{"n": 1.0, "q": "moon"})
		if got := text(res); !strings.Contains(got, "monday") || !strings.Contains(got, "[link removed]") || res.Meta[replay.MetaKey] != true {
			t.Errorf("replayed call %d: %q, _meta %v", i, got, res.Meta)
		}
	}
	res := callTask(t, cs, "t3", "kb__lookup", map[string]any{"q": "moon", "n": 1})
	if !res.IsError || !strings.Contains(text(res), "no recorded call of this tool with these arguments in task 't3'") {
		t.Errorf("miss: %q", text(res))
	}
	if second.Load() != 0 {
		t.Errorf("the server saw %d calls under replay", second.Load())
	}

	// miss: call goes to the server.
	cs = replaying(", miss: call", "").client(DefaultProfile)
	if res := callTask(t, cs, "t3", "kb__lookup", map[string]any{"q": "moon"}); !strings.Contains(text(res), "tuesday") || second.Load() != 1 {
		t.Errorf("miss: call: %q, server calls %d", text(res), second.Load())
	}

	// A call through mcpmux__call_tool is replayed as the call it makes.
	cs = replaying("", "meta_tools: [call_tool]\n").client(DefaultProfile)
	if res := callTask(t, cs, "t2", "mcpmux__call_tool", map[string]any{"name": "kb__lookup", "arguments": map[string]any{"q": "moon", "n": 1}}); !strings.Contains(text(res), "monday") || res.Meta[replay.MetaKey] != true {
		t.Errorf("through call_tool: %q %v", text(res), res.Meta)
	}

	// catalog: recorded: no server at all, the recorded tools listed.
	off := newHarness(t, nil, fmt.Sprintf("replay: {from: %q, catalog: recorded}\n", dir), nil)
	cs = off.client(DefaultProfile)
	if names := toolNames(t, cs); strings.Join(names, ",") != "kb__lookup" {
		t.Errorf("recorded catalog lists %v", names)
	}
	if res := callTask(t, cs, "t2", "kb__lookup", map[string]any{"q": "moon", "n": 1}); !strings.Contains(text(res), "monday") || res.IsError {
		t.Errorf("offline replay: %q", text(res))
	}
}

// A journal that is turned on, moved or off by a reload follows at once.
func TestJournalFollowsSettings(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	h := newHarness(t, map[string]*mcp.Server{"fx": fixtureServer("fx", map[string]mcp.ToolHandler{"echo": echo("fx")})}, "", nil)
	cs := h.client(DefaultProfile)
	set := func(yaml string) {
		s, ferr := config.ParseSettings("mcpmux.yaml", []byte(yaml), nil)
		if ferr != nil {
			t.Fatal(ferr)
		}
		h.agg.SetSettings(s)
	}
	call(t, cs, "fx__echo", map[string]any{"n": 0})
	set(fmt.Sprintf("journal: {dir: %q}\n", a))
	call(t, cs, "fx__echo", map[string]any{"n": 1})
	set(fmt.Sprintf("journal: {dir: %q}\n", b))
	call(t, cs, "fx__echo", map[string]any{"n": 2})
	set("separator: __\n")
	call(t, cs, "fx__echo", map[string]any{"n": 3})
	if la, lb := callLines(journalLines(t, a, "")), callLines(journalLines(t, b, "")); len(la) != 1 || len(lb) != 1 {
		t.Errorf("lines in a: %v, in b: %v", la, lb)
	}
}

// A blacklisted tool is never listed, so no recorded catalog holds it:
// offline, a call of it still gets the blacklist's answer, as recorded,
// not "Unknown tool".
func TestOfflineReplayKeepsTheBlacklist(t *testing.T) {
	dir := t.TempDir()
	const blacklist = "tool_blacklist: [[kb, secret]]\n"
	kb := fixtureServer("kb", map[string]mcp.ToolHandler{"lookup": echo("kb"), "secret": echo("kb")})
	rec := newHarness(t, map[string]*mcp.Server{"kb": kb}, fmt.Sprintf("journal: {dir: %q}\n", dir)+blacklist, nil)
	recorded := callTask(t, rec.client(DefaultProfile), "t1", "kb__secret", map[string]any{"q": 1})
	if !recorded.IsError || !strings.Contains(text(recorded), "tool blacklist") {
		t.Fatalf("recorded: %q", text(recorded))
	}
	callTask(t, rec.client(DefaultProfile), "t1", "kb__lookup", map[string]any{"q": 1})

	off := newHarness(t, nil, fmt.Sprintf("replay: {from: %q, catalog: recorded}\n", dir)+blacklist, nil)
	res := callTask(t, off.client(DefaultProfile), "t1", "kb__secret", map[string]any{"q": 1})
	if text(res) != text(recorded) || !res.IsError {
		t.Errorf("offline: %q, recorded: %q", text(res), text(recorded))
	}
}

// TestTaskIDsStayApart: ids that differ only past 128 bytes, in a control
// character, or that a cleaned id looks like, are different tasks in the
// journal, and a rerun with the same ids replays each from its own file;
// an id cut inside a character is replayed too (issue 27, item 11).
func TestTaskIDsStayApart(t *testing.T) {
	dir := t.TempDir()
	lookup := func(answer string) *mcp.Server {
		return fixtureServer("kb", map[string]mcp.ToolHandler{
			"lookup": func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer + " " + string(req.Params.Arguments)}}}, nil
			},
		})
	}
	long := strings.Repeat("g", 130)
	ids := []string{long + "1", long + "2", strings.Repeat("a", 127) + "é", "a\x01b", "ab", "a/b", "a_b-c14cddc0", cleanTaskID(long + "1")}
	rec := newHarness(t, map[string]*mcp.Server{"kb": lookup("live")}, fmt.Sprintf("journal: {dir: %q}\n", dir), nil)
	cs := rec.client(DefaultProfile)
	stems := map[string]string{}
	for i, id := range ids {
		callTask(t, cs, id, "kb__lookup", map[string]any{"i": i})
		clean := cleanTaskID(id)
		if len(clean) > 128 || !utf8.ValidString(clean) {
			t.Errorf("task %q recorded as %q", id, clean)
		}
		stem := journal.FileStem(clean)
		if other, dup := stems[stem]; dup {
			t.Errorf("tasks %q and %q share the file %s", id, other, stem)
		}
		stems[stem] = id
	}
	cs = newHarness(t, map[string]*mcp.Server{"kb": lookup("rerun")}, fmt.Sprintf("replay: {from: %q}\n", dir), nil).client(DefaultProfile)
	for i, id := range ids {
		if res := callTask(t, cs, id, "kb__lookup", map[string]any{"i": i}); res.IsError || !strings.Contains(text(res), "live") {
			t.Errorf("task %q not replayed: %q", id, text(res))
		}
	}
}

// TestReplaySkipsSpecialFiles: a named pipe and a symlink to /dev/zero in
// replay.from neither hang start-up nor grow memory; the other files are
// replayed (issue 27, item 6).
func TestReplaySkipsSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	kb := func(answer string) *mcp.Server {
		return fixtureServer("kb", map[string]mcp.ToolHandler{
			"lookup": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil
			},
		})
	}
	callTask(t, newHarness(t, map[string]*mcp.Server{"kb": kb("recorded")}, fmt.Sprintf("journal: {dir: %q}\n", dir), nil).client(DefaultProfile), "t1", "kb__lookup", map[string]any{})
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.jsonl"), 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.jsonl")); err != nil {
		t.Fatal(err)
	}
	started := make(chan *harness, 1)
	go func() {
		started <- newHarness(t, map[string]*mcp.Server{"kb": kb("live")}, fmt.Sprintf("replay: {from: %q}\n", dir), nil)
	}()
	select {
	case h := <-started:
		if res := callTask(t, h.client(DefaultProfile), "t1", "kb__lookup", map[string]any{}); text(res) != "recorded" {
			t.Errorf("replayed: %q", text(res))
		}
	case <-time.After(2 * time.Minute): // generous: reading one small file takes milliseconds
		t.Fatal("start-up with a FIFO in replay.from did not finish")
	}
}
