package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// A FIFO and a symlink to /dev/zero in tool/ are skipped by name, by check
// as by a running mcpmux, and hot reload goes on working after them (it
// used to block on the FIFO for good, and to read /dev/zero until memory
// ran out).
func TestSpecialFilesInToolDir(t *testing.T) {
	t.Parallel()
	w := startWatched(t, map[string]string{"tool/a.yaml": fixture("a", "echo")})
	if err := syscall.Mkfifo(filepath.Join(w.dir, "tool/pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.p.logs.waitFor(t, regexp.MustCompile(`config file [^\n]*pipe\.yaml[^\n]*not a regular file but a named pipe`))
	if err := os.Symlink("/dev/zero", filepath.Join(w.dir, "tool/zero.yaml")); err != nil {
		t.Fatal(err)
	}
	w.p.logs.waitFor(t, regexp.MustCompile(`config file [^\n]*zero\.yaml[^\n]*not a regular file but a character device`))

	w.write(t, "tool/b.yaml", fixture("b", "echo"))
	w.waitTools(t, has("b__echo"))
	if got := w.call(t, "b__echo", map[string]any{"text": "after"}); got != "echo: after" {
		t.Errorf("server added after the FIFO: %q", got)
	}

	out, _, code := runMcpmux(t, "check", "--config", w.dir)
	for _, want := range []string{"pipe.yaml: not a regular file but a named pipe (FIFO)", "zero.yaml: not a regular file but a character device"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("check: exit %d, want 1 and %q in:\n%s", code, want, out)
		}
	}
}
