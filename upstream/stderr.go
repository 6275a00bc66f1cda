package upstream

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

const (
	maxLogLine      = 4096 // longer lines are cut
	maxLinesPerSec  = 200  // more are counted and dropped
	maxPendingBytes = 64 << 10
	tailLines       = 3   // kept to explain a failed start
	maxTailLine     = 300 // bytes per kept line
)

// lineLogger is an io.Writer that logs each line a child writes to stderr,
// tagged with the server's name. It never blocks the child for long: lines
// beyond a rate limit are dropped (and counted), so a child that floods
// stderr slows nobody down.
type lineLogger struct {
	log    *slog.Logger
	stream string

	mu      sync.Mutex
	buf     []byte
	window  time.Time
	lines   int
	dropped int
	tail    []string // last lines, for error messages
}

func newLineLogger(log *slog.Logger, stream string) *lineLogger {
	return &lineLogger{log: log, stream: stream}
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.buf = append(l.buf, p...)
			if len(l.buf) > maxPendingBytes {
				l.emit(l.buf)
				l.buf = l.buf[:0]
			}
			break
		}
		if len(l.buf) > 0 {
			l.buf = append(l.buf, p[:i]...)
			l.emit(l.buf)
			l.buf = l.buf[:0]
		} else {
			l.emit(p[:i])
		}
		p = p[i+1:]
	}
	return n, nil
}

// Tail returns the last lines written, joined, for an error message.
func (l *lineLogger) Tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		return strings.Join(append(slices.Clone(l.tail), cut(string(l.buf), maxTailLine)), " | ")
	}
	return strings.Join(l.tail, " | ")
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (l *lineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		return
	}
	if len(l.tail) == tailLines {
		l.tail = l.tail[1:]
	}
	l.tail = append(l.tail, cut(string(line), maxTailLine))
	now := time.Now()
	if now.Sub(l.window) >= time.Second {
		if l.dropped > 0 {
			l.log.Warn("child wrote too much to "+l.stream+"; lines dropped", "dropped", l.dropped)
		}
		l.window, l.lines, l.dropped = now, 0, 0
	}
	if l.lines >= maxLinesPerSec {
		l.dropped++
		return
	}
	l.lines++
	if len(line) > maxLogLine {
		line = append(line[:maxLogLine:maxLogLine], "…"...)
	}
	l.log.Info(string(line), "stream", l.stream)
}
