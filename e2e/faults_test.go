package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// The fault suite: what a client sees when tool servers crash, hang, fail
// to start or restart, and when mcpmux itself is stopped.

// faults returns the YAML of a faultsFixture server.
func faults(name string, extra ...string) string {
	return fixture(name, "faults", append([]string{"  " + faultsServerEnv + ": " + name}, extra...)...)
}

// childPID asks a faults/echo server for its process id.
func childPID(t *testing.T, cs *mcp.ClientSession, server string) int {
	t.Helper()
	res := callTool(t, cs, server+"__pid", nil)
	pid, err := strconv.Atoi(resultText(res))
	if err != nil || res.IsError {
		t.Fatalf("%s__pid = %q", server, resultText(res))
	}
	return pid
}

// callAsync calls a tool in the background; the channel yields its result,
// or an isError result holding the protocol error.
func callAsync(cs *mcp.ClientSession, name string, args any) <-chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "PROTOCOL ERROR: " + err.Error()}}}
		}
		out <- res
	}()
	return out
}

func receive(t *testing.T, ch <-chan *mcp.CallToolResult, what string) *mcp.CallToolResult {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(testTimeout):
		t.Fatalf("%s: no answer", what)
		return nil
	}
}

func TestFaultKillChildMidCall(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/victim.yaml": faults("victim"),
		"tool/other.yaml":  faults("other"),
	})
	cs, p := startStdio(t, dir)
	pid := childPID(t, cs, "victim")
	call := callAsync(cs, "victim__block", map[string]any{"file": "/nonexistent/never"})
	p.logs.waitFor(t, regexp.MustCompile(`block: waiting for`))

	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := receive(t, call, "call cut off by kill -9")
	if !res.IsError || !strings.Contains(resultText(res), "the server exited (signal: killed)") || !strings.Contains(resultText(res), "restarting") {
		t.Errorf("call cut off by kill -9 = %q (isError %v)", resultText(res), res.IsError)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the cut-off call took %v to answer", d)
	}
	// The very next call waits for the restart instead of failing.
	if got := childPID(t, cs, "victim"); got == pid {
		t.Errorf("same pid %d after kill -9", pid)
	}
	if got := resultText(callTool(t, cs, "other__tag", map[string]any{"tag": "x"})); got != "other:x" {
		t.Errorf("other server after the kill: %q", got)
	}
	if names := toolNames(t, cs); !slices.Contains(names, "victim__tag") {
		t.Errorf("victim's tools after its restart: %v", names)
	}
}

func TestFaultHangingChild(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/stuck.yaml": faults("stuck", "tool_timeouts: {hang: 500ms}"),
	})
	cs, p := startStdio(t, dir)
	pid := childPID(t, cs, "stuck")
	res := callTool(t, cs, "stuck__hang", nil)
	if !res.IsError || !strings.Contains(resultText(res), "timed out after 500ms") {
		t.Errorf("hanging call = %q (isError %v)", resultText(res), res.IsError)
	}
	p.logs.waitFor(t, regexp.MustCompile(`hang: hanging`))
	// The same child still serves, while its hung call goes on.
	if got := resultText(callTool(t, cs, "stuck__tag", map[string]any{"tag": "after"})); got != "stuck:after" {
		t.Errorf("after the hang: %q", got)
	}
	if got := childPID(t, cs, "stuck"); got != pid {
		t.Errorf("the child was replaced (%d → %d); a hung call must not cost the server", pid, got)
	}
}

// healthz fetches /healthz.
func healthz(t *testing.T, p *process) (int, healthBody) {
	t.Helper()
	resp, err := http.Get(p.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h healthBody
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, h
}

type healthBody struct {
	Status  string
	Ready   bool
	Servers []struct {
		Name     string
		State    string
		Error    string
		Tools    int
		Restarts int
		Failures int
	}
	InvalidFiles []struct {
		File  string
		Line  int
		Error string
	} `json:"invalid_files"`
}

// startTimes reads the crash-count fixture's start log.
func startTimes(t *testing.T, file string) []time.Time {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []time.Time
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		ns, _ := strconv.ParseInt(f[1], 10, 64)
		out = append(out, time.Unix(0, ns))
	}
	return out
}

func TestFaultCrashLoopBacksOff(t *testing.T) {
	t.Parallel()
	starts := filepath.Join(t.TempDir(), "starts")
	dir := writeConfig(t, map[string]string{
		"tool/loop.yaml": fixture("loop", "crash-count", "  "+startsFileEnv+": "+starts),
		"tool/good.yaml": faults("good"),
	})
	p := startHTTP(t, dir)
	cs, err := connectHTTP(t, p, "/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(callTool(t, cs, "good__tag", map[string]any{"tag": "1"})); got != "good:1" {
		t.Errorf("good server next to a crash loop: %q", got)
	}

	// Four starts: the gaps between them are the backoff (0.5s, 1s, 2s,
	// each ±25%) plus the time a start and its crash take, so each gap is
	// at least the backoff's lower bound (0.375s, 0.75s, 1.5s), however
	// slow the machine; a busy loop would start it dozens of times
	// meanwhile. (Gaps are not compared with each other: on a loaded
	// machine a slow first start can make the first gap longer than the
	// second.)
	ts := testkit.Await(t, "4 starts", func() []time.Time { return startTimes(t, starts) }, func(ts []time.Time) bool { return len(ts) >= 4 })
	for i, least := range []time.Duration{375 * time.Millisecond, 750 * time.Millisecond, 1500 * time.Millisecond} {
		if gap := ts[i+1].Sub(ts[i]); gap < least {
			t.Errorf("gap %d between starts is %v, under the backoff's %v (starts %v)", i+1, gap, least, ts)
		}
	}

	code, h := healthz(t, p)
	if code != http.StatusOK || h.Status != "degraded" || !h.Ready {
		t.Errorf("healthz with a failed server: %d %+v", code, h)
	}
	for _, st := range h.Servers {
		switch st.Name {
		case "loop":
			if (st.State != "failed" && st.State != "restarting") || st.Restarts < 3 || !strings.Contains(st.Error, "missing API key") {
				t.Errorf("loop status: %+v", st)
			}
		case "good":
			if st.State != "up" || st.Restarts != 0 {
				t.Errorf("good status: %+v", st)
			}
		}
	}
	if got := resultText(callTool(t, cs, "good__tag", map[string]any{"tag": "2"})); got != "good:2" {
		t.Errorf("good server after the loop: %q", got)
	}

	out, _, code := runMcpmux(t, "check", "--config", dir)
	if code == 0 || !regexp.MustCompile(`SERVER\s+STATE\s+TOOLS\s+RESTARTS`).MatchString(out) || !regexp.MustCompile(`good\s+up\s+\d+\s+0\s+stdio`).MatchString(out) || !strings.Contains(out, "missing API key") {
		t.Errorf("check = %d\n%s", code, out)
	}
}

func TestFaultHTTPDownstreamRestarted(t *testing.T) {
	t.Parallel()
	// The downstream "restarts": a new handler (no sessions) takes over and
	// the open connections drop, as when its process is replaced.
	var inits atomic.Int32
	var current atomic.Pointer[mcp.StreamableHTTPHandler]
	newHandler := func() {
		srv := faultsFixture()
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				// mcpmux's shared connection declares sampling; its
				// capability probes (sessions of their own) do not.
				//lint:ignore SA1019 the test checks which connections declare sampling of MCP 2025-11-25, which mcpmux forwards.
				if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p.Capabilities != nil && p.Capabilities.Sampling != nil {
					inits.Add(1)
				}
				return next(ctx, method, req)
			}
		})
		current.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	}
	newHandler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { current.Load().ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)

	dir := writeConfig(t, map[string]string{"tool/remote.yaml": fmt.Sprintf("url: %s/mcp\n", ts.URL)})
	cs, p := startStdio(t, dir)
	if got := resultText(callTool(t, cs, "remote__echo", map[string]any{"text": "before"})); got != "echo: before" {
		t.Fatalf("before the restart: %q", got)
	}
	newHandler()
	ts.CloseClientConnections()

	// The first call after the restart already works: mcpmux sees the
	// unknown session, opens a new one and sends the call again.
	res := callTool(t, cs, "remote__echo", map[string]any{"text": "after"})
	if res.IsError || resultText(res) != "echo: after" {
		t.Errorf("first call after the restart = %q (isError %v)", resultText(res), res.IsError)
	}
	p.logs.waitFor(t, regexp.MustCompile(`resending the request on a new session`))
	if n := inits.Load(); n != 2 {
		t.Errorf("%d initialize requests of the shared connection, want 2 (one per session)", n)
	}
	if got := resultText(callTool(t, cs, "remote__echo", map[string]any{"text": "later"})); got != "echo: later" {
		t.Errorf("later call: %q", got)
	}
}

// proc is a process as /proc shows it.
type proc struct {
	pid, ppid, pgid int
	start           string // start time since boot, to tell a reused pid
	comm            string
}

func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < 0 {
		return proc{}, false
	}
	// After the name: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime cutime cstime priority nice
	// num_threads itrealvalue starttime ...
	f := strings.Fields(s[closing+1:])
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return proc{pid: pid, ppid: ppid, pgid: pgid, start: f[19], comm: s[open+1 : closing]}, true
}

// procTree walks /proc for every live descendant of root.
func procTree(root int) []proc {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// stillRunning returns the processes of ps that still run (same pid, same
// start time), and any process in their process groups.
func stillRunning(ps []proc) []proc {
	groups := map[int]bool{}
	for _, p := range ps {
		groups[p.pgid] = true
	}
	var out []proc
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		q, ok := readProc(pid)
		if !ok {
			continue
		}
		if groups[q.pgid] || slices.ContainsFunc(ps, func(p proc) bool { return p.pid == q.pid && p.start == q.start }) {
			out = append(out, q)
		}
	}
	return out
}

func TestFaultSIGTERMLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(nodeBin, "mcp-server-everything")); err != nil {
		t.Fatalf("mcp-server-everything is not installed: run `npm ci` in e2e/ (.ci/run does)")
	}
	e2eDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	// npx runs the server under itself (npx → sh → node): a wrapper and
	// the real server, as most tool configs do.
	dir := writeConfig(t, map[string]string{
		"tool/everything.yaml": fmt.Sprintf("name: everything\ntool_command: npx\nargs: [\"--offline\", \"--no-install\", \"mcp-server-everything\", \"stdio\"]\ncwd: %q\nconnect_timeout: 45s\n", e2eDir),
		"tool/echo.yaml":       faults("echo"),
	})
	cs, p := startStdio(t, dir)
	if names := toolNames(t, cs); !slices.Contains(names, "everything__echo") {
		t.Fatalf("everything did not start under npx: %v", names)
	}
	if got := resultText(callTool(t, cs, "everything__echo", map[string]any{"message": "hi"})); !strings.Contains(got, "hi") {
		t.Errorf("everything__echo = %q", got)
	}
	self, _ := readProc(p.cmd.Process.Pid)
	tree := procTree(p.cmd.Process.Pid)
	if len(tree) < 3 {
		t.Fatalf("descendants of mcpmux: %+v, want npx, the server under it and the echo fixture", tree)
	}
	for _, d := range tree {
		if d.pgid == self.pgid {
			t.Errorf("descendant %d (%s) shares mcpmux's process group %d", d.pid, d.comm, self.pgid)
		}
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t); err != nil {
		t.Errorf("mcpmux exited with %v on SIGTERM", err)
	}
	// mcpmux waits for its children's groups before it exits; allow the
	// kernel a moment to finish off what was SIGKILLed.
	waitAllGone(t, tree)
}

// On SIGTERM a running call that finishes within the grace period gets its
// answer, and one that does not is cancelled with an answer that says so.
// Each in its own mcpmux: the first with a grace period that only the test
// ends (by releasing the call), so that a slow machine cannot run it out;
// the second with one short enough to wait for.
func TestFaultGracefulShutdown(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, mode, grace string) (*mcp.ClientSession, *process) {
		dir := writeConfig(t, map[string]string{"tool/work.yaml": faults("work")})
		if mode == "stdio" {
			return startStdio(t, dir, "--shutdown-grace", grace)
		}
		p := startHTTP(t, dir, "--shutdown-grace", grace)
		cs, err := connectHTTP(t, p, "/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs, p
	}
	terminate := func(t *testing.T, p *process) {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// Over HTTP the shutdown begins with the drain (docs/scaling.md).
		p.logs.waitFor(t, regexp.MustCompile(`waiting for running calls before closing|draining: `))
	}
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode+"/finishing", func(t *testing.T) {
			t.Parallel()
			cs, p := start(t, mode, (2 * testTimeout).String())
			release := filepath.Join(t.TempDir(), "release")
			finishing := callAsync(cs, "work__block", map[string]any{"file": release})
			p.logs.waitFor(t, regexp.MustCompile(`block: waiting for`))
			terminate(t, p)
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if res := receive(t, finishing, "call finishing within the grace"); res.IsError || resultText(res) != "unblocked" {
				t.Errorf("call finishing within the grace = %q (isError %v)", resultText(res), res.IsError)
			}
			if err := p.wait(t); err != nil {
				t.Errorf("mcpmux exited with %v", err)
			}
		})
		t.Run(mode+"/hanging", func(t *testing.T) {
			t.Parallel()
			cs, p := start(t, mode, "1s")
			hanging := callAsync(cs, "work__hang", nil)
			p.logs.waitFor(t, regexp.MustCompile(`hang: hanging`))
			terminate(t, p)
			res := receive(t, hanging, "call past the grace")
			if !res.IsError || !strings.Contains(resultText(res), "mcpmux is shutting down") || !strings.Contains(resultText(res), "grace period of 1s") {
				t.Errorf("call past the grace = %q (isError %v)", resultText(res), res.IsError)
			}
			if err := p.wait(t); err != nil {
				t.Errorf("mcpmux exited with %v", err)
			}
		})
	}
}

func TestFaultConcurrentClientsReloadsAndKill(t *testing.T) {
	t.Parallel()
	const clients, calls = 64, 20
	w := &watched{dir: writeConfig(t, map[string]string{
		"tool/a.yaml": faults("a"),
		"tool/b.yaml": faults("b", "max_concurrency: 4"),
	})}
	p := startHTTP(t, w.dir)
	w.p = p
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		cs, err := connectHTTP(t, p, "/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		sessions[i] = cs
	}
	childPID(t, sessions[0], "a") // a answers before the calls start

	var (
		done     atomic.Int32
		mu       sync.Mutex
		failures []string // calls without their own answer
		cutOff   int      // isError answers of calls the kill cut off
		wg       sync.WaitGroup
	)
	for i, cs := range sessions {
		wg.Go(func() {
			for j := range calls {
				server := []string{"a", "b"}[(i+j)%2]
				tag := fmt.Sprintf("c%d-%d", i, j)
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server + "__tag", Arguments: map[string]any{"tag": tag}})
				done.Add(1)
				mu.Lock()
				switch {
				case err != nil:
					failures = append(failures, fmt.Sprintf("%s %s: protocol error %v", server, tag, err))
				case res.IsError && server == "a" && strings.Contains(resultText(res), "the server exited"):
					cutOff++
				case res.IsError || resultText(res) != server+":"+tag:
					failures = append(failures, fmt.Sprintf("%s %s: answered %q (isError %v)", server, tag, resultText(res), res.IsError))
				}
				mu.Unlock()
			}
		})
	}
	// Events while the calls run, each after a share of them is done.
	at := func(share int) {
		testkit.Eventually(t, fmt.Sprintf("%d%% of the calls are done", share), func() bool { return int(done.Load()) >= clients*calls*share/100 })
	}
	at(10)
	w.write(t, "tool/a.yaml", faults("a", "  V: 1")) // restart a
	w.waitReloads(t, 1)
	at(30)
	pidA := childPID(t, sessions[0], "a")
	if err := syscall.Kill(pidA, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	at(50)
	w.write(t, "tool/c.yaml", faults("c")) // add c
	w.waitReloads(t, 2)
	at(70)
	w.write(t, "tool/b.yaml", faults("b", "max_concurrency: 2")) // restart b
	w.waitReloads(t, 3)
	wg.Wait()

	if n := done.Load(); n != clients*calls {
		t.Errorf("%d calls finished, want %d", n, clients*calls)
	}
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d calls, %d cut off by the kill", clients*calls, cutOff)
	if got := resultText(callTool(t, sessions[1], "c__tag", map[string]any{"tag": "new"})); got != "c:new" {
		t.Errorf("added server: %q", got)
	}
}

// wrapped returns the YAML of a faults server started through a shell
// that leaves a grandchild behind (sleep) and execs the fixture: a wrapper
// whose descendants share its process group, as under npx.
func wrapped(name string, extra ...string) string {
	return fmt.Sprintf("name: %s\ntool_command: sh\nargs: [\"-c\", \"sleep 3600 & exec \\\"$0\\\"\", %q]\nenv:\n  %s: faults\n  %s: %s\n%s\n",
		name, fixtureBin, fixtureEnv, faultsServerEnv, name, strings.Join(extra, "\n"))
}

// groupOf returns the child with pid and the processes of its group.
func groupOf(t *testing.T, mcpmuxPID, pid int) []proc {
	t.Helper()
	var group []proc
	pgid := 0
	tree := procTree(mcpmuxPID)
	for _, p := range tree {
		if p.pid == pid {
			pgid = p.pgid
		}
	}
	for _, p := range tree {
		if p.pgid == pgid {
			group = append(group, p)
		}
	}
	if pgid != pid || len(group) < 2 || !slices.ContainsFunc(group, func(p proc) bool { return p.comm == "sleep" }) {
		t.Fatalf("child %d: group %+v, want it leading a group with its sleep", pid, group)
	}
	return group
}

func waitAllGone(t *testing.T, ps []proc) {
	t.Helper()
	testkit.Await(t, "no process is left running", func() []proc { return stillRunning(ps) }, func(left []proc) bool { return len(left) == 0 })
}

func TestFaultWholeGroupEnds(t *testing.T) {
	t.Parallel()
	t.Run("reload removes the server", func(t *testing.T) {
		w := startWatched(t, map[string]string{
			"tool/wrapped.yaml": wrapped("wrapped"),
			"tool/other.yaml":   faults("other"),
		})
		group := groupOf(t, w.p.cmd.Process.Pid, childPID(t, w.cs, "wrapped"))
		if err := os.Remove(filepath.Join(w.dir, "tool/wrapped.yaml")); err != nil {
			t.Fatal(err)
		}
		w.p.logs.waitFor(t, regexp.MustCompile(`removed=\[wrapped\]`))
		waitAllGone(t, group)
		if got := resultText(callTool(t, w.cs, "other__tag", map[string]any{"tag": "x"})); got != "other:x" {
			t.Errorf("other server: %q", got)
		}
	})
	t.Run("per-client connection of a client that leaves", func(t *testing.T) {
		dir := writeConfig(t, map[string]string{"tool/wrapped.yaml": wrapped("wrapped", "session: per-client")})
		p := startHTTP(t, dir)
		cs, err := connectHTTP(t, p, "/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		group := groupOf(t, p.cmd.Process.Pid, childPID(t, cs, "wrapped"))
		if err := cs.Close(); err != nil {
			t.Fatal(err)
		}
		waitAllGone(t, group)
	})
}
