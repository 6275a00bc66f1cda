// Package reaper ends the process groups of mcpmux's children when mcpmux
// itself is killed without a chance to do it (kill -9, the OOM killer).
//
// Every child runs in its own process group, which mcpmux terminates when
// it closes the child. Killed, it closes nothing: the kernel's
// PR_SET_PDEATHSIG (upstream sets SIGKILL) ends each direct child, but not
// what the child started in its group (an npx wrapper's node server), which
// lives on, adopted by init. A subreaper (PR_SET_CHILD_SUBREAPER) does not
// help either: orphans go to the nearest living subreaper, and mcpmux is
// the one that died.
//
// So mcpmux starts this small process, its own binary in another mode
// (Run), with a pipe on its stdin, and tells it each process group it
// starts and ends (Track, Untrack). The pipe's other end is held by mcpmux
// alone (close-on-exec: no child inherits it), so the reaper reads EOF
// exactly when mcpmux is gone, however it went. It then terminates every
// group still tracked, SIGTERM and after a grace period SIGKILL, and exits.
// When mcpmux exits normally it has closed its children first, so there is
// nothing left to do.
//
// The reaper ignores SIGINT, SIGTERM, SIGHUP and SIGPIPE, and runs in a
// process group of its own, so that a Ctrl-C, a "kill" of every mcpmux or
// a closed terminal leaves it to finish its job; only SIGKILL stops it.
// Processes that leave their group (setsid) are beyond it.
package reaper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Command is the hidden mcpmux command that runs Run.
const Command = "__reaper"

// Grace is how long the groups get between SIGTERM and SIGKILL.
const Grace = 3 * time.Second

// Reaper is mcpmux's side: the pipe to the reaper process. A nil *Reaper
// tracks nothing.
type Reaper struct {
	log  *slog.Logger
	cmd  *exec.Cmd
	mu   sync.Mutex
	w    *os.File // nil once writing failed
	done chan struct{}
}

// Start starts the reaper process: self (mcpmux's binary) with Command as
// its argument. Its stderr is stderr; log gets mcpmux's own messages about
// it.
func Start(self string, stderr *os.File, log *slog.Logger) (*Reaper, error) {
	r, w, err := os.Pipe() // close-on-exec: only the reaper gets r, as its stdin
	if err != nil {
		return nil, fmt.Errorf("starting the child reaper: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(self, Command)
	cmd.Stdin, cmd.Stderr = r, stderr // stdout: /dev/null; on stdio it is the protocol's
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the child reaper: %w", err)
	}
	rp := &Reaper{log: log, cmd: cmd, w: w, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(rp.done)
	}()
	return rp, nil
}

// Track tells the reaper of a process group that is starting.
func (rp *Reaper) Track(pgid int) { rp.send('+', pgid) }

// Untrack tells the reaper that a process group has ended.
func (rp *Reaper) Untrack(pgid int) { rp.send('-', pgid) }

func (rp *Reaper) send(op byte, pgid int) {
	if rp == nil || pgid <= 0 {
		return
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.w == nil {
		return
	}
	if _, err := fmt.Fprintf(rp.w, "%c%d\n", op, pgid); err != nil {
		rp.log.Warn("the child reaper is gone: children would outlive a killed mcpmux", "error", err)
		rp.w.Close()
		rp.w = nil
	}
}

// Close ends the reaper: it exits once it has read what was sent, ending
// the groups still tracked (none, after a clean shutdown). It waits for
// that, up to Grace and a moment.
func (rp *Reaper) Close() {
	if rp == nil {
		return
	}
	rp.mu.Lock()
	if rp.w != nil {
		rp.w.Close()
		rp.w = nil
	}
	rp.mu.Unlock()
	select {
	case <-rp.done:
	case <-time.After(Grace + time.Second):
	}
}

// PID returns the reaper's process id.
func (rp *Reaper) PID() int {
	if rp == nil || rp.cmd.Process == nil {
		return 0
	}
	return rp.cmd.Process.Pid
}

// Run is the reaper process: it reads "+PGID" and "-PGID" lines from in
// until EOF, then terminates the groups still tracked. It returns the
// process's exit code.
func Run(in io.Reader, stderr io.Writer) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	reap(in, stderr, Grace)
	return 0
}

// reap reads the tracked groups until EOF and ends those left, giving them
// grace between SIGTERM and SIGKILL.
func reap(in io.Reader, stderr io.Writer, grace time.Duration) {
	groups := map[int]bool{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	if len(groups) == 0 {
		return
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	n := len(groups)
	killed := end(groups, grace)
	log.Warn("mcpmux is gone without closing its children: their process groups were terminated", "groups", n, "sigkill", killed)
}

// alive reports whether a process of the group still runs. Zombies do not
// count: they are dead, and waiting for whoever adopted them to reap them
// (kill(-pgid, 0) still finds them) would only delay the SIGKILL of the
// others.
func alive(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 2 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// end sends SIGTERM to each group, waits up to grace for them to go, and
// sends SIGKILL to those left; it returns how many needed SIGKILL.
func end(groups map[int]bool, grace time.Duration) (killed int) {
	for pgid := range groups {
		if err := syscall.Kill(-pgid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
			delete(groups, pgid)
		}
	}
	deadline := time.Now().Add(grace)
	for len(groups) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		for pgid := range groups {
			if !alive(pgid) {
				delete(groups, pgid)
			}
		}
	}
	for pgid := range groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		killed++
	}
	return killed
}
