package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestTimeoutCancelsDownstreamAndServerStaysUsable(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/slow.yaml": fixture("slow", "echo", "tool_timeouts: {block: 300ms}"),
	})
	cs, p := startStdio(t, dir)
	start := time.Now()
	res := callTool(t, cs, "slow__block", map[string]any{"file": "/nonexistent/never"})
	elapsed := time.Since(start)
	if !res.IsError || resultText(res) != "Tool 'block' on server 'slow' timed out after 300ms. The call was cancelled; the server stays available. Try again with a smaller request, or use another tool." {
		t.Errorf("timed-out call = %q (isError %v)", resultText(res), res.IsError)
	}
	if elapsed > 10*time.Second {
		t.Errorf("a 300ms timeout took %v", elapsed)
	}
	// The fixture saw notifications/cancelled: its handler's context ended.
	p.logs.waitFor(t, regexp.MustCompile(`block: cancelled`))
	if got := resultText(callTool(t, cs, "slow__echo", map[string]any{"text": "still here"})); got != "echo: still here" {
		t.Errorf("after the timeout: %q", got)
	}
}

func TestPerClientSessionsOverHTTP(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/state.yaml":  fixture("state", "echo", "session: per-client"),
		"tool/shared.yaml": fixture("shared", "echo"),
	})
	p := startHTTP(t, dir)
	type client struct {
		cs   *mcp.ClientSession
		task string
		pid  int
	}
	var clients []*client
	for _, task := range []string{"task-a", "task-b"} {
		cs, err := connectHTTP(t, p, "/mcp", http.Header{"X-Task-Id": {task}})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, &client{cs: cs, task: task})
	}
	for _, c := range clients {
		c.pid = atoi(t, resultText(callTool(t, c.cs, "state__pid", nil)))
		// Reused for every later call of the same client.
		if again := atoi(t, resultText(callTool(t, c.cs, "state__pid", nil))); again != c.pid {
			t.Errorf("%s: second call went to pid %d, first to %d", c.task, again, c.pid)
		}
		if got := resultText(callTool(t, c.cs, "state__env", map[string]any{"name": "TASK_ID"})); got != c.task {
			t.Errorf("%s: child's TASK_ID = %q", c.task, got)
		}
		var meta map[string]any
		if err := json.Unmarshal([]byte(resultText(callTool(t, c.cs, "shared__meta", nil))), &meta); err != nil || meta["task_id"] != c.task {
			t.Errorf("%s: downstream _meta = %v (%v), want task_id", c.task, meta, err)
		}
	}
	if clients[0].pid == clients[1].pid {
		t.Fatalf("two clients share the per-client child %d", clients[0].pid)
	}
	// A call's own _meta.task_id wins over the header.
	res, err := clients[0].cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "shared__meta", Arguments: map[string]any{}, Meta: mcp.Meta{"task_id": "override"}})
	if err != nil || !strings.Contains(resultText(res), `"task_id":"override"`) {
		t.Errorf("_meta.task_id override: %v %q", err, resultText(res))
	}
	// The first client leaves: its child goes, the other's stays.
	if err := clients[0].cs.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, clients[0].pid)
	if !alive(clients[1].pid) {
		t.Error("the other client's child died too")
	}
	if got := atoi(t, resultText(callTool(t, clients[1].cs, "state__pid", nil))); got != clients[1].pid {
		t.Errorf("remaining client moved to pid %d", got)
	}
}

func TestPerClientIdleTimeoutAndStdioTask(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/state.yaml": fixture("state", "echo", "session: per-client", "idle_timeout: 200ms"),
	})
	cs, p := startStdio(t, dir, "--task-id", "eval-42")
	if got := resultText(callTool(t, cs, "state__env", map[string]any{"name": "TASK_ID"})); got != "eval-42" {
		t.Errorf("TASK_ID = %q, want the --task-id", got)
	}
	pid := atoi(t, resultText(callTool(t, cs, "state__pid", nil)))
	waitGone(t, pid) // closed after 200ms idle
	p.logs.waitFor(t, regexp.MustCompile(`closing idle per-client connection`))
	// The next call opens a new one.
	if again := atoi(t, resultText(callTool(t, cs, "state__pid", nil))); again == pid {
		t.Errorf("idle connection was not replaced")
	}
}

func TestAutoCorrectionThroughTheBinary(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/echo.yaml":    fixture("echo", "echo"),
		"tool/collide.yaml": fixture("collide", "collide"),
	})
	cs, p := startStdio(t, dir)
	pid := resultText(callTool(t, cs, "echo__pid", nil))

	res := callTool(t, cs, "tool-echo__pid", nil)
	if want := "[Auto-corrected: Server 'tool-echo' not found, but tool 'pid' was found only in server 'echo', so automatically used 'echo' instead] " + pid; res.IsError || resultText(res) != want {
		t.Errorf("unknown server: %q\nwant %q", resultText(res), want)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="auto-corrected tool call" session=\S+ requested=tool-echo__pid chosen=echo__pid`))

	if res := callTool(t, cs, "pid", nil); res.IsError || !strings.HasSuffix(resultText(res), "] "+pid) || !strings.Contains(resultText(res), "found only in server 'echo'") {
		t.Errorf("bare name: %q", resultText(res))
	}
	res = callTool(t, cs, "other__echo", map[string]any{"text": "x"})
	if !res.IsError || !strings.Contains(resultText(res), "collide__echo") || !strings.Contains(resultText(res), "echo__echo") {
		t.Errorf("ambiguous: %q", resultText(res))
	}
	res = callTool(t, cs, "echo__ecko", map[string]any{"text": "x"})
	if !res.IsError || !strings.Contains(resultText(res), "Unknown tool 'echo__ecko'") || !strings.Contains(resultText(res), "echo__echo") {
		t.Errorf("unknown tool: %q", resultText(res))
	}
}
