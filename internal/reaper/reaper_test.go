package reaper

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// group starts a shell in a process group of its own with a child in it,
// as an npx wrapper has; it returns the group's id once the script runs
// its child (so after any trap it sets).
func group(t *testing.T, script string) int {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command("sh", "-c", script+" & touch "+ready+"; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			return pgid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q did not start", script)
		}
	}
}

// gone reports whether no live process (zombies aside) is in the group.
func gone(pgid int) bool { return !alive(pgid) }

// waitGone waits, bounded, until the group has no live process left.
func waitGone(t *testing.T, pgid int) bool {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if gone(pgid) {
			return true
		}
	}
	return false
}

// At EOF, the groups still tracked are ended: with SIGTERM, or SIGKILL
// for one that ignores it; an untracked group is left alone.
func TestReapEndsTrackedGroups(t *testing.T) {
	polite := group(t, "sleep 60")
	stubborn := group(t, "trap '' TERM; sleep 60")
	other := group(t, "sleep 60")
	var log bytes.Buffer
	in := strings.NewReader(fmt.Sprintf("+%d\n+%d\n+%d\n-%d\nnoise\n+1\n", polite, stubborn, other, other))
	reap(in, &log, 500*time.Millisecond)
	for _, g := range []int{polite, stubborn} {
		if !waitGone(t, g) {
			t.Errorf("tracked group %d left running", g)
		}
	}
	if gone(other) {
		t.Error("an untracked group was ended")
	}
	if !strings.Contains(log.String(), "groups=2 sigkill=1") {
		t.Errorf("log: %s", log.String())
	}
}
