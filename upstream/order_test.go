package upstream

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// The SSE counter must find each progress and log event however the stream is cut
// into reads, and skip lines too long to be one.
func TestSSECounterCountsProgressEvents(t *testing.T) {
	progress := `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpmux-1","progress":1}}`
	huge := `data: {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 3*maxCountedLine) + `\"method\":\"notifications/progress\""}]}}`
	stream := strings.Join([]string{
		"event: message", progress, "",
		"event: message", huge, "",
		"event: message", `data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}`, "",
		"event: message", `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, "",
		"event: message", `data: {"jsonrpc":"2.0","method":"notifications/tasks/status","params":{}}`, "",
		"event: message", progress, "",
		": a comment naming \"method\":\"notifications/progress\"", "",
	}, "\n") + "\n"
	for _, cut := range []struct {
		name string
		r    func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"byte by byte", iotest.OneByteReader},
		{"halves", iotest.HalfReader},
	} {
		t.Run(cut.name, func(t *testing.T) {
			g := newProgressGate()
			b := &sseCounter{ReadCloser: io.NopCloser(cut.r(strings.NewReader(stream))), gate: g}
			got, err := io.ReadAll(b)
			if err != nil || string(got) != stream {
				t.Fatalf("the stream was changed: %v", err)
			}
			if g.read != 4 {
				t.Errorf("counted %d progress, log and list_changed events, want 4 (not the task status)", g.read)
			}
		})
	}
}
