package upstream

import (
	"bytes"
	"log/slog"
	"testing"
)

// BenchmarkStderrFlood is what a child flooding stderr costs mcpmux per
// chunk the pipe delivers: 64 KiB of 120-byte lines, almost all of them
// over the rate limit (the logger discards what it logs).
func BenchmarkStderrFlood(b *testing.B) {
	l := newLineLogger(slog.New(slog.DiscardHandler), "stderr")
	chunk := bytes.Repeat([]byte("flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood\n"), 64<<10/121)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		_, _ = l.Write(chunk)
	}
}
