package upstream

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcpmux/mcpmux/internal/logs"
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
//
// Lines are masked (the config's secrets, see logs.Masker) before they are
// cut to a length limit, never after: cut first, a secret across the cut
// would show its first characters, which the masker no longer recognises.
// For the same reason a line longer than maxPendingBytes is logged from its
// first maxPendingBytes and the rest of it dropped, rather than in pieces.
type lineLogger struct {
	log    *slog.Logger
	mask   *logs.Masker
	stream string

	mu       sync.Mutex
	now      time.Time // of the Write being handled
	buf      []byte    // the line being written, up to maxPendingBytes
	overlong bool      // the line being written was cut: drop it up to its end
	window   time.Time
	lines    int
	dropped  int
	tail     [tailLines][]byte // last lines, unmasked, for error messages
	next     int               // slot of tail the next line goes to
	kept     int               // lines in tail
}

// newLineLogger logs the lines of stream to log; mask is the masker of log
// (nil masks nothing), which also masks the lines Tail returns.
func newLineLogger(log *slog.Logger, mask *logs.Masker, stream string) *lineLogger {
	return &lineLogger{log: log, mask: mask, stream: stream}
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// One clock read per chunk, not per line: reading the clock can be a
	// system call (in VMs without a vDSO clock), and was most of what a
	// flood cost.
	l.now = time.Now()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		switch {
		case l.overlong:
		case len(l.buf) == 0 && i >= 0 && len(part) <= maxPendingBytes:
			l.emit(part) // the common case: a whole line, not copied
		default:
			room := maxPendingBytes - len(l.buf)
			l.buf = append(l.buf, part[:min(len(part), room)]...)
			if len(part) > room {
				l.emit(l.buf)
				l.buf, l.overlong = l.buf[:0], true
			}
		}
		if i < 0 {
			break
		}
		if !l.overlong && len(l.buf) > 0 {
			l.emit(l.buf)
		}
		l.buf, l.overlong = l.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// Tail returns the last lines written, masked and cut to maxTailLine
// bytes each, joined, for an error message.
func (l *lineLogger) Tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for i := range l.kept {
		parts = append(parts, l.cut(l.tail[(l.next-l.kept+i+tailLines)%tailLines], maxTailLine))
	}
	if len(l.buf) > 0 && !l.overlong {
		parts = append(parts, l.cut(l.buf, maxTailLine))
	}
	return strings.Join(parts, " | ")
}

// cut masks line and cuts it to n bytes (on a UTF-8 boundary), marking a
// cut with "…".
func (l *lineLogger) cut(line []byte, n int) string {
	s := l.mask.Mask(string(line))
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func (l *lineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		return
	}
	// Kept unmasked, in a buffer of its own that is reused: masking and
	// copying into a new string would cost a flood that is mostly dropped.
	l.tail[l.next] = append(l.tail[l.next][:0], line...)
	l.next = (l.next + 1) % tailLines
	l.kept = min(l.kept+1, tailLines)
	if l.now.Sub(l.window) >= time.Second {
		if l.dropped > 0 {
			l.log.Warn("child wrote too much to "+l.stream+"; lines dropped", "dropped", l.dropped)
		}
		l.window, l.lines, l.dropped = l.now, 0, 0
	}
	if l.lines >= maxLinesPerSec {
		l.dropped++
		return
	}
	l.lines++
	l.logLine(line)
}

// maxChildFields bounds the fields of a child's structured line that are
// logged; the rest are counted.
const maxChildFields = 32

// logLine logs a line of the child's: a structured one (see
// logs.ParseChildLine) as a record of mcpmux's log with the child's level,
// message and fields, anything else as the message. Each part is masked,
// then cut.
func (l *lineLogger) logLine(line []byte) {
	rec, ok := logs.ParseChildLine(line)
	if !ok {
		l.log.Log(context.Background(), lineLevel(line, slog.LevelInfo), l.cut(line, maxLogLine), "stream", l.stream)
		return
	}
	attrs := make([]any, 0, 2+2*min(len(rec.Fields), maxChildFields)+2)
	attrs = append(attrs, "stream", l.stream)
	for i, f := range rec.Fields {
		if i == maxChildFields {
			attrs = append(attrs, "fields_dropped", len(rec.Fields)-i)
			break
		}
		attrs = append(attrs, f.Key, l.cut([]byte(f.Value), maxLogLine))
	}
	msg := []byte(rec.Msg)
	l.log.Log(context.Background(), lineLevel(msg, rec.Level), l.cut(msg, maxLogLine), attrs...)
}

// lineLevel is the level of a child's line: level, or Debug for a line
// that reports an answer of mcpmux's own refusing to forward a request
// (forwardError) when no client can take it. Servers log that, but it
// is expected: roots/list while no client's call is running, say.
func lineLevel(line []byte, level slog.Level) slog.Level {
	if bytes.Contains(line, []byte(forwardRefusal)) {
		return min(level, slog.LevelDebug)
	}
	return level
}
