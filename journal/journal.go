package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/mcpmux/mcpmux/internal/logs"
)

// Options configure a Journal.
type Options struct {
	// Log receives write failures (once per file until it works again);
	// nil discards.
	Log *slog.Logger
	// Mask hides the config's secrets in every line written; nil masks
	// nothing.
	Mask *logs.Masker
	// OnError is called for every line that could not be written, e.g.
	// to count it; nil means nobody is told but the log.
	OnError func()
}

// Journal writes the journal files of one directory, which Configure may
// change at any time (a reload); the zero directory writes nothing. It is
// safe for concurrent use: lines of different tasks are written in
// parallel, lines of one task one at a time, each with one write.
type Journal struct {
	log     *slog.Logger
	mask    *logs.Masker
	onError func()

	// mu guards the configuration: writers hold it shared for the whole
	// write, Configure exclusively, so that no line goes to a file that
	// is being closed.
	mu       sync.RWMutex
	dir      string
	maxBytes int64
	on       atomic.Bool

	filesMu sync.Mutex
	files   map[string]*file // by file stem, in dir
}

// file is one task's journal file.
type file struct {
	mu       sync.Mutex
	path     string
	f        *os.File // nil until opened, or after a failure to open
	size     int64
	catalogs map[string]string // profile → hash of the last catalog line written
	failing  bool              // the last write failed; logged once
	lost     int               // lines lost since it began failing
}

// New returns a journal that writes nothing until Configure gives it a
// directory.
func New(opts *Options) *Journal {
	j := &Journal{files: map[string]*file{}}
	if opts != nil {
		j.log, j.mask, j.onError = opts.Log, opts.Mask, opts.OnError
	}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	return j
}

// Configure makes the journal write into dir (created on the first line),
// rotating files at maxBytes; an empty dir turns it off. The files of the
// previous directory are closed. An unchanged configuration changes
// nothing.
func (j *Journal) Configure(dir string, maxBytes int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if dir == j.dir && maxBytes == j.maxBytes {
		return
	}
	if dir != j.dir {
		j.closeFilesLocked()
	}
	j.dir, j.maxBytes = dir, maxBytes
	j.on.Store(dir != "")
}

// On reports whether the journal writes: whether calls need a record.
func (j *Journal) On() bool { return j != nil && j.on.Load() }

// Close closes the open files; a later line opens its file again.
func (j *Journal) Close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closeFilesLocked()
}

func (j *Journal) closeFilesLocked() {
	j.filesMu.Lock()
	defer j.filesMu.Unlock()
	for stem, f := range j.files {
		f.mu.Lock()
		if f.f != nil {
			_ = f.f.Close()
		}
		f.mu.Unlock()
		delete(j.files, stem)
	}
}

// file returns the file of a task; the caller holds j.mu shared.
func (j *Journal) file(task string) *file {
	stem := FileStem(task)
	j.filesMu.Lock()
	defer j.filesMu.Unlock()
	f := j.files[stem]
	if f == nil {
		f = &file{path: filepath.Join(j.dir, stem+Ext), catalogs: map[string]string{}}
		j.files[stem] = f
	}
	return f
}

// write appends the lines of one call to its task's file, each with one
// write. before, if set, is asked for lines to put first (a catalog the
// file lacks), under the file's lock.
func (j *Journal) write(task string, line []byte, before func(*file) []byte) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.dir == "" {
		return
	}
	f := j.file(task)
	f.mu.Lock()
	defer f.mu.Unlock()
	if before != nil {
		// Should the line rotate the file, rotate first: what goes before
		// it belongs in the new file.
		if line != nil {
			if err := j.prepare(f, int64(len(line))); err != nil {
				j.failed(f, err)
				return
			}
		}
		if b := before(f); b != nil {
			j.appendLine(f, b)
		}
	}
	if line != nil {
		j.appendLine(f, line)
	}
}

// appendLine writes one line (ending in '\n') to f, opening or rotating
// the file first as needed. A failure is logged and counted, never
// returned: the call the line is about has its answer already.
func (j *Journal) appendLine(f *file, line []byte) {
	if err := j.prepare(f, int64(len(line))); err != nil {
		j.failed(f, err)
		return
	}
	n, err := f.f.Write(line)
	if err != nil {
		if n > 0 {
			// Disk full mid-line: cut the partial line off again, so that
			// the file stays whole lines.
			_ = f.f.Truncate(f.size)
		}
		j.failed(f, err)
		return
	}
	f.size += int64(n)
	if f.failing {
		j.log.Info("journal: writing again", "file", f.path, "lines_lost", f.lost)
		f.failing, f.lost = false, 0
	}
}

// prepare opens f for a line of n bytes, rotating it first if the line
// would take it past max_bytes.
func (j *Journal) prepare(f *file, n int64) error {
	if f.f != nil && f.size > 0 && f.size+n > j.maxBytes {
		_ = f.f.Close()
		f.f = nil
		if err := os.Rename(f.path, f.path+".1"); err != nil {
			return fmt.Errorf("rotating: %w", err)
		}
		clear(f.catalogs) // the new file records its catalog again
	}
	if f.f != nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return err
	}
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	st, err := fh.Stat()
	if err != nil {
		_ = fh.Close()
		return err
	}
	if st.Mode().IsRegular() && st.Mode().Perm() != 0o600 {
		// A file made by someone else: it holds what the calls carried.
		_ = fh.Chmod(0o600)
	}
	f.f, f.size = fh, st.Size()
	if f.size > 0 && f.size+n > j.maxBytes {
		return j.prepare(f, n)
	}
	return nil
}

// failed reports a line that could not be written: logged when the file
// begins failing (not for every call while the disk stays full), always
// counted.
func (j *Journal) failed(f *file, err error) {
	if j.onError != nil {
		j.onError()
	}
	f.lost++
	if f.f != nil && !errors.Is(err, os.ErrClosed) {
		// Opened anew on the next line: the disk may have room again, or
		// the directory have come back.
		_ = f.f.Close()
		f.f = nil
	}
	if !f.failing {
		f.failing = true
		j.log.Error("journal: cannot write a line; calls go on without it", "file", f.path, "error", err)
	}
}
