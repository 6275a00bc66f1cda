package journal

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallLine is what the journal adds to a call in mcpmux's own
// code: recording its steps, encoding the answer and the line, and the
// write, for results of a few bytes to 64 KiB (docs/BENCHMARKS.md).
func BenchmarkCallLine(b *testing.B) {
	for _, size := range []int{16, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("result=%dB", size), func(b *testing.B) {
			j := New(nil)
			j.Configure(b.TempDir(), 1<<30)
			defer j.Close()
			args := json.RawMessage(`{"q":"what is the capital of France?","n":3}`)
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a", size)}}}
			b.ReportAllocs()
			for b.Loop() {
				c := j.Begin(Start{Task: "task-1", Session: "s", Profile: "", Client: &Client{Name: "agent", Version: "1"}, Tool: "kb__ask", Arguments: args})
				c.Routed("kb", "")
				c.Answered("kb__ask", args, EncodeResult(res), false)
				c.End(encoded(res))
			}
		})
	}
}
