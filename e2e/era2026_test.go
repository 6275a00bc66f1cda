package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// Servers that speak only MCP 2026-07-28 are aggregated beside a 2025 one
// (server-everything), for a client of MCP 2025-11-25: each is listed and
// called, its input request (an elicitation) is answered by the client
// and the answer reaches the server with its request state, a tool it
// adds reaches the client as tools/list_changed, and `check` shows the
// era of each.
func TestServersOnlyOf2026(t *testing.T) {
	httpServer := only2026Server("only2026http")
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return httpServer }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	// The TypeScript SDK v2's createMcpHandler, of 2026-07-28 only
	// (legacy: 'reject') and of both eras (its default).
	tsReject := runHTTP(t, "ts-reject", exec.Command(filepath.Join(nodeBin, "node"), "ts2026server.mjs", "reject"))
	tsDefault := runHTTP(t, "ts-default", exec.Command(filepath.Join(nodeBin, "node"), "ts2026server.mjs", "stateless"))
	dir := writeConfig(t, map[string]string{
		"tool/everything.yaml": npmServer(t, "everything", "mcp-server-everything", "stdio"),
		"tool/newstdio.yaml":   fixture("newstdio", "only2026"),
		"tool/newhttp.yaml":    fmt.Sprintf("name: newhttp\nurl: %s\n", ts.URL),
		"tool/tsreject.yaml":   fmt.Sprintf("name: tsreject\nurl: %s/mcp\n", tsReject.url),
		"tool/tsdefault.yaml":  fmt.Sprintf("name: tsdefault\nurl: %s/mcp\n", tsDefault.url),
	})
	changed := make(chan struct{}, 16)
	asked := make(chan string, 16)
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			if req.Params.Message == "Your name?" { // a task's question (tasktest)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "teal"}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}
	cs, _ := startStdioSession(t, dir, opts, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("the client speaks %s with mcpmux, want 2025-11-25", v)
	}

	names := toolNames(t, cs)
	for _, want := range []string{"everything__echo", "newstdio__greet", "newstdio__ask", "newhttp__greet", "newhttp__ask", "tsreject__ask", "tsdefault__ask"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not listed: %v", want, names)
		}
	}
	if got := resultText(callTool(t, cs, "everything__echo", map[string]any{"message": "old era"})); !strings.Contains(got, "old era") {
		t.Errorf("everything__echo = %q", got)
	}
	for _, c := range []struct{ server, impl, state string }{
		{"newstdio", "only2026", `, state "asked-once"`},
		{"newhttp", "only2026http", `, state "asked-once"`},
		{"tsreject", "ts-reject", ""},
		{"tsdefault", "ts-stateless", ""},
	} {
		res := callTool(t, cs, c.server+"__greet", map[string]any{"name": "Ada"})
		if got, want := resultText(res), c.impl+" greets Ada"; res.IsError || got != want {
			t.Errorf("%s__greet = %q (isError %v), want %q", c.server, got, res.IsError, want)
		}

		res = callTool(t, cs, c.server+"__ask", map[string]any{})
		if got, want := resultText(res), c.impl+`: accept, color teal`+c.state; res.IsError || got != want {
			t.Errorf("%s__ask = %q (isError %v), want %q", c.server, got, res.IsError, want)
		}
		select {
		case m := <-asked:
			if m != "Your favourite colour?" {
				t.Errorf("%s__ask asked the client %q", c.server, m)
			}
		default:
			t.Errorf("%s__ask: the client was not asked", c.server)
		}

		drain(changed)
		if got := resultText(callTool(t, cs, c.server+"__grow", map[string]any{})); got != c.impl+" grew a tool" {
			t.Errorf("%s__grow = %q", c.server, got)
		}
		select {
		case <-changed:
		case <-time.After(testTimeout):
			t.Fatalf("%s: no tools/list_changed after the server added a tool", c.server)
		}
		waitListed(t, cs, c.server+"__grown")
		if got := resultText(callTool(t, cs, c.server+"__grown", map[string]any{})); got != c.impl+": grown" {
			t.Errorf("%s__grown = %q", c.server, got)
		}

		if !strings.HasPrefix(c.server, "new") {
			continue // the TypeScript SDK v2 2.4.0 has no server side of the tasks extension
		}
		// A task-returning tool (tasks extension) completed for a client
		// without tasks: mcpmux polls the task and asks the client the
		// task's question.
		res = callTool(t, cs, c.server+"__job", map[string]any{})
		if got := resultText(res); res.IsError || got != "hello Ada" {
			t.Errorf("%s__job = %q (isError %v), want the task's result", c.server, got, res.IsError)
		}
		select {
		case m := <-asked:
			if m != "Your name?" {
				t.Errorf("%s__job asked the client %q", c.server, m)
			}
		default:
			t.Errorf("%s__job: the client was not asked the task's question", c.server)
		}
	}

	checkExtensionTasks(t, dir)

	// check shows each server's era.
	out, _, _ := runMcpmux(t, "check", "--config", dir)
	for _, want := range []string{"everything ", "newstdio ", "newhttp ", "tsreject ", "tsdefault "} {
		line := lineWith(out, want)
		era := "2026-07-28"
		if want == "everything " {
			era = "2025-11-25"
		}
		if !strings.Contains(line, era) {
			t.Errorf("check: %s line %q does not show %s\n%s", strings.TrimSpace(want), line, era, out)
		}
	}
}

// checkExtensionTasks completes the task-returning tools of the go-sdk
// 2026 servers of dir (the tasks extension, tasktest) for the two other
// kinds of client: a 2025-11-25 client with tasks (a 2025 task, its
// question asked through tasks/result) over stdio, and a 2026-07-28 client
// that declares the extension (the task handle, polled with tasks/get and
// answered with tasks/update) over HTTP, each POST on its own.
func checkExtensionTasks(t *testing.T, dir string) {
	t.Helper()
	c, _ := startRawClient(t, exec.Command(mcpmuxBin, "--config", dir), rawCaps{host: true, tasks: true}, nil)
	p := startHTTP(t, dir)
	url := p.url + "/mcp"
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	for _, server := range []string{"newstdio", "newhttp"} {
		tool := server + "__job"
		var created struct{ Task struct{ TaskID string } }
		if res := c.call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}}); json.Unmarshal(res, &created) != nil || created.Task.TaskID == "" {
			t.Errorf("%s as a 2025 task: %s, want a CreateTaskResult", tool, res)
		} else if res := c.call("tasks/result", map[string]any{"taskId": created.Task.TaskID}); !strings.Contains(string(res), "hello Ada") {
			t.Errorf("%s: tasks/result = %s, want the greeting", tool, res)
		}

		var handle struct {
			Result struct{ ResultType, TaskID string }
		}
		if res := testkit.Post2026(t, url, nil, "tools/call", tool, map[string]any{"name": tool, "arguments": map[string]any{}, "_meta": meta}); json.Unmarshal([]byte(res), &handle) != nil || handle.Result.ResultType != "task" {
			t.Errorf("%s for a 2026 client of the extension: %s, want a task handle", tool, res)
			continue
		}
		// Polled as a client of the extension does, answering what the
		// task asks.
		id := handle.Result.TaskID
		got := testkit.Await(t, tool+"'s task no longer working", func() string {
			got := testkit.Post2026(t, url, nil, "tasks/get", id, map[string]any{"taskId": id, "_meta": meta})
			if strings.Contains(got, `"status":"input_required"`) {
				testkit.Post2026(t, url, nil, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Zoe"}}}, "_meta": meta})
			}
			return got
		}, func(got string) bool {
			return !strings.Contains(got, `"status":"working"`) && !strings.Contains(got, `"status":"input_required"`)
		})
		if !strings.Contains(got, `"status":"completed"`) || !strings.Contains(got, "hello Zoe") {
			t.Errorf("%s: tasks/get = %s, want the task completed with the greeting", tool, got)
		}
	}
}

// waitListed waits until the client's tools/list has name: a list change
// may be announced before the catalog of every profile has it.
func waitListed(t *testing.T, cs *mcp.ClientSession, name string) {
	t.Helper()
	testkit.Await(t, name+" is listed", func() []string { return toolNames(t, cs) }, func(names []string) bool { return slices.Contains(names, name) })
}

func lineWith(text, prefix string) string {
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// A task of the tasks extension is its client's: of two 2026-07-28
// clients over HTTP with different tasks (X-Task-Id), neither gets,
// answers or cancels the other's task, which is not found, as an id
// mcpmux never handed out; its own client polls it, answers its question
// and gets its result.
func TestExtensionTaskOwners(t *testing.T) {
	t.Parallel()
	srv := only2026Server("only2026http")
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	p := startHTTP(t, writeConfig(t, map[string]string{"tool/newhttp.yaml": fmt.Sprintf("name: newhttp\nurl: %s\n", ts.URL)}))
	url := p.url + "/mcp"
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	alice, bob := http.Header{"X-Task-Id": {"alice-task"}}, http.Header{"X-Task-Id": {"bob-task"}}
	start := func(hdr http.Header) string {
		t.Helper()
		var handle struct {
			Result struct{ ResultType, TaskID string }
		}
		if res := testkit.Post2026(t, url, hdr, "tools/call", "newhttp__job", map[string]any{"name": "newhttp__job", "arguments": map[string]any{}, "_meta": meta}); json.Unmarshal([]byte(res), &handle) != nil || handle.Result.ResultType != "task" {
			t.Fatalf("newhttp__job: %s, want a task handle", res)
		}
		return handle.Result.TaskID
	}
	aliceTask, bobTask := start(alice), start(bob)
	for _, c := range []struct {
		who  string
		hdr  http.Header
		task string
	}{{"bob", bob, aliceTask}, {"alice", alice, bobTask}, {"a client without a task", nil, aliceTask}} {
		for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
			params := map[string]any{"taskId": c.task, "_meta": meta}
			if method == "tasks/update" {
				params["inputResponses"] = map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Mallory"}}}
			}
			if got := testkit.Post2026(t, url, c.hdr, method, c.task, params); !strings.Contains(got, `"code":-32602`) || !strings.Contains(got, "Task not found") {
				t.Errorf("%s's %s of another client's task: %s, want -32602 Task not found", c.who, method, got)
			}
		}
	}
	// Each owner completes its own.
	for _, c := range []struct {
		hdr        http.Header
		task, name string
	}{{alice, aliceTask, "Alice"}, {bob, bobTask, "Bob"}} {
		testkit.Await(t, "the task's completion", func() string {
			got := testkit.Post2026(t, url, c.hdr, "tasks/get", c.task, map[string]any{"taskId": c.task, "_meta": meta})
			if strings.Contains(got, `"status":"input_required"`) {
				testkit.Post2026(t, url, c.hdr, "tasks/update", c.task, map[string]any{"taskId": c.task, "inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": c.name}}}, "_meta": meta})
			}
			return got
		}, func(got string) bool {
			if !strings.Contains(got, `"status":"working"`) && !strings.Contains(got, `"status":"input_required"`) && !strings.Contains(got, `"status":"completed"`) {
				t.Fatalf("tasks/get = %s", got)
			}
			return strings.Contains(got, `"status":"completed"`)
		})
		if got := testkit.Post2026(t, url, c.hdr, "tasks/get", c.task, map[string]any{"taskId": c.task, "_meta": meta}); !strings.Contains(got, "hello "+c.name) {
			t.Errorf("the owner's completed task: %s, want its greeting of %s", got, c.name)
		}
	}
}
