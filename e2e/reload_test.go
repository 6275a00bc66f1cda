package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// watched is an mcpmux over stdio whose client records list_changed.
type watched struct {
	cs      *mcp.ClientSession
	p       *process
	dir     string
	changed chan struct{}
}

func startWatched(t *testing.T, files map[string]string, args ...string) *watched {
	t.Helper()
	w := &watched{dir: writeConfig(t, files), changed: make(chan struct{}, 100)}
	w.cs, w.p = startStdioWith(t, w.dir, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { w.changed <- struct{}{} },
	}, args...)
	toolNames(t, w.cs) // start-up done
	return w
}

func (w *watched) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitChanged waits for one list_changed notification.
func (w *watched) waitChanged(t *testing.T) {
	t.Helper()
	select {
	case <-w.changed:
	case <-time.After(testTimeout):
		t.Fatalf("no tools/list_changed; log:\n%s", w.p.logs.String())
	}
}

// waitTools waits for list_changed notifications until the listed tools
// satisfy ok. A client that connected during start-up may get one
// notification for the initial catalog; looping over notifications instead
// of counting them keeps that from confusing a test.
func (w *watched) waitTools(t *testing.T, ok func([]string) bool) []string {
	t.Helper()
	for {
		w.waitChanged(t)
		if names := toolNames(t, w.cs); ok(names) {
			return names
		}
	}
}

func has(name string) func([]string) bool {
	return func(names []string) bool { return slices.Contains(names, name) }
}

func lacks(name string) func([]string) bool {
	return func(names []string) bool { return !slices.Contains(names, name) }
}

// pending returns how many notifications arrived and were not waited for.
func (w *watched) pending() int { return len(w.changed) }

var reloadedRE = regexp.MustCompile(`msg="config reloaded" [^\n]*`)

// waitReloads waits for the nth "config reloaded" log line and returns it.
func (w *watched) waitReloads(t *testing.T, n int) string {
	t.Helper()
	return w.p.logs.waitForN(t, reloadedRE, n)[0]
}

func (w *watched) call(t *testing.T, name string, args any) string {
	t.Helper()
	res := callTool(t, w.cs, name, args)
	if res.IsError {
		t.Fatalf("%s failed: %s", name, resultText(res))
	}
	return resultText(res)
}

func TestReloadAddRemoveEdit(t *testing.T) {
	t.Parallel()
	w := startWatched(t, map[string]string{"tool/a.yaml": fixture("a", "echo")})
	pidA := w.call(t, "a__pid", nil)

	// Add a server: its tools appear, the client is told once.
	w.write(t, "tool/b.yaml", fixture("b", "echo"))
	w.waitTools(t, has("b__echo"))
	pidB := w.call(t, "b__pid", nil)
	if line := w.waitReloads(t, 1); !strings.Contains(line, "added=[b]") {
		t.Errorf("reload log %q does not say b was added", line)
	}

	// Delete it: gone, and its child exits.
	if err := os.Remove(filepath.Join(w.dir, "tool/b.yaml")); err != nil {
		t.Fatal(err)
	}
	w.waitTools(t, lacks("b__echo"))
	waitGone(t, atoi(t, pidB))

	// Edit a's env: a restarts with it; its tool list is the same, so no
	// list_changed is owed.
	w.write(t, "tool/a.yaml", fixture("a", "echo", "  GREETING: hello"))
	if line := w.waitReloads(t, 3); !strings.Contains(line, "restarted=[a]") {
		t.Errorf("reload log %q does not say a restarted", line)
	}
	if got := w.call(t, "a__env", map[string]any{"name": "GREETING"}); got != "hello" {
		t.Errorf("new env not seen: GREETING=%q", got)
	}
	newPidA := w.call(t, "a__pid", nil)
	if newPidA == pidA {
		t.Error("a kept its pid across an env change")
	}
	waitGone(t, atoi(t, pidA))

	// Touch, and save identical content: nothing happens.
	now := time.Now()
	if err := os.Chtimes(filepath.Join(w.dir, "tool/a.yaml"), now, now); err != nil {
		t.Fatal(err)
	}
	w.write(t, "tool/a.yaml", fixture("a", "echo", "  GREETING: hello"))
	w.p.logs.waitFor(t, regexp.MustCompile(`msg="config reloaded: no change"`))
	// A real change after them is the only notification.
	w.write(t, "tool/c.yaml", fixture("c", "echo"))
	w.waitTools(t, has("c__echo"))
	if n := w.pending(); n != 0 {
		t.Errorf("%d extra list_changed notifications", n)
	}
	if got := w.call(t, "a__pid", nil); got != newPidA {
		t.Errorf("a restarted (pid %s → %s) on a no-op save", newPidA, got)
	}
}

func TestReloadBrokenEditKeepsOldVersion(t *testing.T) {
	t.Parallel()
	w := startWatched(t, map[string]string{"tool/a.yaml": fixture("a", "echo", "  V: one")})
	pid := w.call(t, "a__pid", nil)

	w.write(t, "tool/a.yaml", "name: a\n  tool_command: [broken\n")
	w.p.logs.waitFor(t, regexp.MustCompile(`config file not applied.*a\.yaml`))
	if got := w.call(t, "a__env", map[string]any{"name": "V"}); got != "one" {
		t.Errorf("after a broken edit: V=%q, want the old version serving", got)
	}
	if got := w.call(t, "a__pid", nil); got != pid {
		t.Errorf("a restarted on a broken edit")
	}
	// An edit that parses but cannot start keeps the old version too.
	w.write(t, "tool/a.yaml", "name: a\ntool_command: /nonexistent/server\n")
	w.p.logs.waitFor(t, regexp.MustCompile(`server restart failed; the previous version keeps serving`))
	if got := w.call(t, "a__pid", nil); got != pid {
		t.Errorf("a failed restart replaced the working server")
	}
	// Fixing it applies.
	w.write(t, "tool/a.yaml", fixture("a", "echo", "  V: two"))
	w.p.logs.waitFor(t, regexp.MustCompile(`restarted=\[a\]`))
	if got := w.call(t, "a__env", map[string]any{"name": "V"}); got != "two" {
		t.Errorf("after the fix: V=%q", got)
	}
	if names := toolNames(t, w.cs); !slices.Contains(names, "a__echo") {
		t.Errorf("tools after the fix: %v", names)
	}
}

func TestReloadAtomicRenameSave(t *testing.T) {
	t.Parallel()
	w := startWatched(t, map[string]string{"tool/a.yaml": fixture("a", "echo", "  V: one")})
	// As editors save: write a temporary file, rename it over the original.
	tmp := filepath.Join(w.dir, "tool", ".a.yaml.swp")
	if err := os.WriteFile(tmp, []byte(fixture("a", "echo", "  V: two")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, "tool", "a.yaml")); err != nil {
		t.Fatal(err)
	}
	w.p.logs.waitFor(t, regexp.MustCompile(`restarted=\[a\]`))
	if got := w.call(t, "a__env", map[string]any{"name": "V"}); got != "two" {
		t.Errorf("V=%q after an atomic save", got)
	}
}

func TestReloadSettingsRestartNothing(t *testing.T) {
	t.Parallel()
	w := startWatched(t, map[string]string{
		"tool/a.yaml": fixture("a", "echo"),
		"tool/b.yaml": fixture("b", "echo"),
	})
	pidA, pidB := w.call(t, "a__pid", nil), w.call(t, "b__pid", nil)
	w.write(t, "mcpmux.yaml", "tool_blacklist: [[\"a\", \"env\"]]\n")
	if names := w.waitTools(t, lacks("a__env")); !slices.Contains(names, "b__env") {
		t.Errorf("after blacklisting a/env: %v", names)
	}
	if res := callTool(t, w.cs, "a__env", map[string]any{"name": "PATH"}); !res.IsError || !strings.Contains(resultText(res), "disabled") {
		t.Errorf("blacklisted call: %q", resultText(res))
	}
	if w.call(t, "a__pid", nil) != pidA || w.call(t, "b__pid", nil) != pidB {
		t.Error("a settings change restarted a server")
	}
	// A broken mcpmux.yaml keeps the previous settings.
	w.write(t, "mcpmux.yaml", "tool_blacklist: [[\"a\"]]\n")
	w.p.logs.waitFor(t, regexp.MustCompile(`config file not applied.*mcpmux\.yaml`))
	if names := toolNames(t, w.cs); slices.Contains(names, "a__env") {
		t.Errorf("broken settings dropped the blacklist: %v", names)
	}
}

func TestReloadLeavesRunningCallsAlone(t *testing.T) {
	t.Parallel()
	w := startWatched(t, map[string]string{
		"tool/slow.yaml":  fixture("slow", "echo"),
		"tool/other.yaml": fixture("other", "echo"),
	})
	release := filepath.Join(t.TempDir(), "release")
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := w.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow__block", Arguments: map[string]any{"file": release}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	w.p.logs.waitFor(t, regexp.MustCompile(`block: waiting for`))

	// Remove the server the call is running on, and change another one.
	if err := os.Remove(filepath.Join(w.dir, "tool/slow.yaml")); err != nil {
		t.Fatal(err)
	}
	w.write(t, "tool/other.yaml", fixture("other", "echo", "  V: x"))
	w.p.logs.waitFor(t, regexp.MustCompile(`removed=\[slow\] restarted=\[other\]`))
	if names := toolNames(t, w.cs); slices.Contains(names, "slow__block") {
		t.Errorf("removed server still listed")
	}
	select {
	case res := <-done:
		t.Fatalf("the running call ended before it was released: %s", resultText(res))
	default:
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.IsError || resultText(res) != "unblocked" {
			t.Errorf("running call across the reload: %q (isError %v)", resultText(res), res.IsError)
		}
	case <-time.After(testTimeout):
		t.Fatal("running call never finished")
	}
}

func TestReloadOnSIGHUPWithoutWatching(t *testing.T) {
	t.Parallel()
	w := startWatched(t, map[string]string{"tool/a.yaml": fixture("a", "echo")}, "--no-watch")
	w.write(t, "tool/b.yaml", fixture("b", "echo"))
	if err := w.p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	w.waitTools(t, has("b__echo"))
}

func TestReloadKubernetesConfigMapSwap(t *testing.T) {
	t.Parallel()
	// A ConfigMap volume: tool -> ..data/tool, ..data -> ..v1; an update
	// writes ..v2 and renames a new ..data symlink over the old one.
	dir := t.TempDir()
	version := func(name string, files map[string]string) {
		for f, content := range files {
			p := filepath.Join(dir, name, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	version("..v1", map[string]string{"tool/a.yaml": fixture("a", "echo")})
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/tool", filepath.Join(dir, "tool")); err != nil {
		t.Fatal(err)
	}
	w := &watched{dir: dir, changed: make(chan struct{}, 100)}
	w.cs, w.p = startStdioWith(t, dir, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { w.changed <- struct{}{} },
	})
	if names := toolNames(t, w.cs); !slices.Contains(names, "a__echo") {
		t.Fatalf("tools: %v", names)
	}
	swap := func(to string) {
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(to, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range []string{"..v2", "..v3"} {
		server := map[int]string{0: "b", 1: "c"}[i]
		version(v, map[string]string{"tool/a.yaml": fixture("a", "echo"), "tool/" + server + ".yaml": fixture(server, "echo")})
		swap(v)
		w.waitTools(t, has(server+"__echo"))
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	for _, r := range s {
		if r < '0' || r > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(r-'0')
	}
	return n
}
