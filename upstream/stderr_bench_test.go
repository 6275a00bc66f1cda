package upstream

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
)

// BenchmarkStderrFlood is what a child flooding stderr costs mcpmux per
// chunk the pipe delivers: 64 KiB of 120-byte lines, almost all of them
// over the rate limit (the logger discards what it logs).
func BenchmarkStderrFlood(b *testing.B) {
	l := newLineLogger(slog.New(slog.DiscardHandler), nil, "stderr")
	chunk := bytes.Repeat([]byte("flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood\n"), 64<<10/121)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		_, _ = l.Write(chunk)
	}
}

// A child's stderr buffer starts small, doubles while reads fill it, up
// to stderrChunk, and shrinks back once the child writes little again.
func TestStderrBufferGrowsOnDemand(t *testing.T) {
	buf := make([]byte, stderrFirstChunk)
	var sizes []int
	for range 8 {
		buf = nextStderrBuffer(buf, len(buf)) // a full read
		sizes = append(sizes, len(buf))
	}
	want := []int{8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 256 << 10, 256 << 10}
	if !slices.Equal(sizes, want) {
		t.Errorf("sizes while flooded = %v, want %v", sizes, want)
	}
	if got := len(nextStderrBuffer(buf, 10<<10)); got != stderrChunk {
		t.Errorf("after a read of 10 KiB: %d bytes, want the buffer kept", got)
	}
	if got := len(nextStderrBuffer(buf, 100)); got != stderrFirstChunk {
		t.Errorf("after a short read: %d bytes, want %d", got, stderrFirstChunk)
	}
}

// Lines longer than the first buffer, split across reads of growing
// buffers, are logged whole.
func TestStderrDrainAcrossBufferSizes(t *testing.T) {
	h := &recordHandler{}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	e := &childStderr{lineLogger: newLineLogger(slog.New(h), nil, "stderr"), w: w, copied: make(chan struct{})}
	go e.drain(r)
	var want []string
	var all bytes.Buffer
	for i := range 150 {
		line := fmt.Sprintf("%03d %s", i, strings.Repeat(string(rune('a'+i%26)), 100+i*20))
		want = append(want, line)
		all.WriteString(line + "\n")
	}
	if _, err := w.Write(all.Bytes()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	<-e.copied
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Equal(h.lines, want) {
		t.Errorf("logged %d lines, want %d intact", len(h.lines), len(want))
	}
}
