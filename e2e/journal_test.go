package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oracle is the tool file of a server "kb" running oracleFixture, which
// answers with answer and notes each call of ask in the file calls.
func oracle(answer, calls string, extra ...string) string {
	return fixture("kb", "oracle", append([]string{"  " + oracleAnswerEnv + ": " + answer, "  " + oracleCallsEnv + ": " + calls}, extra...)...)
}

// journalLine is a line of a journal file as these tests read it.
type journalLine struct {
	Kind, Task, Session, Profile, Tool, Server, Rule, Action, CorrectedTo, Failure, Timeout string
	Client                                                                                  struct{ Name, Version string }
	Arguments, Result                                                                       json.RawMessage
	IsError                                                                                 bool     `json:"is_error"`
	DurationMS                                                                              *float64 `json:"duration_ms"`
	Replayed                                                                                bool
	Time                                                                                    string
	Servers                                                                                 []struct{ Name string }
}

// readJournal reads every line of a journal file; a line that is not
// whole JSON fails the test.
func readJournal(t *testing.T, path string) []journalLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []journalLine
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var l journalLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%s line %d is not JSON (%v): %.200s", path, i+1, err, line)
		}
		out = append(out, l)
	}
	return out
}

func stopHTTP(t *testing.T, p *process) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t); err != nil {
		t.Fatalf("mcpmux exited with %v", err)
	}
}

func taskClient(t *testing.T, p *process, task string) *mcp.ClientSession {
	t.Helper()
	cs, err := connectHTTP(t, p, "/mcp", http.Header{"X-Task-Id": {task}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Done when, 1: two tasks through mcpmux with a journal; mcpmux restarted
// with replay and the server changed, whose live answers differ; the
// recorded answers come back and the server sees none of the calls.
func TestJournalThenReplayWithTheServerChanged(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	journalDir, journal2 := filepath.Join(work, "journal"), filepath.Join(work, "journal-replay")
	seenLive, seenReplay := filepath.Join(work, "calls-live"), filepath.Join(work, "calls-replay")

	p := startHTTP(t, writeConfig(t, map[string]string{
		"tool/kb.yaml": oracle("monday", seenLive),
		"mcpmux.yaml":  fmt.Sprintf("journal: {dir: %q}\n", journalDir),
	}))
	recorded := map[string][]string{}
	for _, task := range []string{"task-a", "task-b"} {
		cs := taskClient(t, p, task)
		toolNames(t, cs)
		for _, q := range []string{"q1", "q1", "q2"} {
			recorded[task] = append(recorded[task], resultText(callTool(t, cs, "kb__ask", map[string]any{"q": q})))
		}
	}
	stopHTTP(t, p)
	if recorded["task-b"][0] != "monday to q1 (call 4)" {
		t.Fatalf("live answers: %v", recorded)
	}
	for _, task := range []string{"task-a", "task-b"} {
		path := filepath.Join(journalDir, task+".jsonl")
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v", path, err, st.Mode())
		}
		lines := readJournal(t, path)
		if len(lines) != 4 || lines[0].Kind != "catalog" || lines[0].Servers[0].Name != "kb" {
			t.Fatalf("%s: %d lines, first %+v", path, len(lines), lines[0])
		}
		for i, l := range lines[1:] {
			if l.Kind != "call" || l.Task != task || l.Session == "" || l.Client.Name != "e2e" || l.Client.Version != "1" || l.Profile != "" ||
				l.Tool != "kb__ask" || l.Server != "kb" || l.IsError || l.DurationMS == nil || l.Time == "" || !strings.Contains(string(l.Result), recorded[task][i]) {
				t.Errorf("%s line %d: %+v", path, i+2, l)
			}
		}
	}

	// The server now answers "tuesday"; replay with miss: call, and a
	// journal of the replayed run.
	p = startHTTP(t, writeConfig(t, map[string]string{
		"tool/kb.yaml": oracle("tuesday", seenReplay),
		"mcpmux.yaml":  fmt.Sprintf("replay: {from: %q, miss: call}\njournal: {dir: %q}\n", journalDir, journal2),
	}))
	for _, task := range []string{"task-b", "task-a"} {
		cs := taskClient(t, p, task)
		// The third q1 gets the last recorded q1; arguments compare as JSON.
		for i, args := range []string{`{"q":"q1"}`, `{ "q" : "q1" }`, `{"q":"q1"}`, `{"q":"q2"}`} {
			want := recorded[task][[]int{0, 1, 1, 2}[i]]
			res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "kb__ask", Arguments: json.RawMessage(args)})
			if err != nil || resultText(res) != want || res.Meta["mcpmux/replayed"] != true {
				t.Errorf("%s replayed call %d: %v %q %v, want %q", task, i+1, err, resultText(res), res.Meta, want)
			}
		}
	}
	if _, err := os.Stat(seenReplay); !os.IsNotExist(err) {
		b, _ := os.ReadFile(seenReplay)
		t.Errorf("the changed server saw replayed calls: %s", b)
	}
	// A question never asked goes to the server (miss: call): it answers
	// differently now.
	cs := taskClient(t, p, "task-a")
	if got := resultText(callTool(t, cs, "kb__ask", map[string]any{"q": "q3"})); got != "tuesday to q3 (call 1)" {
		t.Errorf("unrecorded call: %q", got)
	}
	if b, _ := os.ReadFile(seenReplay); strings.Count(string(b), "\n") != 1 {
		t.Errorf("the server saw %q", b)
	}
	stopHTTP(t, p)
	replayed := 0
	for _, l := range readJournal(t, filepath.Join(journal2, "task-a.jsonl")) {
		if l.Replayed {
			replayed++
		}
	}
	if replayed != 4 {
		t.Errorf("%d lines of the replayed run say replayed, want 4", replayed)
	}
}

// Done when, 2: a replay with no server running at all: the tools are
// the journal's, and so are the answers.
func TestReplayOfflineWithoutServers(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	journalDir := filepath.Join(work, "journal")
	cs, p := startStdio(t, writeConfig(t, map[string]string{
		"tool/kb.yaml": oracle("recorded", filepath.Join(work, "calls")),
		"mcpmux.yaml":  fmt.Sprintf("journal: {dir: %q}\n", journalDir),
	}), "--task-id", "offline-1")
	liveTools := toolNames(t, cs)
	want := resultText(callTool(t, cs, "kb__ask", map[string]any{"q": "capital of France"}))
	cs.Close()
	p.wait(t)

	cs, p = startStdio(t, writeConfig(t, map[string]string{
		// The server's command does not even exist: it is never started.
		"tool/kb.yaml": "name: kb\ntool_command: /nonexistent/kb-server\n",
		"mcpmux.yaml":  fmt.Sprintf("replay: {from: %q, catalog: recorded}\n", journalDir),
	}), "--task-id", "offline-1")
	if got := toolNames(t, cs); strings.Join(got, ",") != strings.Join(liveTools, ",") {
		t.Errorf("offline tools %v, recorded %v", got, liveTools)
	}
	if got := resultText(callTool(t, cs, "kb__ask", map[string]any{"q": "capital of France"})); got != want {
		t.Errorf("offline answer %q, want %q", got, want)
	}
	res := callTool(t, cs, "kb__ask", map[string]any{"q": "capital of Spain"})
	if !res.IsError || !strings.Contains(resultText(res), "Tool 'kb__ask' was not called") || !strings.Contains(resultText(res), "task 'offline-1'") {
		t.Errorf("unrecorded call offline: %q", resultText(res))
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="servers started" up=0 configured=0`))
	if strings.Contains(p.logs.String(), "nonexistent") {
		t.Errorf("mcpmux tried to start the server:\n%s", p.logs.String())
	}
}

// 64 clients calling at once, results from a few bytes to 64 KB, all in
// one task's file: every line is whole.
func TestJournalLinesStayWholeUnder64Clients(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	journalDir := filepath.Join(work, "journal")
	p := startHTTP(t, writeConfig(t, map[string]string{
		"tool/kb.yaml": oracle("none", filepath.Join(work, "calls")),
		"mcpmux.yaml":  fmt.Sprintf("journal: {dir: %q}\n", journalDir),
	}))
	const clients, calls = 64, 5
	var wg sync.WaitGroup
	for c := range clients {
		cs := taskClient(t, p, "load")
		wg.Go(func() {
			for i := range calls {
				tag := fmt.Sprintf("c%d-%d", c, i)
				res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "kb__big", Arguments: map[string]any{"n": (c*7919 + i*104729) % 65536, "tag": tag}})
				if err != nil || !strings.HasPrefix(resultText(res), tag+":") {
					t.Errorf("%s: %v %.100q", tag, err, resultText(res))
				}
			}
		})
	}
	wg.Wait()
	stopHTTP(t, p)
	tags := map[string]bool{}
	for _, l := range readJournal(t, filepath.Join(journalDir, "load.jsonl")) {
		if l.Kind == "call" {
			var args struct{ Tag string }
			_ = json.Unmarshal(l.Arguments, &args)
			tags[args.Tag] = true
		}
	}
	if len(tags) != clients*calls {
		t.Errorf("%d distinct calls in the journal, want %d", len(tags), clients*calls)
	}
}

// A journal that cannot be written is logged and counted, and the calls
// are answered all the same; a reload pointing it elsewhere applies at
// once.
func TestUnwritableJournalNeverFailsACall(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	blocker := filepath.Join(work, "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := writeConfig(t, map[string]string{
		"tool/kb.yaml": oracle("yes", filepath.Join(work, "calls")),
		"mcpmux.yaml":  fmt.Sprintf("journal: {dir: %q}\n", filepath.Join(blocker, "journal")),
	})
	p := startHTTP(t, dir)
	cs := taskClient(t, p, "t")
	for i := range 3 {
		if res := callTool(t, cs, "kb__ask", map[string]any{"q": fmt.Sprint(i)}); res.IsError {
			t.Fatalf("call failed: %s", resultText(res))
		}
	}
	p.logs.waitFor(t, regexp.MustCompile(`journal: cannot write a line`))
	if _, fams := getMetrics(t, p, ""); fams != nil {
		if v, _ := metricValue(fams, "mcpmux_journal_write_errors_total"); v < 3 {
			t.Errorf("mcpmux_journal_write_errors_total = %v, want at least 3", v)
		}
	} else {
		t.Error("no /metrics")
	}

	good := filepath.Join(work, "journal")
	if err := os.WriteFile(filepath.Join(dir, "mcpmux.yaml"), []byte(fmt.Sprintf("journal: {dir: %q}\n", good)), 0o644); err != nil {
		t.Fatal(err)
	}
	p.logs.waitFor(t, regexp.MustCompile(`config reloaded.*settings_changed=true`))
	callTool(t, cs, "kb__ask", map[string]any{"q": "after"})
	lines := readJournal(t, filepath.Join(good, "t.jsonl"))
	if l := lines[len(lines)-1]; l.Kind != "call" || !strings.Contains(string(l.Arguments), "after") {
		t.Errorf("after the reload: %+v", l)
	}
}
