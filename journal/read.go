package journal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// MaxLineBytes bounds a journal line as it is read: a longer one (no real
// line is: a result is at most max_result_bytes) is passed on cut to this
// length, which no JSON decoder reads, so it counts as unreadable and the
// rest of the file is still read.
const MaxLineBytes = 64 << 20

// Files lists the journal files of dir, sorted by task file, each task's
// rotated file (<stem>.jsonl.1) before its current one, so that lines come
// in the order they were written. Only regular files (or symlinks to them)
// are listed: a named pipe would block the read (and with it start-up or
// a reload that replays), a symlink to /dev/zero would never end. Those
// are returned in skipped, each an error saying what it is.
func Files(dir string) (files []string, skipped []error, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading journal directory: %w", err)
	}
	var stems []string
	has := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !(strings.HasSuffix(name, Ext) || strings.HasSuffix(name, Ext+".1")) {
			continue
		}
		info, err := os.Stat(filepath.Join(dir, name))
		if err == nil {
			err = checkRegular(filepath.Join(dir, name), info)
		}
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		has[name] = true
		stem := strings.TrimSuffix(strings.TrimSuffix(name, ".1"), Ext)
		if !slices.Contains(stems, stem) {
			stems = append(stems, stem)
		}
	}
	slices.Sort(stems)
	for _, s := range stems {
		for _, name := range []string{s + Ext + ".1", s + Ext} {
			if has[name] {
				files = append(files, filepath.Join(dir, name))
			}
		}
	}
	return files, skipped, nil
}

// checkRegular refuses what is not a regular file, naming what it is.
func checkRegular(path string, info fs.FileInfo) error {
	m := info.Mode()
	if m.IsRegular() {
		return nil
	}
	kind := "a special file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	}
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file but %s: journal files must be regular files (or symlinks to them); skipped", kind)}
}

// Scan calls fn with each line of the file at path (without its newline)
// and the offset it starts at, until fn returns an error, which Scan
// returns. The bytes are fn's only until it returns. The file must be
// regular: it is opened without blocking and checked on the open file (a
// FIFO swapped in after Files cannot hang the open), and read up to the
// size it had then, so a file that keeps growing is read once. A line is
// bounded by MaxLineBytes.
func Scan(path string, fn func(off int64, line []byte) error) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if err := checkRegular(path, info); err != nil {
		return err
	}
	r := bufio.NewReaderSize(io.LimitReader(f, info.Size()), 64<<10)
	var off int64
	for {
		line, err := r.ReadSlice('\n')
		n := int64(len(line))
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole, up to the
			// bound, and skip the rest of it.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				n += int64(len(line))
				if len(long) < MaxLineBytes {
					long = append(long, line[:min(len(line), MaxLineBytes-len(long))]...)
				}
			}
			line = long
		}
		if n > 0 {
			if ferr := fn(off, trimNewline(line)); ferr != nil {
				return ferr
			}
			off += n
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}

// ReadLineAt reads the line of n bytes at off of the file at path, as
// Scan found it.
func ReadLineAt(path string, off int64, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}
