package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSpecialFilesAreSkipped: a named pipe or a symlink to /dev/zero among
// the journal files is neither opened for good nor read without end; it is
// skipped with an error naming what it is, and the other files are read
// (issue 27, item 6).
func TestSpecialFilesAreSkipped(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok"+Ext), []byte(`{"kind":"call"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe"+Ext)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	zero := filepath.Join(dir, "zero"+Ext)
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	files, skipped, err := Files(dir)
	if err != nil || len(files) != 1 || filepath.Base(files[0]) != "ok"+Ext {
		t.Fatalf("Files = %v, %v", files, err)
	}
	var reasons []string
	for _, e := range skipped {
		reasons = append(reasons, e.Error())
	}
	got := strings.Join(reasons, "\n")
	if len(skipped) != 2 || !strings.Contains(got, "pipe"+Ext+": not a regular file but a named pipe (FIFO)") || !strings.Contains(got, "zero"+Ext+": not a regular file but a character device") {
		t.Errorf("skipped:\n%s", got)
	}
	// Scan itself refuses them, without blocking on the pipe.
	for _, p := range []string{fifo, zero} {
		err := Scan(p, func(int64, []byte) error { return errors.New("read a line") })
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Scan(%s) = %v", p, err)
		}
	}
}

// TestScanReadsAGrowingFileOnce: Scan stops at the size the file had when
// it was opened, so a file written to without end is read in bounded time.
func TestScanReadsAGrowingFileOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t"+Ext)
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	err = Scan(path, func(_ int64, b []byte) error {
		lines = append(lines, string(b))
		if len(lines) > 100 {
			return errors.New("still reading")
		}
		_, err := f.WriteString("more\n") // appended while being read
		return err
	})
	if err != nil || strings.Join(lines, ",") != "a,b" {
		t.Errorf("Scan read %d lines %v: %v", len(lines), lines[:min(len(lines), 5)], err)
	}
}
