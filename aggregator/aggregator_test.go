package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/front"
	"github.com/mcpmux/mcpmux/internal/tasktest"
	"github.com/mcpmux/mcpmux/internal/testkit"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/rewrite"
	"github.com/mcpmux/mcpmux/upstream"
)

// harness runs an aggregator over in-memory tool servers and connects
// clients to it over in-memory transports: real MCP sessions on both sides.
type harness struct {
	t     testing.TB
	pool  *upstream.Pool
	agg   *Aggregator
	front *front.Front // its HTTP front, once serveHTTP made it
}

// serveHTTP returns an HTTP front of h's aggregator (opts.Engine is set).
func (h *harness) serveHTTP(opts *front.Options) *front.Front {
	var o front.Options
	if opts != nil {
		o = *opts
	}
	o.Engine, o.Metrics = h.agg, h.agg.metrics
	return front.New(&o)
}

// fixtureServer returns a tool server with the given tools, each of which
// answers through h.
func fixtureServer(name string, tools map[string]mcp.ToolHandler) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	for _, tn := range slices.Sorted(maps.Keys(tools)) {
		s.AddTool(&mcp.Tool{
			Name:        tn,
			Description: "tool " + tn + " of " + name,
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		}, tools[tn])
	}
	return s
}

func echo(prefix string) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: prefix + args.Text}}}, nil
	}
}

// pinned2025 is the serverYAML of newHarness that pins the named servers
// to MCP 2025-11-25, for tests of what only that era has (sessions,
// servers' own requests, its tasks).
func pinned2025(names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = "protocol: 2025-11-25\n"
	}
	return m
}

// newHarness starts servers (name → fixture) with the given settings YAML
// (may be empty) and extra per-server YAML lines.
func newHarness(t testing.TB, servers map[string]*mcp.Server, settingsYAML string, serverYAML map[string]string) *harness {
	t.Helper()
	settings := config.DefaultSettings()
	if settingsYAML != "" {
		s, ferr := config.ParseSettings("mcpmux.yaml", []byte(settingsYAML), nil)
		if ferr != nil {
			t.Fatal(ferr)
		}
		settings = s
	}
	var cfgs []*config.Server
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		y := fmt.Sprintf("name: %s\ntool_command: in-memory\n%s", name, serverYAML[name])
		cfg, ferr := config.ParseServer(name+".yaml", []byte(y), nil)
		if ferr != nil {
			t.Fatal(ferr)
		}
		cfgs = append(cfgs, cfg)
	}
	h := &harness{t: t}
	h.pool = upstream.NewPool(&upstream.Options{
		ConnectTimeout: 5 * time.Second,
		Transport: func(cfg *config.Server) mcp.Transport {
			srv := servers[cfg.Name]
			if srv == nil {
				return nil // falls through to starting "in-memory", which fails
			}
			ct, st := mcp.NewInMemoryTransports()
			// Wrapped, for fixtures that run tools as tasks (tasktest).
			if _, err := srv.Connect(context.Background(), tasktest.Wrap(srv, st), nil); err != nil {
				t.Errorf("connecting fixture %s: %v", cfg.Name, err)
			}
			return ct
		},
	})
	h.agg = New(&Options{Pool: h.pool, Settings: settings, Metrics: metrics.New(upstream.MetricsOf(h.pool))})
	h.pool.Apply(context.Background(), cfgs, settings.Timeout)
	h.agg.Sync()
	h.agg.MarkReady()
	t.Cleanup(func() { h.pool.Close(context.Background(), time.Second) })
	return h
}

// client connects a new client session to a profile.
func (h *harness) client(profile string) *mcp.ClientSession {
	h.t.Helper()
	return h.clientVersion(profile, "")
}

// clientVersion connects a client that offers the given protocol version
// (empty: the SDK's latest).
func (h *harness) clientVersion(profile, version string) *mcp.ClientSession {
	h.t.Helper()
	srv := h.agg.Server(profile)
	if srv == nil {
		h.t.Fatalf("no profile %q", profile)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		h.t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// text joins the text items of a result.
var text = rewrite.ResultText

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: protocol error %v (mcpmux must answer with a result)", name, err)
	}
	return res
}

func TestMergedListAndRouting(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"alpha": fixtureServer("alpha", map[string]mcp.ToolHandler{"echo": echo("alpha:"), "only_alpha": echo("oa:")}),
		"beta":  fixtureServer("beta", map[string]mcp.ToolHandler{"echo": echo("beta:")}),
	}, "", nil)
	cs := h.client(DefaultProfile)
	got := toolNames(t, cs)
	want := []string{"alpha__echo", "alpha__only_alpha", "beta__echo"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	for _, tc := range []struct{ tool, want string }{
		{"alpha__echo", "alpha:hi"},
		{"beta__echo", "beta:hi"},
		{"alpha__only_alpha", "oa:hi"},
	} {
		if res := call(t, cs, tc.tool, map[string]any{"text": "hi"}); res.IsError || text(res) != tc.want {
			t.Errorf("%s: got %q (isError %v), want %q", tc.tool, text(res), res.IsError, tc.want)
		}
	}
}

func TestDefinitionsAndResultsPassThrough(t *testing.T) {
	rich := mcp.NewServer(&mcp.Implementation{Name: "rich", Version: "1"}, nil)
	readOnly := true
	def := &mcp.Tool{
		Name:         "report",
		Title:        "Report",
		Description:  "multi-content",
		InputSchema:  map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}},
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: readOnly, Title: "r"},
		Meta:         mcp.Meta{"vendor/x": "y"},
	}
	result := &mcp.CallToolResult{
		Meta: mcp.Meta{"trace": "abc"},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "first", Annotations: &mcp.Annotations{Priority: 0.5}},
			&mcp.ImageContent{Data: []byte{1, 2, 3}, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///x", MIMEType: "text/plain", Text: "body"}},
			&mcp.ResourceLink{URI: "file:///y", Name: "y"},
		},
		StructuredContent: map[string]any{"ok": false},
		IsError:           true,
	}
	rich.AddTool(def, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return result, nil })

	h := newHarness(t, map[string]*mcp.Server{"rich": rich}, "", nil)
	// On 2026-07-28 every result carries the answering hop's serverInfo;
	// compare on the version where the result is the server's alone.
	cs := h.clientVersion(DefaultProfile, "2025-11-25")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != 1 {
		t.Fatalf("ListTools: %v, %v", res, err)
	}
	listed := *res.Tools[0]
	if listed.Name != "rich__report" {
		t.Errorf("name %q", listed.Name)
	}
	listed.Name = def.Name
	if got, want := testkit.JSON(t, listed), testkit.JSON(t, def); got != want {
		t.Errorf("definition changed in transit:\n got %s\nwant %s", got, want)
	}

	want := testkit.JSON(t, result) // before the go-sdk server adds its 2026 envelope to it
	got := call(t, cs, "rich__report", map[string]any{"n": 1})
	if g, w := testkit.JSON(t, got), want; g != w {
		t.Errorf("result changed in transit:\n got %s\nwant %s", g, w)
	}
}

func TestBlacklistHidesAndRefuses(t *testing.T) {
	var called int
	h := newHarness(t, map[string]*mcp.Server{
		"code": fixtureServer("code", map[string]mcp.ToolHandler{
			"run": echo("ran:"),
			"download": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				called++
				return &mcp.CallToolResult{}, nil
			},
		}),
	}, `tool_blacklist: [["code", "download"]]`, nil)
	cs := h.client(DefaultProfile)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"code__run"}) {
		t.Errorf("tools = %v, want only code__run", got)
	}
	res := call(t, cs, "code__download", nil)
	if !res.IsError || !strings.Contains(text(res), "disabled") || !strings.Contains(text(res), "blacklist") {
		t.Errorf("blacklisted call: %q (isError %v), want an isError saying it is disabled", text(res), res.IsError)
	}
	// Also when reached by auto-correction.
	res = call(t, cs, "download", nil)
	if !res.IsError || !strings.Contains(text(res), "disabled") {
		t.Errorf("bare blacklisted call: %q, want disabled", text(res))
	}
	if called != 0 {
		t.Errorf("blacklisted tool was called %d times", called)
	}
}

func TestProfiles(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"search": fixtureServer("search", map[string]mcp.ToolHandler{"google": echo("g:"), "bing": echo("b:")}),
		"browse": fixtureServer("browse", map[string]mcp.ToolHandler{"open": echo("o:")}),
		"code":   fixtureServer("code", map[string]mcp.ToolHandler{"run": echo("r:")}),
	}, `
profiles:
  browsing-agent:
    tool_config: [search, browse]
    tool_blacklist: [["search", "google"]]
  everything: {}
`, nil)
	if got, want := toolNames(t, h.client("browsing-agent")), []string{"browse__open", "search__bing"}; !slices.Equal(got, want) {
		t.Errorf("browsing-agent tools = %v, want %v", got, want)
	}
	if got := toolNames(t, h.client("everything")); len(got) != 4 {
		t.Errorf("profile without tool_config sees %v, want all 4 tools", got)
	}
	if got := toolNames(t, h.client(DefaultProfile)); len(got) != 4 {
		t.Errorf("default profile sees %v, want all 4 tools", got)
	}
	// A profile cannot call a server outside it, even by its full name.
	cs := h.client("browsing-agent")
	if res := call(t, cs, "code__run", nil); !res.IsError {
		t.Errorf("call outside the profile succeeded: %q", text(res))
	}
	if res := call(t, cs, "search__google", nil); !res.IsError || !strings.Contains(text(res), "disabled") {
		t.Errorf("profile-blacklisted call: %q", text(res))
	}
	if h.agg.Server("nope") != nil {
		t.Error("unknown profile has a server")
	}
}

func TestAutoCorrection(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"tool-searching": fixtureServer("s", map[string]mcp.ToolHandler{"google_search": echo("found:"), "common": echo("s:")}),
		"tool-reading":   fixtureServer("r", map[string]mcp.ToolHandler{"read_page": echo("read:"), "common": echo("r:")}),
	}, "", nil)
	cs := h.client(DefaultProfile)
	tests := []struct {
		name       string
		tool       string
		isError    bool
		wantPrefix string
		contains   []string
	}{
		{name: "unknown server", tool: "tool-search__google_search", wantPrefix: "[Auto-corrected: Server 'tool-search' not found, but tool 'google_search' was found only in server 'tool-searching', so automatically used 'tool-searching' instead] found:q"},
		{name: "bare name", tool: "google_search", contains: []string{"[Auto-corrected:", "tool-searching", "found:q"}},
		{name: "wrong known server", tool: "tool-reading__google_search", contains: []string{"Server 'tool-reading' has no tool 'google_search'", "found:q"}},
		{name: "ambiguous", tool: "nowhere__common", isError: true, contains: []string{"tool-reading__common", "tool-searching__common"}},
		{name: "unknown", tool: "tool-searching__gogle_search", isError: true, contains: []string{"Unknown tool", "tool-searching__google_search"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, cs, tt.tool, map[string]any{"text": "q"})
			got := text(res)
			if res.IsError != tt.isError {
				t.Errorf("isError = %v, want %v (%q)", res.IsError, tt.isError, got)
			}
			if tt.wantPrefix != "" && got != tt.wantPrefix {
				t.Errorf("got %q\nwant %q", got, tt.wantPrefix)
			}
			for _, c := range tt.contains {
				if !strings.Contains(got, c) {
					t.Errorf("%q does not contain %q", got, c)
				}
			}
		})
	}
}

func TestMalformedArguments(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{"a": fixtureServer("a", map[string]mcp.ToolHandler{"echo": echo("")})}, "", nil)
	cs := h.client(DefaultProfile)
	for _, args := range []any{[]any{1, 2}, "text", 42} {
		res := call(t, cs, "a__echo", args)
		if !res.IsError || !strings.Contains(text(res), "must be a JSON object") {
			t.Errorf("args %v: %q (isError %v), want an isError about the JSON object", args, text(res), res.IsError)
		}
	}
	if res := call(t, cs, "a__echo", nil); res.IsError {
		t.Errorf("no arguments: %q, want a normal call with {}", text(res))
	}
}

// Absent and null arguments reach the server as {}, which TypeScript
// servers need (they reject "arguments": null). callArguments is the one
// place that makes them so: upstream sends the arguments it is given.
func TestAbsentOrNullArgumentsReachTheServerAsAnObject(t *testing.T) {
	got := make(chan string, 1)
	record := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		got <- string(req.Params.Arguments)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	h := newHarness(t, map[string]*mcp.Server{"a": fixtureServer("a", map[string]mcp.ToolHandler{"record": record})}, "", nil)
	cs := h.client(DefaultProfile)
	for _, tc := range []struct {
		name string
		args any
	}{{"absent", nil}, {"null", json.RawMessage("null")}} {
		if res := call(t, cs, "a__record", tc.args); res.IsError {
			t.Fatalf("%s arguments: %q, want a normal call", tc.name, text(res))
		}
		if sent := <-got; sent != "{}" {
			t.Errorf("%s arguments reached the server as %q, want {}", tc.name, sent)
		}
	}
}

func TestFailedServerIsIsolated(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"good": fixtureServer("good", map[string]mcp.ToolHandler{"echo": echo("ok:")}),
		"dead": nil, // no fixture: starting it fails
	}, "", map[string]string{"dead": "connect_timeout: 1s\n"})
	cs := h.client(DefaultProfile)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"good__echo"}) {
		t.Errorf("tools = %v", got)
	}
	if res := call(t, cs, "good__echo", map[string]any{"text": "x"}); text(res) != "ok:x" {
		t.Errorf("good server: %q", text(res))
	}
	var dead upstream.Status
	for _, st := range h.pool.Statuses() {
		if st.Name == "dead" {
			dead = st
		}
	}
	if dead.State != upstream.StateFailed || !strings.Contains(dead.Error, "in-memory") {
		t.Errorf("dead server status = %+v, want failed with the command in the error", dead)
	}
}

func TestToolListChangedDownstream(t *testing.T) {
	dyn := fixtureServer("dyn", map[string]mcp.ToolHandler{"one": echo("1")})
	h := newHarness(t, map[string]*mcp.Server{"dyn": dyn}, "", nil)
	changed := make(chan struct{}, 10)
	srv := h.agg.Server(DefaultProfile)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	dyn.AddTool(&mcp.Tool{Name: "two", InputSchema: map[string]any{"type": "object"}}, echo("2"))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed reached the client")
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"dyn__one", "dyn__two"}) {
		t.Errorf("after downstream change: %v", got)
	}
}

func TestAllPagesOfToolsAreListed(t *testing.T) {
	paged := mcp.NewServer(&mcp.Implementation{Name: "paged"}, &mcp.ServerOptions{PageSize: 2})
	for i := range 5 {
		paged.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%d", i), InputSchema: map[string]any{"type": "object"}}, echo(""))
	}
	h := newHarness(t, map[string]*mcp.Server{"paged": paged}, "", nil)
	if got := toolNames(t, h.client(DefaultProfile)); len(got) != 5 {
		t.Errorf("listed %v, want all 5 tools of a server that pages by 2", got)
	}
}

func TestUnknownToolAnswerIsRedirected(t *testing.T) {
	forgetful := fixtureServer("forgetful", map[string]mcp.ToolHandler{
		"lookup": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Unknown tool: lookup"}}}, nil
		},
	})
	h := newHarness(t, map[string]*mcp.Server{
		"forgetful": forgetful,
		"keeper":    fixtureServer("keeper", map[string]mcp.ToolHandler{"lookup": echo("kept:")}),
	}, "", nil)
	got := text(call(t, h.client(DefaultProfile), "forgetful__lookup", map[string]any{"text": "x"}))
	if want := "[Auto-corrected: Server 'forgetful' does not know tool 'lookup', but it was found only in server 'keeper', so automatically used 'keeper' instead] kept:x"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
