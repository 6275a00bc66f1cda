package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO, a symlink to /dev/zero, a directory and an oversized file in the
// config directory are reported by name and skipped, without blocking or
// reading forever; a symlink to a regular file (a Kubernetes ConfigMap)
// loads as usual. The same holds for mcpmux.yaml.
func TestLoadSkipsWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, ToolDir)
	if err := os.MkdirAll(filepath.Join(tool, "dir.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good.data", "name: good\ntool_command: mcpmux\n")
	write("tool/big.yaml", "name: big\ntool_command: mcpmux\n# "+strings.Repeat("x", MaxFileBytes)+"\n")
	for _, link := range []struct{ target, name string }{{"/dev/zero", "tool/zero.yaml"}, {"../good.data", "tool/good.yaml"}} {
		if err := os.Symlink(link.target, filepath.Join(dir, link.name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, fifo := range []string{"tool/fifo.yaml", SettingsFile} {
		if err := syscall.Mkfifo(filepath.Join(dir, fifo), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	type result struct {
		snap *Snapshot
		err  error
	}
	done := make(chan result, 1)
	go func() {
		snap, err := Load(dir, &Options{Lookup: env(nil)})
		done <- result{snap, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Load is blocked (on a FIFO?)")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.snap.Servers) != 1 || r.snap.Servers[0].Name != "good" {
		t.Errorf("servers %v, want good (through its symlink)", r.snap.Servers)
	}
	want := map[string]string{
		SettingsFile: "not a regular file but a named pipe (FIFO)",
		"big.yaml":   "larger than 1MiB",
		"dir.yaml":   "not a regular file but a directory",
		"fifo.yaml":  "not a regular file but a named pipe (FIFO)",
		"zero.yaml":  "not a regular file but a character device",
	}
	for _, fe := range r.snap.Errors {
		base := filepath.Base(fe.File)
		if w, ok := want[base]; !ok || !strings.Contains(fe.Error(), w) || !strings.HasPrefix(fe.Error(), fe.File+": ") {
			t.Errorf("error %q; want %q after the file's name", fe, w)
		}
		delete(want, base)
	}
	for name, w := range want {
		t.Errorf("no error for %s (want %q)", name, w)
	}
}
