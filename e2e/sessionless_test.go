package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Clients of MCP 2026-07-28 against the mcpmux that serves 2025-11-25
// clients, in front of server-everything (a 2025-11-25 server): they list,
// call, and answer the server's elicitation, which reaches them as an
// InputRequiredResult while mcpmux parks the server's call.

// everythingDir is a config of mcpmux serving server-everything as "ev".
func everythingDir(t *testing.T) string {
	t.Helper()
	return writeConfig(t, map[string]string{"tool/ev.yaml": npmServer(t, "ev", "mcp-server-everything", "stdio")})
}

// elicitingClient is a go-sdk v1.8.0 client that answers elicitations
// with {"name": "Ada"}.
func elicitingClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e-2026", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
}

// checkEverything lists and calls through cs, a client of version want.
func checkEverything(t *testing.T, cs *mcp.ClientSession, want string) {
	t.Helper()
	if v := cs.InitializeResult().ProtocolVersion; v != want {
		t.Errorf("negotiated %q, want %q", v, want)
	}
	tools, err := cs.ListTools(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "ev__echo") || !slices.Contains(names, "ev__trigger-elicitation-request") {
		t.Errorf("tools: %v", names)
	}
	if got := callTool(t, cs, "ev__echo", map[string]any{"message": "hi"}); got.IsError || !strings.Contains(resultText(got), "hi") {
		t.Errorf("echo: %+v", got)
	}
	got := callTool(t, cs, "ev__trigger-elicitation-request", map[string]any{})
	if got.IsError || !strings.Contains(resultText(got), "Ada") {
		t.Errorf("elicitation: %q, want the server's answer with the client's", resultText(got))
	}
}

// A go-sdk v1.8.0 client negotiates 2026-07-28 with mcpmux (no refused
// server/discover, no initialize) over HTTP and over stdio, and a
// 2025-11-25 client still works beside it on the same endpoint.
func TestSessionlessGoClient(t *testing.T) {
	t.Parallel()
	dir := everythingDir(t)
	p := startHTTP(t, dir)
	cs, err := elicitingClient().Connect(testContext(t), &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkEverything(t, cs, "2026-07-28")
	old, err := elicitingClient().Connect(testContext(t), &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", MaxRetries: -1}, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	checkEverything(t, old, "2025-11-25")
	if strings.Contains(p.logs.String(), "server/discover") && strings.Contains(p.logs.String(), "not supported") {
		t.Error("mcpmux refused a server/discover")
	}

	viaStdio, err := elicitingClient().Connect(testContext(t), &mcp.CommandTransport{Command: exec.Command(mcpmuxBin, "--config", dir)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer viaStdio.Close()
	checkEverything(t, viaStdio, "2026-07-28")
}

// ts2Client runs the TypeScript SDK v2 client (e2e/clients/ts2client.mjs)
// in mode against target (a URL, or a command and its arguments), calling
// calls, and returns what it saw.
func ts2Client(t *testing.T, mode string, calls map[string]any, target ...string) (out struct {
	Version string
	Tools   []string
	Calls   map[string]struct {
		IsError bool
		Text    string
	}
	Elicited int
	Error    string
}) {
	t.Helper()
	c, _ := json.Marshal(calls)
	cmd := exec.CommandContext(testContext(t), filepath.Join(nodeBin, "node"), append([]string{"clients/ts2client.mjs", mode}, target...)...)
	cmd.Env = append(cmd.Environ(), "CALLS="+string(c))
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
// mode, over HTTP and stdio: lists, calls, and answers server-everything's
// elicitation through mcpmux's parked call; the TypeScript SDK 1.32.2
// client (2025-11-25) does the same against the same mcpmux.
func TestSessionlessTypeScriptClient(t *testing.T) {
	t.Parallel()
	dir := everythingDir(t)
	p := startHTTP(t, dir)
	calls := map[string]any{"ev__echo": map[string]any{"message": "hi"}, "ev__trigger-elicitation-request": map[string]any{}}
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
			out := ts2Client(t, tc.mode, calls, tc.target...)
			if out.Version != tc.version {
				t.Errorf("negotiated %q, want %s", out.Version, tc.version)
			}
			if !slices.Contains(out.Tools, "ev__echo") {
				t.Errorf("tools: %v", out.Tools)
			}
			if c := out.Calls["ev__echo"]; c.IsError || !strings.Contains(c.Text, "hi") {
				t.Errorf("echo: %+v", c)
			}
			if c := out.Calls["ev__trigger-elicitation-request"]; c.IsError || !strings.Contains(c.Text, "Ada") || out.Elicited != 1 {
				t.Errorf("elicitation: %+v, elicited %d times, want the answer once", c, out.Elicited)
			}
		})
	}
}
