package config

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long a watcher waits after the last file event
// before reading the directory again: editors and Kubernetes write a file in
// several steps.
const DefaultDebounce = 150 * time.Millisecond

// WatchOptions configure a Watcher. The zero value is usable.
type WatchOptions struct {
	Load     *Options      // passed to Load
	Debounce time.Duration // zero means DefaultDebounce
	Logger   *slog.Logger  // nil discards
}

// Watcher turns any change in a config directory into a whole new
// Snapshot. It does not compare snapshots: that is the receiver's job.
//
// It watches the directory and its tool/ subdirectory, skips Chmod-only
// events, debounces, treats an event overflow as "read everything again",
// and re-adds a watched directory that was replaced (an editor or
// Kubernetes swapping a ..data symlink). Snapshots are delivered on a
// one-slot channel where the latest wins: a slow receiver never sees a
// stale snapshot after a newer one.
type Watcher struct {
	dir  string
	opts WatchOptions
	log  *slog.Logger
	fsw  *fsnotify.Watcher
	out  chan *Snapshot
	kick chan struct{}
	done chan struct{}

	mu     sync.Mutex
	inodes map[string]uint64 // watched path → inode it had when added
}

// Watch starts watching dir. Stop it by cancelling ctx.
func Watch(ctx context.Context, dir string, opts *WatchOptions) (*Watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &Watcher{
		dir:    dir,
		fsw:    fsw,
		out:    make(chan *Snapshot, 1),
		kick:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		inodes: map[string]uint64{},
	}
	if opts != nil {
		w.opts = *opts
	}
	if w.opts.Debounce <= 0 {
		w.opts.Debounce = DefaultDebounce
	}
	w.log = w.opts.Logger
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if err := w.ensureWatches(); err != nil {
		fsw.Close()
		return nil, err
	}
	go w.run(ctx)
	return w, nil
}

// Snapshots delivers a new snapshot after each burst of changes.
func (w *Watcher) Snapshots() <-chan *Snapshot { return w.out }

// Rescan asks for a new snapshot now (for SIGHUP).
func (w *Watcher) Rescan() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Done is closed when the watcher has stopped.
func (w *Watcher) Done() <-chan struct{} { return w.done }

func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	defer w.fsw.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue // touch, permission change: nothing to read
			}
			timer.Reset(w.opts.Debounce)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.log.Warn("config watcher missed events; reading the directory again")
			} else {
				w.log.Error("config watcher error", "error", err)
			}
			timer.Reset(w.opts.Debounce)
		case <-w.kick:
			timer.Reset(0)
		case <-timer.C:
			if err := w.ensureWatches(); err != nil {
				w.log.Error("config watcher cannot watch the directory", "dir", w.dir, "error", err)
			}
			snap, err := Load(w.dir, w.opts.Load)
			if err != nil {
				w.log.Error("config directory unreadable; keeping the running configuration", "error", err)
				continue
			}
			w.publish(snap)
		}
	}
}

// publish replaces any undelivered snapshot with snap.
func (w *Watcher) publish(snap *Snapshot) {
	for {
		select {
		case w.out <- snap:
			return
		default:
		}
		select {
		case <-w.out: // drop the stale one
		default:
		}
	}
}

// ensureWatches watches the directory and tool/, re-adding either if the
// path now refers to another directory than the one watched.
func (w *Watcher) ensureWatches() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var firstErr error
	for _, p := range []string{w.dir, filepath.Join(w.dir, ToolDir)} {
		ino, err := inode(p)
		if err != nil {
			delete(w.inodes, p)
			if p == w.dir && firstErr == nil {
				firstErr = err
			}
			continue
		}
		if old, ok := w.inodes[p]; ok && old == ino {
			continue
		}
		_ = w.fsw.Remove(p)
		if err := w.fsw.Add(p); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		w.inodes[p] = ino
	}
	return firstErr
}

func inode(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if !fi.IsDir() {
		return 0, errors.New(path + " is not a directory")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino, nil
	}
	return 0, nil
}
