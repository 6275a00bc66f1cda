package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/tasktest"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

func startTaskServer2026(t *testing.T) (*Server, *tasktest.Extension) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "tasks", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{config.Protocol2026}})
	ts := tasktest.InstallExtension(srv)
	s, _ := startEra(t, srv, "")
	waitState(t, s, "up", func(st Status) bool { return st.State == StateUp })
	return s, ts
}

var elicitingCaller = func(name string) Request {
	return Request{Caller: newTaskCaller(name), Features: ClientFeatures{FormElicitation: true}}
}

// A client that knows nothing of tasks gets the result of a 2026 server's
// task as the call's: mcpmux declares the extension (the server would
// refuse the call otherwise), polls tasks/get, asks the client what the
// task asks once (though the server shows it again until it has read the
// answer), and sends the answer with tasks/update.
func TestTask2026FinishedForAPlainCaller(t *testing.T) {
	s, ts := startTaskServer2026(t)
	p := CallParams{Request: elicitingCaller("ada"), Params: &mcp.CallToolParams{Name: "job"}}
	if got, want := callText(t, s, p), "hello ada"; got != want {
		t.Fatalf("job = %q, want %q", got, want)
	}
	if n := len(p.Caller.(*taskCaller).elicits); n != 1 {
		t.Errorf("the client was asked %d times, want once", n)
	}
	calls, withExt, updates, _ := ts.Seen()
	if calls != 1 || withExt != 1 || strings.Join(updates, ",") != "task-1:ada" {
		t.Errorf("server saw %d calls (%d declaring the extension), updates %v; want 1, 1, [task-1:ada]", calls, withExt, updates)
	}

	// A task that fails with a JSON-RPC error fails the call with it.
	_, err := s.CallTool(context.Background(), CallParams{Request: elicitingCaller("bob"), Params: &mcp.CallToolParams{Name: "broken"}})
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Code != -32603 || !strings.Contains(rpc.Message, "rate limit") {
		t.Errorf("broken: %v, want the task's JSON-RPC error", err)
	}

	// A client that cannot answer what the task asks gets an error naming
	// the capability, and the task is cancelled.
	_, err = s.CallTool(context.Background(), CallParams{Request: Request{Caller: newTaskCaller("eve")}, Params: &mcp.CallToolParams{Name: "job"}})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(ie.Reason, "elicitation") {
		t.Fatalf("job without elicitation: %v, want an InputError naming elicitation", err)
	}
	// The cancel is sent in the background, after the error: nothing
	// announces it but the server seeing it.
	testkit.Eventually(t, "the task cancelled", func() bool {
		_, _, _, cancelled := ts.Seen()
		return strings.Join(cancelled, ",") == "task-3"
	})
}

// A client that declared the extension gets the task handle, and its
// tasks/get, tasks/update and tasks/cancel reach the server.
func TestTask2026HandlePassedToAClientOfTheExtension(t *testing.T) {
	s, _ := startTaskServer2026(t)
	ctx := context.Background()
	r := elicitingCaller("ada")
	res, err := s.CallTool(ctx, CallParams{Request: r, Params: &mcp.CallToolParams{Name: "job"}, TasksExtension: true})
	if err != nil || !IsTaskHandle(res) || !strings.Contains(string(res), `"taskId":"task-1"`) {
		t.Fatalf("job: %s, %v; want the task handle", res, err)
	}
	ask := func(method, inputs string) string {
		t.Helper()
		raw, err := s.TaskRequest(ctx, TaskParams{Request: r, Method: method, TaskID: "task-1", Extension: true, InputResponses: json.RawMessage(inputs)})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return string(raw)
	}
	if got := ask("tasks/get", ""); !strings.Contains(got, `"status":"working"`) {
		t.Fatalf("tasks/get = %s", got)
	}
	if got := ask("tasks/get", ""); !strings.Contains(got, `"status":"input_required"`) || !strings.Contains(got, "Your name?") {
		t.Fatalf("tasks/get = %s, want the input request", got)
	}
	ask("tasks/update", `{"name":{"action":"accept","content":{"who":"zoe"}}}`)
	if got := ask("tasks/get", ""); !strings.Contains(got, `"status":"completed"`) || !strings.Contains(got, "hello zoe") {
		t.Fatalf("tasks/get = %s, want the task completed with its result", got)
	}
	if n := len(r.Caller.(*taskCaller).elicits); n != 0 {
		t.Errorf("mcpmux asked the client %d times: a client of the extension answers with tasks/update", n)
	}
	_, err = s.TaskRequest(ctx, TaskParams{Request: r, Method: "tasks/get", TaskID: "task-9", Extension: true})
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/get of an unknown task: %v, want the server's -32602", err)
	}
}

// A client of 2025-11-25 that augments its call with a task gets a 2025
// CreateTaskResult for a 2026 server's task, and tasks/get, tasks/result
// and tasks/cancel in the 2025 shape; tasks/result asks it what the task
// asks.
func TestTask2026SpokenOfIn2025Terms(t *testing.T) {
	s, ts := startTaskServer2026(t)
	ctx := context.Background()
	r := elicitingCaller("ada")
	res, err := s.CallTool(ctx, CallParams{Request: r, Params: &mcp.CallToolParams{Name: "job"}, MCPTask: json.RawMessage(`{"ttl":60000}`), ExtensionTool: true})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := CreatedTask(res)
	if !ok || task.ID != "task-1" || task.Status != "working" || task.TTL.Milliseconds() != 60000 || strings.Contains(string(res), "resultType") {
		t.Fatalf("result %s, want a 2025 CreateTaskResult", res)
	}
	get, err := s.TaskRequest(ctx, TaskParams{Request: r, Method: "tasks/get", TaskID: "task-1", ExtensionTool: true})
	var g map[string]any
	if err != nil || json.Unmarshal(get, &g) != nil || g["status"] != "working" || g["ttl"] != float64(60000) || g["pollInterval"] != float64(1) || g["resultType"] != nil || g["result"] != nil {
		t.Fatalf("tasks/get = %s (%v), want a 2025 task", get, err)
	}
	out, err := s.TaskRequest(ctx, TaskParams{Request: r, Method: "tasks/result", TaskID: "task-1", ExtensionTool: true})
	if err != nil || !strings.Contains(string(out), "hello ada") || strings.Contains(string(out), "taskId") {
		t.Fatalf("tasks/result = %s (%v), want the tool's result", out, err)
	}
	if n := len(r.Caller.(*taskCaller).elicits); n != 1 {
		t.Errorf("the client was asked %d times, want once", n)
	}

	res, _ = s.CallTool(ctx, CallParams{Request: r, Params: &mcp.CallToolParams{Name: "job"}, MCPTask: json.RawMessage(`{}`), ExtensionTool: true})
	task, _ = CreatedTask(res)
	cancel, err := s.TaskRequest(ctx, TaskParams{Request: r, Method: "tasks/cancel", TaskID: task.ID, ExtensionTool: true})
	if err != nil || !strings.Contains(string(cancel), `"status":"cancelled"`) {
		t.Fatalf("tasks/cancel = %s (%v), want the task, cancelled", cancel, err)
	}
	if _, _, _, c := ts.Seen(); strings.Join(c, ",") != task.ID {
		t.Errorf("server cancelled %v, want [%s]", c, task.ID)
	}
	_, err = s.TaskRequest(ctx, TaskParams{Request: r, Method: "tasks/list", ExtensionTool: true})
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("tasks/list: %v, want method not found (the extension lists no tasks)", err)
	}
}

// A 2026 server's input_required answer to prompts/get and resources/read
// is fulfilled by the caller, as to tools/call: the request is sent again
// with the answer and the server's requestState.
func TestEra2026PromptAndResourceInput(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mrtr", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{config.Protocol2026}})
	question := mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "who?", RequestedSchema: map[string]any{"type": "object"}}}
	answer := func(r mcp.InputResponseMap, state string) (string, bool) {
		e, ok := r["who"].(*mcp.ElicitResult)
		if !ok {
			return "", false
		}
		return fmt.Sprintf("%v %s", e.Content["who"], state), true
	}
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if got, ok := answer(req.Params.InputResponses, req.Params.RequestState); ok {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "greet " + got}}}}, nil
		}
		return &mcp.GetPromptResult{InputRequests: question, RequestState: "p-1"}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "ask://who", Name: "who"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if got, ok := answer(req.Params.InputResponses, req.Params.RequestState); ok {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ask://who", Text: "read " + got}}}, nil
		}
		return &mcp.ReadResourceResult{InputRequests: question, RequestState: "r-1"}, nil
	})
	s, _ := startEra(t, srv, "")
	waitState(t, s, "up", func(st Status) bool { return st.State == StateUp })
	r := elicitingCaller("ada")
	p, err := s.GetPrompt(context.Background(), r, &mcp.GetPromptParams{Name: "greet"})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.(*mcp.TextContent).Text != "greet ada p-1" {
		t.Errorf("prompts/get = %+v, %v; want the prompt after the caller's answer", p, err)
	}
	res, err := s.ReadResource(context.Background(), r, &mcp.ReadResourceParams{URI: "ask://who"})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "read ada r-1" {
		t.Errorf("resources/read = %+v, %v; want the resource after the caller's answer", res, err)
	}
	if n := len(r.Caller.(*taskCaller).elicits); n != 2 {
		t.Errorf("the caller was asked %d times, want 2", n)
	}
}
