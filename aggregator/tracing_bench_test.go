package aggregator

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpmux/mcpmux/tracing"
)

// BenchmarkCallTracing is the cost of tracing per call, through a real
// in-memory session: none (no switch), off (configured, off: the default)
// and on (every call sampled, spans ended into an exporter that drops
// them). Reported in docs/BENCHMARKS.md (Tracing).
func BenchmarkCallTracing(b *testing.B) {
	for _, mode := range []string{"none", "off", "on"} {
		b.Run(mode, func(b *testing.B) {
			h := newHarness(b, map[string]*mcp.Server{"web": fixtureServer("web", map[string]mcp.ToolHandler{"echo": echo("")})}, "", nil)
			switch mode {
			case "off":
				h.agg.tracing = &tracing.Switch{}
			case "on":
				h.agg.tracing = &tracing.Switch{}
				h.agg.tracing.Swap(tracing.NewWith(tracetest.NewNoopExporter()), nil)
			}
			cs := h.client(DefaultProfile)
			params := &mcp.CallToolParams{Name: "web__echo", Arguments: map[string]any{"text": "x"},
				Meta: mcp.Meta{"traceparent": clientParent}}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := cs.CallTool(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// With tracing off, the pipeline's tracing helpers allocate nothing.
func TestTracingOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	meta := map[string]any{"traceparent": clientParent}
	c := &toolCall{}
	allocs := testing.AllocsPerRun(100, func() {
		cctx, down := tracing.StartClient(ctx, "tools/call", "echo", "web")
		_, span := tracing.StartInternal(cctx, "mcpmux.rules.after")
		_ = tracing.Inject(cctx, meta)
		c.span.Set("mcpmux.outcome", "ok")
		c.span.Event("mcpmux.rule", "action", "refused")
		tracing.Event(cctx, "mcpmux.resend", "reason", "session lost")
		span.End("", "")
		down.End("", "")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per call with tracing off, want 0", allocs)
	}
}
