package e2e

import (
	"regexp"
	"syscall"
	"testing"
)

// kill -9 of mcpmux leaves nothing behind: not its children (the kernel's
// parent-death signal), and not what they started in their process groups
// (the reaper process ends the groups), for shared and per-client servers.
func TestKillMinus9LeavesNoOrphans(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/shared.yaml": wrapped("shared"),
		"tool/own.yaml":    wrapped("own", "session: per-client"),
	})
	p := startHTTP(t, dir)
	cs, err := connectHTTP(t, p, "/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	shared := groupOf(t, p.cmd.Process.Pid, childPID(t, cs, "shared"))
	own := groupOf(t, p.cmd.Process.Pid, childPID(t, cs, "own"))
	tree := procTree(p.cmd.Process.Pid) // the groups, and the reaper
	t.Cleanup(func() {                  // should the test fail, leave nothing behind either
		for _, q := range stillRunning(tree) {
			_ = syscall.Kill(q.pid, syscall.SIGKILL)
		}
	})
	if len(tree) < len(shared)+len(own) {
		t.Fatalf("descendants of mcpmux: %+v, want both groups", tree)
	}

	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t); err == nil {
		t.Fatal("mcpmux survived kill -9")
	}
	waitAllGone(t, tree)
	p.logs.waitFor(t, regexp.MustCompile(`mcpmux is gone without closing its children: their process groups were terminated" groups=[1-9]`))
}
