package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Clients of MCP 2026-07-28 and of 2025-11-25 against one mcpmux in
// front of server-everything (a 2025-11-25 server) and the only2026
// fixture (a server of 2026-07-28 only): they list, call, answer each
// server's elicitation — server-everything's reaches a 2026 client as an
// InputRequiredResult while mcpmux parks the server's call, the 2026
// server's input request reaches a 2025 client as elicitation/create —
// and hear of a tool the 2026 server adds (a 2026 client on its
// subscriptions/listen stream, a 2025 one as tools/list_changed).

// everythingDir is a config of mcpmux serving server-everything as "ev"
// and the only2026 fixture as "new".
func everythingDir(t *testing.T) string {
	t.Helper()
	return writeConfig(t, map[string]string{
		"tool/ev.yaml":  npmServer(t, "ev", "mcp-server-everything", "stdio"),
		"tool/new.yaml": fixture("new", "only2026"),
	})
}

// elicitingClient is a go-sdk v1.8.0 client that answers the 2026
// fixture's question with {"color": "teal"}, any other elicitation with
// {"name": "Ada"}, and sends each tools/list_changed to changed.
func elicitingClient(changed chan<- struct{}) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e-2026", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message == "Your favourite colour?" {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "teal"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
}

// checkEverything lists and calls through cs, a client of version want,
// has the 2026 server add the tool grown, and waits to hear of it on
// changed.
func checkEverything(t *testing.T, cs *mcp.ClientSession, want string, changed chan struct{}, grown string) {
	t.Helper()
	if v := cs.InitializeResult().ProtocolVersion; v != want {
		t.Errorf("negotiated %q, want %q", v, want)
	}
	names := toolNames(t, cs)
	for _, name := range []string{"ev__echo", "ev__trigger-elicitation-request", "new__greet", "new__ask"} {
		if !slices.Contains(names, name) {
			t.Errorf("%s not listed: %v", name, names)
		}
	}
	if got := callTool(t, cs, "ev__echo", map[string]any{"message": "hi"}); got.IsError || !strings.Contains(resultText(got), "hi") {
		t.Errorf("echo: %+v", got)
	}
	got := callTool(t, cs, "ev__trigger-elicitation-request", map[string]any{})
	if got.IsError || !strings.Contains(resultText(got), "Ada") {
		t.Errorf("elicitation: %q, want the server's answer with the client's", resultText(got))
	}
	if got := callTool(t, cs, "new__greet", map[string]any{"name": "Ada"}); got.IsError || resultText(got) != "only2026 greets Ada" {
		t.Errorf("new__greet: %q", resultText(got))
	}
	if got := callTool(t, cs, "new__ask", map[string]any{}); got.IsError || resultText(got) != `only2026: accept, color teal, state "asked-once"` {
		t.Errorf("new__ask: %q, want the client's answer and the server's own state back", resultText(got))
	}
	drain(changed)
	callTool(t, cs, "new__grow", map[string]any{"name": grown})
	select {
	case <-changed:
	case <-time.After(testTimeout):
		t.Fatalf("no list change heard after the 2026 server added %s", grown)
	}
	waitListed(t, cs, "new__"+grown)
}

// A go-sdk v1.8.0 client negotiates 2026-07-28 with mcpmux (no refused
// server/discover, no initialize) over HTTP and over stdio, and a
// 2025-11-25 client still works beside it on the same endpoint.
func TestSessionlessGoClient(t *testing.T) {
	t.Parallel()
	dir := everythingDir(t)
	p := startHTTP(t, dir)
	changed := make(chan struct{}, 1)
	cs, err := elicitingClient(changed).Connect(testContext(t), &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkEverything(t, cs, "2026-07-28", changed, "grown-http")
	oldChanged := make(chan struct{}, 1)
	old, err := elicitingClient(oldChanged).Connect(testContext(t), &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", MaxRetries: -1}, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	checkEverything(t, old, "2025-11-25", oldChanged, "grown-legacy")
	if strings.Contains(p.logs.String(), "server/discover") && strings.Contains(p.logs.String(), "not supported") {
		t.Error("mcpmux refused a server/discover")
	}

	stdioChanged := make(chan struct{}, 1)
	viaStdio, err := elicitingClient(stdioChanged).Connect(testContext(t), &mcp.CommandTransport{Command: exec.Command(mcpmuxBin, "--config", dir)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer viaStdio.Close()
	checkEverything(t, viaStdio, "2026-07-28", stdioChanged, "grown-stdio")
}

// ts2Client runs the TypeScript SDK v2 client (e2e/clients/ts2client.mjs)
// in mode against target (a URL, or a command and its arguments), calling
// calls, then new__grow to add the tool new__<grown>, and returns what it
// saw.
func ts2Client(t *testing.T, mode string, calls map[string]any, grown string, target ...string) (out struct {
	Version string
	Tools   []string
	Calls   map[string]struct {
		IsError bool
		Text    string
	}
	Elicited int
	Grown    []string // the tool list the client refreshed on hearing of the change
	Error    string
}) {
	t.Helper()
	c, _ := json.Marshal(calls)
	cmd := exec.CommandContext(testContext(t), filepath.Join(nodeBin, "node"), append([]string{"clients/ts2client.mjs", mode}, target...)...)
	cmd.Env = append(cmd.Environ(), "CALLS="+string(c), "GROW=new__grow", "GROWN="+grown)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v: %s", err, b)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("the TypeScript client printed %s: %v", b, err)
	}
	if out.Error != "" {
		t.Fatalf("the TypeScript client (%s): %s", mode, out.Error)
	}
	return out
}

// The TypeScript SDK v2 client (2.4.0), pinned to 2026-07-28 and in auto
// mode, over HTTP and stdio: lists, calls, answers server-everything's
// elicitation through mcpmux's parked call and the 2026 server's input
// request, and hears of the tool the 2026 server adds; the TypeScript SDK
// 1.32.2 client (2025-11-25) does the same against the same mcpmux.
func TestSessionlessTypeScriptClient(t *testing.T) {
	t.Parallel()
	dir := everythingDir(t)
	p := startHTTP(t, dir)
	calls := map[string]any{"ev__echo": map[string]any{"message": "hi"}, "ev__trigger-elicitation-request": map[string]any{}, "new__ask": map[string]any{}}
	for _, tc := range []struct {
		name, mode, version string
		target              []string
	}{
		{"http-pinned", "pin", "2026-07-28", []string{p.url + "/mcp"}},
		{"http-auto", "auto", "2026-07-28", []string{p.url + "/mcp"}},
		{"stdio-pinned", "pin", "2026-07-28", []string{mcpmuxBin, "--config", dir}},
		// The TypeScript SDK 1.32.2 (2025-11-25) against the same mcpmux.
		{"sdk1-http", "sdk1", "2025-11-25", []string{p.url + "/mcp"}},
		{"sdk1-stdio", "sdk1", "initialized", []string{mcpmuxBin, "--config", dir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grown := "grown-" + tc.name
			out := ts2Client(t, tc.mode, calls, grown, tc.target...)
			if out.Version != tc.version {
				t.Errorf("negotiated %q, want %s", out.Version, tc.version)
			}
			if !slices.Contains(out.Tools, "ev__echo") || !slices.Contains(out.Tools, "new__ask") {
				t.Errorf("tools: %v", out.Tools)
			}
			if c := out.Calls["ev__echo"]; c.IsError || !strings.Contains(c.Text, "hi") {
				t.Errorf("echo: %+v", c)
			}
			if c := out.Calls["ev__trigger-elicitation-request"]; c.IsError || !strings.Contains(c.Text, "Ada") {
				t.Errorf("elicitation: %+v, want the server's answer with the client's", c)
			}
			if c := out.Calls["new__ask"]; c.IsError || c.Text != `only2026: accept, color teal, state "asked-once"` {
				t.Errorf("the 2026 server's input request: %+v", c)
			}
			if out.Elicited != 2 {
				t.Errorf("elicited %d times, want once per server", out.Elicited)
			}
			if !slices.Contains(out.Grown, "new__"+grown) {
				t.Errorf("the refreshed list lacks new__%s: %v", grown, out.Grown)
			}
		})
	}
}
