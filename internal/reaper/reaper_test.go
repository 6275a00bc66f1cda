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

	"github.com/mcpmux/mcpmux/internal/testkit"
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
	testkit.Eventually(t, fmt.Sprintf("%q runs its child", script), func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	return pgid
}

// gone reports whether no live process (zombies aside) is in the group.
func gone(pgid int) bool { return !alive(pgid) }

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
		testkit.Eventually(t, fmt.Sprintf("tracked group %d has no live process", g), func() bool { return gone(g) })
	}
	if gone(other) {
		t.Error("an untracked group was ended")
	}
	if !strings.Contains(log.String(), "groups=2 sigkill=1") {
		t.Errorf("log: %s", log.String())
	}
}
