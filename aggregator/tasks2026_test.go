package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/front"
	"github.com/mcpmux/mcpmux/internal/tasktest"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// taskServer2026 is a server of MCP 2026-07-28 with the tasks extension
// (tasktest.InstallExtension): its tool "job" makes a task that asks for
// a name and completes with a greeting.
func taskServer2026() (*mcp.Server, *tasktest.Extension) {
	s := mcp.NewServer(&mcp.Implementation{Name: "tasks", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{config.Protocol2026}})
	return s, tasktest.InstallExtension(s)
}

const extensionCaps = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// A task of a 2026 server reaches each client as it can take it: a 2025
// client with tasks gets a 2025 task (listed as task-capable, augmented
// call, tasks/get, tasks/result asking it the task's question); a 2025
// client without tasks gets the task's result, asked the question as a
// server's elicitation; a 2026 client of the extension gets the task
// handle under mcpmux's id and polls it with tasks/get, answers with
// tasks/update; a 2026 client without it gets the result, the question
// coming as an InputRequiredResult.
func TestExtensionTasksForEveryClient(t *testing.T) {
	srv, ext := taskServer2026()
	h := newHarness(t, map[string]*mcp.Server{"t": srv}, "", nil)

	t.Run("2025 client with tasks", func(t *testing.T) {
		c, init := stdioClient(t, h.agg, DefaultProfile, clientWithTasks)
		if !strings.Contains(string(init), `"tasks":`) {
			t.Errorf("initialize %s, want the tasks capability", init)
		}
		def := toolDef(t, c.mustCall("tools/list", map[string]any{}), "t__job")
		if ex, _ := def["execution"].(map[string]any); ex["taskSupport"] != "optional" {
			t.Errorf("t__job listed %v, want execution.taskSupport optional", def)
		}
		id := taskIDOf(t, c.mustCall("tools/call", map[string]any{"name": "t__job", "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}}))
		if got := string(c.mustCall("tasks/get", map[string]any{"taskId": id})); !strings.Contains(got, `"status":"working"`) || !strings.Contains(got, `"ttl":60000`) || strings.Contains(got, "resultType") {
			t.Errorf("tasks/get = %s, want a 2025 task, working", got)
		}
		if got := string(c.mustCall("tasks/result", map[string]any{"taskId": id})); !strings.Contains(got, "hello Ada") {
			t.Errorf("tasks/result = %s, want the greeting", got)
		}
		c.waitFor("the task's elicitation", func(_, asked []json.RawMessage) bool { return len(asked) == 1 })
	})

	t.Run("2025 client without tasks", func(t *testing.T) {
		c, _ := stdioClient(t, h.agg, DefaultProfile, `{"elicitation":{}}`)
		if def := toolDef(t, c.mustCall("tools/list", map[string]any{}), "t__job"); def["execution"] != nil {
			t.Errorf("t__job listed %v to a client without tasks, want it as its server listed it", def)
		}
		if got := string(c.mustCall("tools/call", map[string]any{"name": "t__job", "arguments": map[string]any{}})); !strings.Contains(got, "hello Ada") || strings.Contains(got, "taskId") {
			t.Errorf("tools/call = %s, want the task's result", got)
		}
	})

	t.Run("2026 client with the extension", func(t *testing.T) {
		c := stdioLines(t, h.agg, DefaultProfile)
		meta := sessionlessMeta(extensionCaps)
		if got := string(c.mustCall("server/discover", map[string]any{"_meta": meta})); !strings.Contains(got, `"io.modelcontextprotocol/tasks":{}`) {
			t.Errorf("server/discover = %s, want the tasks extension", got)
		}
		if def := toolDef(t, c.mustCall("tools/list", map[string]any{"_meta": meta}), "t__job"); def["execution"] != nil {
			t.Errorf("t__job listed %v to a 2026 client, want it as its server listed it", def)
		}
		res := c.mustCall("tools/call", map[string]any{"name": "t__job", "arguments": map[string]any{}, "_meta": meta})
		var handle struct{ ResultType, TaskID, Status string }
		if json.Unmarshal(res, &handle) != nil || handle.ResultType != "task" || handle.Status != "working" || handle.TaskID == "" || strings.HasPrefix(handle.TaskID, "task-") {
			t.Fatalf("tools/call = %s, want a task handle under mcpmux's id", res)
		}
		get := func() string {
			return string(c.mustCall("tasks/get", map[string]any{"taskId": handle.TaskID, "_meta": meta}))
		}
		if got := get(); !strings.Contains(got, `"status":"working"`) || !strings.Contains(got, `"taskId":"`+handle.TaskID+`"`) || !strings.Contains(got, `"resultType":"complete"`) {
			t.Errorf("tasks/get = %s, want working, under mcpmux's id", got)
		}
		if got := get(); !strings.Contains(got, `"status":"input_required"`) || !strings.Contains(got, "Your name?") {
			t.Fatalf("tasks/get = %s, want the task's question", got)
		}
		ack := c.mustCall("tasks/update", map[string]any{"taskId": handle.TaskID, "inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"who": "Zoe"}}}, "_meta": meta})
		if !strings.Contains(string(ack), `"resultType":"complete"`) {
			t.Errorf("tasks/update = %s, want an acknowledgement", ack)
		}
		if got := get(); !strings.Contains(got, `"status":"completed"`) || !strings.Contains(got, "hello Zoe") {
			t.Errorf("tasks/get = %s, want the task completed with its result", got)
		}

		// An id mcpmux did not hand out, or a client without the
		// extension, is refused.
		if _, errj := c.call("tasks/get", map[string]any{"taskId": handle.TaskID + "x", "_meta": meta}); !strings.Contains(string(errj), "-32602") {
			t.Errorf("tasks/get of an altered id: %s, want -32602", errj)
		}
		if _, errj := c.call("tasks/get", map[string]any{"taskId": "task-1", "_meta": meta}); !strings.Contains(string(errj), "-32602") {
			t.Errorf("tasks/get of the server's own id: %s, want -32602", errj)
		}
		if _, errj := c.call("tasks/get", map[string]any{"taskId": handle.TaskID, "_meta": sessionlessMeta(`{}`)}); !strings.Contains(string(errj), "-32021") {
			t.Errorf("tasks/get without the extension: %s, want -32021", errj)
		}
	})

	t.Run("2026 client without the extension", func(t *testing.T) {
		c := stdioLines(t, h.agg, DefaultProfile)
		meta := sessionlessMeta(`{"elicitation":{}}`)
		res := c.mustCall("tools/call", map[string]any{"name": "t__job", "arguments": map[string]any{}, "_meta": meta})
		var ir struct {
			ResultType    string
			InputRequests map[string]json.RawMessage
			RequestState  string
		}
		if json.Unmarshal(res, &ir) != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 {
			t.Fatalf("tools/call = %s, want the task's question as an InputRequiredResult", res)
		}
		answers := map[string]any{}
		for k := range ir.InputRequests {
			answers[k] = map[string]any{"action": "accept", "content": map[string]any{"who": "Eve"}}
		}
		res = c.mustCall("tools/call", map[string]any{"name": "t__job", "arguments": map[string]any{}, "inputResponses": answers, "requestState": ir.RequestState, "_meta": meta})
		if !strings.Contains(string(res), "hello Eve") || !strings.Contains(string(res), `"resultType":"complete"`) {
			t.Errorf("retry = %s, want the task's result", res)
		}
	})

	calls, withExt, updates, _ := ext.Seen()
	if calls != 4 || withExt != 4 || strings.Join(updates, ",") != "task-1:Ada,task-2:Ada,task-3:Zoe,task-4:Eve" {
		t.Errorf("the server saw %d calls, %d declaring the extension, updates %v", calls, withExt, updates)
	}
}

// askingPromptServer is a 2025-11-25 server whose prompt "greet" and
// resource "ask://name" elicit a name from their client midway.
func askingPromptServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	ask := func(ctx context.Context, ss *mcp.ServerSession) string {
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%v", res.Content["name"])
	}
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "greet " + ask(ctx, req.Session)}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "ask://name", Name: "name"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ask://name", Text: "name " + ask(ctx, req.Session)}}}, nil
	})
	return s
}

// A 2025-11-25 server that elicits in the middle of prompts/get or
// resources/read reaches a 2026-07-28 client as an InputRequiredResult,
// as in the middle of tools/call: the retry with the answer resumes the
// parked request; its state is good for that request only.
func TestParkedPromptAndResourceRequests(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{"asker": askingPromptServer()}, "", pinned2025("asker"))
	c := stdioLines(t, h.agg, DefaultProfile)
	meta := sessionlessMeta(`{"elicitation":{}}`)
	for _, r := range []struct {
		method string
		params map[string]any
		want   string
	}{
		{"prompts/get", map[string]any{"name": "asker__greet"}, "greet Ada"},
		{"resources/read", map[string]any{"uri": "ask://name"}, "name Ada"},
	} {
		params := map[string]any{"_meta": meta}
		maps.Copy(params, r.params)
		res := c.mustCall(r.method, params)
		var ir struct {
			ResultType    string
			InputRequests map[string]struct{ Method string }
			RequestState  string
		}
		if json.Unmarshal(res, &ir) != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 {
			t.Fatalf("%s = %s, want the server's elicitation as an InputRequiredResult", r.method, res)
		}
		answers := map[string]any{}
		for k, q := range ir.InputRequests {
			if q.Method != "elicitation/create" {
				t.Errorf("%s asked with %q", r.method, q.Method)
			}
			answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
		}
		// The state is good for this request only.
		other := map[string]any{"name": "asker__other", "_meta": meta, "inputResponses": answers, "requestState": ir.RequestState}
		if _, errj := c.call("prompts/get", other); !strings.Contains(string(errj), "belongs to a request of") {
			t.Errorf("%s's state used for another prompt: %s, want it refused", r.method, errj)
		}
		params["inputResponses"], params["requestState"] = answers, ir.RequestState
		res = c.mustCall(r.method, params)
		if !strings.Contains(string(res), r.want) || !strings.Contains(string(res), `"resultType":"complete"`) {
			t.Errorf("%s retried = %s, want %q", r.method, res, r.want)
		}
	}
}

// A 2026-07-28 client's Mcp-Param-* headers are checked against the body
// for the tools whose inputSchema marks parameters with x-mcp-header (as
// mcpmux lists them, from their server): a call without them, or with a
// value that differs from the argument, is refused with 400 and -32020; a
// matching one (base64-encoded or plain) reaches the server.
func TestParamHeadersFromClientsChecked(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hdr", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "route", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "routed " + string(req.Params.Arguments)}}}, nil
	})
	_, ts := sessionlessHTTP(t, map[string]*mcp.Server{"hdr": srv}, nil)
	post := func(args string, headers map[string]string) (int, string) {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hdr__route","arguments":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, args)
		h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "hdr__route"}
		maps.Copy(h, headers)
		resp, b := testkit.Post(t, ts.URL+"/mcp", body, h)
		return resp.StatusCode, b
	}
	for _, c := range []struct {
		args    string
		headers map[string]string
		ok      bool
	}{
		{`{"region":"eu","n":7}`, nil, false},
		{`{"region":"eu","n":7}`, map[string]string{"Mcp-Param-Region": "us", "Mcp-Param-N": "7"}, false},
		{`{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "eu", "Mcp-Param-N": "7"}, false},
		{`{"region":"eu","n":7}`, map[string]string{"Mcp-Param-Region": "eu", "Mcp-Param-N": "7"}, true},
		{`{"region":"Hello, 世界"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?="}, true},
		{`{}`, nil, true},
	} {
		code, body := post(c.args, c.headers)
		switch {
		case c.ok && (code != http.StatusOK || !strings.Contains(body, "routed")):
			t.Errorf("%s with %v: %d %s, want it to reach the server", c.args, c.headers, code, body)
		case !c.ok && (code != http.StatusBadRequest || !strings.Contains(body, "-32020")):
			t.Errorf("%s with %v: %d %s, want 400 and -32020", c.args, c.headers, code, body)
		}
	}
}

// Over HTTP, where each 2026 request is its own client, a task handle
// needs nothing of the request that made it: tasks/get, tasks/update and
// tasks/cancel on later POSTs (with the taskId as Mcp-Name, as the
// extension has clients send) reach the task. A 2025 client with tasks
// lists a 2026 server's tasks with tasks/list (mcpmux asks each with
// tasks/get: the extension has no tasks/list).
func TestExtensionTasksOverHTTP(t *testing.T) {
	srv, ext := taskServer2026()
	h, ts := sessionlessHTTP(t, map[string]*mcp.Server{"t": srv}, nil)
	url := ts.URL + "/mcp"
	meta := sessionlessMeta(extensionCaps)
	res := testkit.Post2026(t, url, nil, "tools/call", "t__job", map[string]any{"name": "t__job", "arguments": map[string]any{}, "_meta": meta})
	var msg struct {
		Result struct{ ResultType, TaskID string }
	}
	if json.Unmarshal([]byte(res), &msg) != nil || msg.Result.ResultType != "task" {
		t.Fatalf("tools/call = %s, want a task handle", res)
	}
	id := msg.Result.TaskID
	for _, want := range []string{`"status":"working"`, `"status":"input_required"`} {
		if got := testkit.Post2026(t, url, nil, "tasks/get", id, map[string]any{"taskId": id, "_meta": meta}); !strings.Contains(got, want) {
			t.Fatalf("tasks/get = %s, want %s", got, want)
		}
	}
	if got := testkit.Post2026(t, url, nil, "tasks/cancel", id, map[string]any{"taskId": id, "_meta": meta}); !strings.Contains(got, `"result":{`) {
		t.Fatalf("tasks/cancel = %s, want an acknowledgement", got)
	}
	if got := testkit.Post2026(t, url, nil, "tasks/get", id, map[string]any{"taskId": id, "_meta": meta}); !strings.Contains(got, `"status":"cancelled"`) {
		t.Errorf("tasks/get after tasks/cancel = %s, want cancelled", got)
	}

	c, _ := stdioClient(t, h.agg, DefaultProfile, clientWithTasks)
	tid := taskIDOf(t, c.mustCall("tools/call", map[string]any{"name": "t__job", "arguments": map[string]any{}, "task": map[string]any{}}))
	if got := string(c.mustCall("tasks/list", map[string]any{})); !strings.Contains(got, `"taskId":"`+tid+`"`) || strings.Contains(got, "task-1") {
		t.Errorf("tasks/list = %s, want the session's own task only", got)
	}
	if _, _, _, cancelled := ext.Seen(); strings.Join(cancelled, ",") != "task-1" {
		t.Errorf("server cancelled %v, want [task-1]", cancelled)
	}
}

// A task of the tasks extension is its client's. Over HTTP, where a 2026
// client has no session, the client is who its request names, as for
// per-client connections: its task (X-Task-Id or _meta.task_id) within
// its token, else its token. Another task, the same task under another
// token, or a request that names no client gets, updates or cancels
// nothing of it: the task is not found, as an id mcpmux never handed out.
// A task made by a request that names no client has no owner: its handle
// is the capability. Over stdio the connection is the client.
func TestExtensionTaskOwnership(t *testing.T) {
	srv, ext := taskServer2026()
	h := newHarness(t, map[string]*mcp.Server{"t": srv}, "", nil)
	h.front = h.serveHTTP(&front.Options{Tokens: front.NewTokens("token-of-alice-0123456789", "token-of-bob-0123456789")})
	ts := httptest.NewServer(h.front)
	t.Cleanup(ts.Close)
	url := ts.URL + "/mcp"
	meta := sessionlessMeta(extensionCaps)
	as := func(token, task string) http.Header {
		hdr := http.Header{"Authorization": {"Bearer " + token}}
		if task != "" {
			hdr.Set("X-Task-Id", task)
		}
		return hdr
	}
	start := func(hdr http.Header, m map[string]any) string {
		t.Helper()
		res := testkit.Post2026(t, url, hdr, "tools/call", "t__job", map[string]any{"name": "t__job", "arguments": map[string]any{}, "_meta": m})
		var msg struct {
			Result struct{ ResultType, TaskID string }
		}
		if json.Unmarshal([]byte(res), &msg) != nil || msg.Result.ResultType != "task" {
			t.Fatalf("tools/call = %s, want a task handle", res)
		}
		return msg.Result.TaskID
	}
	notFound := func(what, got string) {
		t.Helper()
		if !strings.Contains(got, "-32602") || !strings.Contains(got, "Task not found") {
			t.Errorf("%s = %s, want -32602 Task not found", what, got)
		}
	}
	alice, aliceT1, aliceT2, bobT1 := as("token-of-alice-0123456789", ""), as("token-of-alice-0123456789", "T1"), as("token-of-alice-0123456789", "T2"), as("token-of-bob-0123456789", "T1")

	// Keyed by task within the token.
	id := start(aliceT1, meta)
	for _, c := range []struct {
		who string
		hdr http.Header
	}{{"alice's task T2", aliceT2}, {"bob's task T1", bobT1}, {"alice without a task", alice}} {
		notFound(c.who+": tasks/get", testkit.Post2026(t, url, c.hdr, "tasks/get", id, map[string]any{"taskId": id, "_meta": meta}))
		notFound(c.who+": tasks/update", testkit.Post2026(t, url, c.hdr, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"who": "Mallory"}}}, "_meta": meta}))
		notFound(c.who+": tasks/cancel", testkit.Post2026(t, url, c.hdr, "tasks/cancel", id, map[string]any{"taskId": id, "_meta": meta}))
	}
	if got := testkit.Post2026(t, url, aliceT1, "tasks/get", id, map[string]any{"taskId": id, "_meta": meta}); !strings.Contains(got, `"status":"working"`) {
		t.Errorf("the owner's tasks/get = %s, want working", got)
	}
	// The task named in _meta is the task of the X-Task-Id header.
	withTask := maps.Clone(meta)
	withTask["task_id"] = "T1"
	if got := testkit.Post2026(t, url, alice, "tasks/get", id, map[string]any{"taskId": id, "_meta": withTask}); !strings.Contains(got, `"status":"input_required"`) {
		t.Errorf("the owner's tasks/get naming its task in _meta = %s, want input_required", got)
	}
	if got := testkit.Post2026(t, url, aliceT1, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"who": "Zoe"}}}, "_meta": meta}); !strings.Contains(got, `"result":{`) {
		t.Errorf("the owner's tasks/update = %s, want an acknowledgement", got)
	}
	if got := testkit.Post2026(t, url, aliceT1, "tasks/get", id, map[string]any{"taskId": id, "_meta": meta}); !strings.Contains(got, `"status":"completed"`) || !strings.Contains(got, "hello Zoe") {
		t.Errorf("the owner's tasks/get = %s, want completed with its answer", got)
	}

	// Keyed by the token alone.
	id = start(alice, meta)
	notFound("bob: tasks/get", testkit.Post2026(t, url, as("token-of-bob-0123456789", ""), "tasks/get", id, map[string]any{"taskId": id, "_meta": meta}))
	if got := testkit.Post2026(t, url, alice, "tasks/cancel", id, map[string]any{"taskId": id, "_meta": meta}); !strings.Contains(got, `"result":{`) {
		t.Errorf("the owner's tasks/cancel = %s, want an acknowledgement", got)
	}

	// Over stdio the connection is the client.
	c1, c2 := stdioLines(t, h.agg, DefaultProfile), stdioLines(t, h.agg, DefaultProfile)
	var handle struct{ TaskID string }
	if err := json.Unmarshal(c1.mustCall("tools/call", map[string]any{"name": "t__job", "arguments": map[string]any{}, "_meta": meta}), &handle); err != nil || handle.TaskID == "" {
		t.Fatalf("tools/call over stdio: %v, want a task handle", err)
	}
	if _, errj := c2.call("tasks/get", map[string]any{"taskId": handle.TaskID, "_meta": meta}); !strings.Contains(string(errj), "Task not found") {
		t.Errorf("another connection's tasks/get: %s, want Task not found", errj)
	}
	if got := string(c1.mustCall("tasks/get", map[string]any{"taskId": handle.TaskID, "_meta": meta})); !strings.Contains(got, `"status":"working"`) {
		t.Errorf("the connection's own tasks/get = %s, want working", got)
	}

	// Only tasks/update of the owner reached the server, only its
	// cancel.
	if _, _, updates, cancelled := ext.Seen(); strings.Join(updates, ",") != "task-1:Zoe" || strings.Join(cancelled, ",") != "task-2" {
		t.Errorf("the server saw updates %v and cancels %v, want only the owners'", updates, cancelled)
	}
}

// Without tokens and without a task, a request names no client: the
// handle is the capability, and any request that holds it reaches the
// task (a client of a task of its own gets its own key).
func TestExtensionTaskOfNoClient(t *testing.T) {
	srv, _ := taskServer2026()
	_, ts := sessionlessHTTP(t, map[string]*mcp.Server{"t": srv}, nil)
	url := ts.URL + "/mcp"
	meta := sessionlessMeta(extensionCaps)
	res := testkit.Post2026(t, url, nil, "tools/call", "t__job", map[string]any{"name": "t__job", "arguments": map[string]any{}, "_meta": meta})
	var msg struct {
		Result struct{ TaskID string }
	}
	if json.Unmarshal([]byte(res), &msg) != nil || msg.Result.TaskID == "" {
		t.Fatalf("tools/call = %s, want a task handle", res)
	}
	id := msg.Result.TaskID
	if got := testkit.Post2026(t, url, nil, "tasks/get", id, map[string]any{"taskId": id, "_meta": meta}); !strings.Contains(got, `"status":"working"`) {
		t.Errorf("tasks/get of another request = %s, want working", got)
	}
	if got := testkit.Post2026(t, url, http.Header{"X-Task-Id": {"T9"}}, "tasks/get", id, map[string]any{"taskId": id, "_meta": meta}); !strings.Contains(got, `"status":`) {
		t.Errorf("tasks/get of a client with a task = %s, want the task", got)
	}
}
