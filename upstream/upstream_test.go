package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

func TestChildEnv(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/root", "MCPMUX_TOKEN=secret", "MCPMUX_CONFIG=/c", "API_KEY=old", "TASK_ID=outer"}
	got := childEnv(base, map[string]string{"API_KEY": "new", "EXTRA": "1"}, "task-7")
	slices.Sort(got)
	want := []string{"API_KEY=new", "EXTRA=1", "HOME=/root", "PATH=/bin", "TASK_ID=task-7"}
	if !slices.Equal(got, want) {
		t.Errorf("childEnv = %v, want %v", got, want)
	}
	if got := childEnv(base, nil, ""); !slices.Contains(got, "TASK_ID=outer") {
		t.Errorf("without a task, an inherited TASK_ID must stay: %v", got)
	}
}

func TestResolveCommand(t *testing.T) {
	if got, err := resolveCommand("mcpmux", "/opt/mcpmux"); err != nil || got != "/opt/mcpmux" {
		t.Errorf("mcpmux → %q, %v", got, err)
	}
	if got, err := resolveCommand("sh", ""); err != nil || !strings.HasSuffix(got, "/sh") {
		t.Errorf("sh → %q, %v", got, err)
	}
	if _, err := resolveCommand("no-such-program-anywhere", ""); err == nil || !strings.Contains(err.Error(), "not found on PATH") {
		t.Errorf("missing program: %v", err)
	}
	t.Setenv("PATH", t.TempDir()) // neither python nor python3
	if _, err := resolveCommand("python", ""); err == nil {
		t.Error("python resolved on an empty PATH")
	}
}

func TestBackoff(t *testing.T) {
	b := backoff{unit: DefaultBackoff}
	prev := time.Duration(0)
	for i := range 12 {
		d := b.next()
		if d <= 0 || d > 40*time.Second {
			t.Fatalf("delay %d = %v", i, d)
		}
		if i < 5 && d < prev/2 {
			t.Errorf("delay %d = %v shrank from %v", i, d, prev)
		}
		prev = d
	}
	b.reset()
	if d := b.next(); d > time.Second {
		t.Errorf("after reset: %v", d)
	}
}

type recordHandler struct {
	mu    sync.Mutex
	lines []string
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, r.Message)
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func TestLineLogger(t *testing.T) {
	h := &recordHandler{}
	l := newLineLogger(slog.New(h), nil, "stderr")
	fmt.Fprint(l, "first\nsec")
	fmt.Fprint(l, "ond\r\n\nthird")
	if got := l.Tail(); got != "first | second | third" {
		t.Errorf("Tail = %q", got)
	}
	fmt.Fprint(l, "\n"+strings.Repeat("x", 10000)+"\n")
	for i := range 1000 {
		fmt.Fprintf(l, "flood %d\n", i)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lines[0] != "first" || h.lines[1] != "second" || h.lines[2] != "third" {
		t.Errorf("lines = %q", h.lines[:3])
	}
	if n := len(h.lines[3]); n > maxLogLine+10 {
		t.Errorf("a 10000-byte line was logged with %d bytes", n)
	}
	if len(h.lines) > maxLinesPerSec+1 {
		t.Errorf("%d lines logged within a second, want at most %d", len(h.lines), maxLinesPerSec)
	}
}

// A secret across a length limit is masked whole, never cut first: not in
// a logged line cut at maxLogLine, not in the tail cut at maxTailLine, not
// at the end of an unterminated line's maxPendingBytes.
func TestLineLoggerMasksBeforeCutting(t *testing.T) {
	const secret = "sk-Zq9f8e7d6c5b4a3210"
	h := &recordHandler{}
	m := &logs.Masker{}
	m.Add(secret)
	l := newLineLogger(logs.Masked(slog.New(h), m), m, "stderr")
	fmt.Fprint(l, strings.Repeat("a", maxLogLine-5)+secret+" end of a long line\n")
	fmt.Fprint(l, strings.Repeat("b", maxTailLine-5)+secret+"\n")
	fmt.Fprint(l, strings.Repeat("c", maxPendingBytes-5)+secret)
	fmt.Fprint(l, strings.Repeat("d", 10)+"\nlast\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, text := range append(slices.Clone(h.lines), l.Tail()) {
		for _, part := range []string{secret[:5], secret[len(secret)-6:]} {
			if strings.Contains(text, part) {
				t.Errorf("%q of the secret shows in %.80q…%q", part, text, text[max(0, len(text)-40):])
			}
		}
	}
	if len(h.lines) != 4 || h.lines[3] != "last" || !strings.HasSuffix(h.lines[2], "c…") {
		t.Errorf("%d lines; the overlong one must end cut, and the rest of it be dropped", len(h.lines))
	}
}

// memServers makes in-memory servers, each with one tool named after the
// server, and counts connections.
type memServers struct {
	mu    sync.Mutex
	dials map[string]int
}

func (m *memServers) transport(cfg *config.Server) mcp.Transport {
	m.mu.Lock()
	m.dials[cfg.Name]++
	m.mu.Unlock()
	s := mcp.NewServer(&mcp.Implementation{Name: cfg.Name}, nil)
	s.AddTool(&mcp.Tool{Name: "t_" + cfg.Name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: cfg.Env["V"]}}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.Connect(context.Background(), st, nil); err != nil {
		panic(err)
	}
	return ct
}

func server(t *testing.T, name, v string) *config.Server {
	t.Helper()
	cfg, ferr := config.ParseServer(name+".yaml", []byte(fmt.Sprintf("name: %s\ntool_command: mem\nenv: {V: %q}\n", name, v)), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	return cfg
}

func TestPoolApplyDiff(t *testing.T) {
	m := &memServers{dials: map[string]int{}}
	pool := NewPool(&Options{Transport: m.transport})
	defer pool.Close(context.Background(), time.Second)
	ctx := context.Background()

	ch := pool.Apply(ctx, []*config.Server{server(t, "a", "1"), server(t, "b", "1")}, time.Minute)
	if !slices.Equal(ch.Added, []string{"a", "b"}) || len(ch.Kept)+len(ch.Removed)+len(ch.Restarted) != 0 {
		t.Errorf("first apply: %+v", ch)
	}
	a := pool.Get("a")
	if st := a.Status(); st.State != StateUp || st.Tools != 1 {
		t.Errorf("a: %+v", st)
	}

	ch = pool.Apply(ctx, []*config.Server{server(t, "a", "1"), server(t, "b", "2"), server(t, "c", "1")}, time.Minute)
	if !slices.Equal(ch.Kept, []string{"a"}) || !slices.Equal(ch.Restarted, []string{"b"}) || !slices.Equal(ch.Added, []string{"c"}) {
		t.Errorf("second apply: %+v", ch)
	}
	if pool.Get("a") != a {
		t.Error("unchanged server a was replaced")
	}
	res, err := pool.Get("b").CallTool(ctx, CallParams{Params: &mcp.CallToolParams{Name: "t_b", Arguments: map[string]any{}}})
	if err != nil || testkit.RawText(res) != "2" {
		t.Errorf("restarted b answers %v, %v; want its new env", res, err)
	}

	ch = pool.Apply(ctx, []*config.Server{server(t, "c", "1")}, time.Minute)
	if !slices.Equal(ch.Removed, []string{"a", "b"}) || !slices.Equal(ch.Kept, []string{"c"}) {
		t.Errorf("third apply: %+v", ch)
	}
	if pool.Get("a") != nil {
		t.Error("removed server still in the pool")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dials["a"] != 1 || m.dials["b"] != 2 || m.dials["c"] != 1 {
		t.Errorf("connections made: %v", m.dials)
	}
}

// A child's structured log line becomes a record of mcpmux's log with the
// child's level, message and fields, masked, instead of a message quoting
// the line; other lines are logged as they are. A line reporting mcpmux's
// own refusal to forward a request (the filesystem server's roots/list at
// start, while no client's call is running) is expected: debug.
func TestLineLoggerPassesChildRecordsThrough(t *testing.T) {
	var buf strings.Builder
	m := &logs.Masker{}
	m.Add("sk-hidden-1234")
	log := logs.Masked(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})), m).With("server", "fetch")
	l := newLineLogger(log, m, "stderr")
	fmt.Fprintln(l, `time=2026-12-04T08:38:22.182Z level=INFO msg="fetch server ready on stdio" timeout=30s allow_private_networks=false`)
	fmt.Fprintln(l, `{"time":"2026-12-04T08:38:22Z","level":"warn","msg":"retrying","key":"sk-hidden-1234","attempt":2}`)
	fmt.Fprintln(l, `Secure MCP Filesystem Server running on stdio`)
	fmt.Fprintln(l, `Failed to request initial roots from client: MCP error -32603: `+forwardError("roots/list", errNoCaller).Error())
	want := []string{
		`level=INFO msg="fetch server ready on stdio" server=fetch stream=stderr timeout=30s allow_private_networks=false`,
		`level=WARN msg=retrying server=fetch stream=stderr key=**** attempt=2`,
		`level=INFO msg="Secure MCP Filesystem Server running on stdio" server=fetch stream=stderr`,
		`level=DEBUG msg="Failed to request initial roots from client: MCP error -32603: mcpmux could not forward roots/list to a client: `,
	}
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(got) != len(want) {
		t.Fatalf("logged:\n%s\nwant %d lines", buf.String(), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
}
