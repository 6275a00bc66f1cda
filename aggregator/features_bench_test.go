package aggregator

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/journal/pin"
)

// BenchmarkCallFeatures is one tools/call through the whole pipeline with
// each feature of issue 32 on, alone and together, beside none: what each
// adds per call (docs/BENCHMARKS.md).
func BenchmarkCallFeatures(b *testing.B) {
	dir := b.TempDir()
	manifest := filepath.Join(dir, "pins.json")
	def := &mcp.Tool{Name: "echo", Description: "tool echo of kb", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}
	if err := pin.WriteManifest(manifest, []journal.Server{{Name: "kb", Prefix: "kb", Tools: []*mcp.Tool{def}}}); err != nil {
		b.Fatal(err)
	}
	const price = "cost: {per_call: 0.001}\n"
	for _, c := range []struct {
		name, settings, server string
	}{
		{"none", "", ""},
		{"journal", "journal: {dir: %q}\n", ""},
		{"cost", "", price},
		{"journal+cost", "journal: {dir: %q}\n", price},
		{"pin", "pin: {from: %q}\n", ""},
		{"tool_pinning", "tool_pinning: true\n", ""},
		{"frozen-miss-record", "replay: {from: %q, miss: record}\n", ""},
		{"all", "journal: {dir: %[1]q}\npin: {from: %[2]q}\ntool_pinning: true\n", price},
	} {
		b.Run(c.name, func(b *testing.B) {
			settings := c.settings
			switch c.name {
			case "journal", "journal+cost", "frozen-miss-record":
				settings = fmt.Sprintf(settings, b.TempDir())
			case "pin":
				settings = fmt.Sprintf(settings, manifest)
			case "all":
				settings = fmt.Sprintf(settings, b.TempDir(), manifest)
			}
			h := newHarness(b, map[string]*mcp.Server{"kb": fixtureServer("kb", map[string]mcp.ToolHandler{"echo": echo("")})}, settings, map[string]string{"kb": c.server})
			cs := h.client(DefaultProfile)
			ctx := context.Background()
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				// Distinct arguments: a frozen run records each call once.
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "kb__echo", Arguments: map[string]any{"text": fmt.Sprint("hi ", i)}, Meta: mcp.Meta{"task_id": "t1"}})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
