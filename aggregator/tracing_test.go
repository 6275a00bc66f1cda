package aggregator

import (
	"context"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpmux/mcpmux/tracing"
)

// The client's trace: its trace id and the span its call was made in.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	clientParent  = "00-" + clientTraceID + "-" + clientSpanID + "-01"
)

// metaRecorder is a tool that answers "ok" and keeps the _meta of each
// call it gets.
type metaRecorder struct {
	mu   sync.Mutex
	seen []mcp.Meta
}

func (m *metaRecorder) tool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	m.mu.Lock()
	m.seen = append(m.seen, req.Params.Meta)
	m.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
}

func (m *metaRecorder) last(t *testing.T) mcp.Meta {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.seen) == 0 {
		t.Fatal("the server got no call")
	}
	return m.seen[len(m.seen)-1]
}

// tracedHarness is a harness whose aggregator traces into an in-memory
// exporter.
func tracedHarness(t *testing.T, servers map[string]*mcp.Server, settings string) (*harness, *tracetest.InMemoryExporter) {
	h := newHarness(t, servers, settings, nil)
	exp := tracetest.NewInMemoryExporter()
	sw := &tracing.Switch{}
	sw.Swap(tracing.NewWith(exp), nil)
	h.agg.tracing = sw // before any client connects
	return h, exp
}

// rootSpan is the server span named name: a client request's.
func rootSpan(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	return spanOf(t, spans, name, trace.SpanKindServer)
}

// spanNamed is the first span named name.
func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	return spanOf(t, spans, name, trace.SpanKindUnspecified)
}

func spanOf(t *testing.T, spans tracetest.SpanStubs, name string, kind trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.Name == name && (kind == trace.SpanKindUnspecified || s.SpanKind == kind) {
			return s
		}
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	t.Fatalf("no span %q among %q", name, names)
	return tracetest.SpanStub{}
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func TestTracingFollowsACallFromTheClientToTheServer(t *testing.T) {
	rec := &metaRecorder{}
	h, exp := tracedHarness(t, map[string]*mcp.Server{
		"web": fixtureServer("web", map[string]mcp.ToolHandler{"fetch": rec.tool}),
	}, "")
	cs := h.client(DefaultProfile)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "web__fetch", Arguments: map[string]any{"text": "x"},
		Meta: mcp.Meta{"traceparent": clientParent, "tracestate": "vendor=1", "task_id": "t1"},
	})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, res)
	}
	spans := exp.GetSpans()
	root := rootSpan(t, spans, "tools/call web__fetch")
	if root.SpanKind != trace.SpanKindServer {
		t.Errorf("root kind %v, want server", root.SpanKind)
	}
	if got := root.Parent.TraceID().String(); got != clientTraceID {
		t.Errorf("root's trace %s, want the client's %s", got, clientTraceID)
	}
	if got := root.Parent.SpanID().String(); got != clientSpanID || !root.Parent.IsRemote() {
		t.Errorf("root's parent %s (remote %v), want the client's span %s", got, root.Parent.IsRemote(), clientSpanID)
	}
	for key, want := range map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "web__fetch", "gen_ai.operation.name": "execute_tool",
		"mcpmux.server": "web", "mcpmux.outcome": "ok", "mcpmux.task": "t1", "mcpmux.profile": DefaultProfile,
		"network.transport": "pipe",
	} {
		if got := attr(root, key); got != want {
			t.Errorf("root %s = %q, want %q", key, got, want)
		}
	}
	down := spanOf(t, spans, "tools/call fetch", trace.SpanKindClient)
	if down.SpanKind != trace.SpanKindClient || down.Parent.SpanID() != root.SpanContext.SpanID() {
		t.Errorf("downstream span: kind %v, parent %s; want client, child of %s", down.SpanKind, down.Parent.SpanID(), root.SpanContext.SpanID())
	}
	if attr(down, "mcpmux.server") != "web" {
		t.Errorf("downstream span's server %q", attr(down, "mcpmux.server"))
	}
	// The server continues the trace: its parent is mcpmux's request span.
	meta := rec.last(t)
	want := "00-" + clientTraceID + "-" + down.SpanContext.SpanID().String() + "-01"
	if meta["traceparent"] != want {
		t.Errorf("server got traceparent %v, want %s", meta["traceparent"], want)
	}
	if meta["tracestate"] != "vendor=1" {
		t.Errorf("server got tracestate %v, want the client's", meta["tracestate"])
	}
}

func TestTracingRecordsWhatMcpmuxDecided(t *testing.T) {
	rec := &metaRecorder{}
	h, exp := tracedHarness(t, map[string]*mcp.Server{
		"web": fixtureServer("web", map[string]mcp.ToolHandler{"fetch": rec.tool}),
	}, `
rewrite:
  - name: no-answers
    tools: ["*fetch*"]
    block_urls: ["example.org/answers/**"]
    message: "Refused: answers are off limits."
`)
	cs := h.client(DefaultProfile)

	// Auto-corrected: the bare tool name goes to web__fetch.
	call(t, cs, "fetch", map[string]any{"text": "x"})
	root := rootSpan(t, exp.GetSpans(), "tools/call fetch")
	if got := attr(root, "mcpmux.corrected_to"); got != "web__fetch" {
		t.Errorf("corrected_to %q, want web__fetch", got)
	}
	exp.Reset()

	// Refused by a rule: the rule, the outcome and the failure.
	res := call(t, cs, "web__fetch", map[string]any{"url": "https://example.org/answers/1"})
	if !res.IsError {
		t.Fatalf("not refused: %v", text(res))
	}
	spans := exp.GetSpans()
	root = rootSpan(t, spans, "tools/call web__fetch")
	if attr(root, "mcpmux.rule") != "no-answers" || attr(root, "mcpmux.outcome") != "refused" {
		t.Errorf("rule %q outcome %q, want no-answers refused", attr(root, "mcpmux.rule"), attr(root, "mcpmux.outcome"))
	}
	if root.Status.Code != codes.Error || attr(root, "error.type") != "tool_error" {
		t.Errorf("status %v error.type %q, want Error tool_error", root.Status, attr(root, "error.type"))
	}
	spanNamed(t, spans, "mcpmux.rules.before")
	exp.Reset()

	// Unknown: no server asked.
	call(t, cs, "nothing__here", nil)
	root = spanNamed(t, exp.GetSpans(), "tools/call nothing__here")
	if attr(root, "mcpmux.outcome") != "unknown" {
		t.Errorf("outcome %q, want unknown", attr(root, "mcpmux.outcome"))
	}
	exp.Reset()

	// A request that is not a call has its span too.
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	spanNamed(t, exp.GetSpans(), "tools/list")
}

func TestTracingOffPassesTheClientsContextThrough(t *testing.T) {
	rec := &metaRecorder{}
	h := newHarness(t, map[string]*mcp.Server{
		"web": fixtureServer("web", map[string]mcp.ToolHandler{"fetch": rec.tool}),
	}, "", nil)
	h.agg.tracing = &tracing.Switch{} // configured, off
	cs := h.client(DefaultProfile)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "web__fetch", Meta: mcp.Meta{"traceparent": clientParent}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.last(t)["traceparent"]; got != clientParent {
		t.Errorf("server got %v, want the client's %s untouched", got, clientParent)
	}
}

// A reload that replaces the exporter loses no span of a call in flight:
// the call ends on the provider it started on, which is flushed after it.
func TestTracingSwapKeepsSpansInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(entered)
		<-release
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	}
	h, _ := tracedHarness(t, map[string]*mcp.Server{
		"web": fixtureServer("web", map[string]mcp.ToolHandler{"slow": slow, "fast": echo("")}),
	}, "")
	first := keptExporter{tracetest.NewInMemoryExporter()}
	h.agg.tracing.Swap(tracing.NewWith(first), nil)
	cs := h.client(DefaultProfile)
	done := make(chan struct{})
	go func() {
		defer close(done)
		call(t, cs, "web__slow", nil)
	}()
	<-entered
	second := keptExporter{tracetest.NewInMemoryExporter()}
	shut := make(chan error, 1)
	h.agg.tracing.Swap(tracing.NewWith(second), func(_ *tracing.Provider, err error) { shut <- err })
	close(release)
	<-done
	if err := <-shut; err != nil {
		t.Fatalf("the old provider's shutdown: %v", err)
	}
	spanNamed(t, first.GetSpans(), "tools/call web__slow")
	spanNamed(t, first.GetSpans(), "tools/call slow")
	if n := len(second.GetSpans()); n != 0 {
		t.Errorf("the new provider got %d spans of the call that began before it", n)
	}
	call(t, cs, "web__fast", nil)
	spanNamed(t, second.GetSpans(), "tools/call web__fast")
}

// keptExporter keeps its spans when shut down (tracetest's resets them),
// for a test to read them after.
type keptExporter struct{ *tracetest.InMemoryExporter }

func (keptExporter) Shutdown(context.Context) error { return nil }
