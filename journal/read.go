package journal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Files lists the journal files of dir, sorted by task file, each task's
// rotated file (<stem>.jsonl.1) before its current one, so that lines come
// in the order they were written.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading journal directory: %w", err)
	}
	var stems []string
	has := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !(strings.HasSuffix(name, Ext) || strings.HasSuffix(name, Ext+".1")) {
			continue
		}
		has[name] = true
		stem := strings.TrimSuffix(strings.TrimSuffix(name, ".1"), Ext)
		if !slices.Contains(stems, stem) {
			stems = append(stems, stem)
		}
	}
	slices.Sort(stems)
	var files []string
	for _, s := range stems {
		for _, name := range []string{s + Ext + ".1", s + Ext} {
			if has[name] {
				files = append(files, filepath.Join(dir, name))
			}
		}
	}
	return files, nil
}

// Scan calls fn with each line of the file at path (without its newline)
// and the offset it starts at, until fn returns an error, which Scan
// returns. The bytes are fn's only until it returns.
func Scan(path string, fn func(off int64, line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var off int64
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			n := int64(len(line))
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
