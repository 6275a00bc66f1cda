package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// rawTaskResult is a result of the task server below, written as it is.
type rawTaskResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawTaskResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

type taskIDArgs struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// taskServer2026 is a 2026-07-28 server of the tasks extension: its tool
// "job" makes a task, for a client that declared the extension, that asks
// for a name (input_required, an elicitation) and completes with a
// greeting; "broken" makes one that fails with a JSON-RPC error. A call of
// a client without the extension is refused with -32021, as the extension
// has a server that cannot run the call without a task do.
type taskServer2026 struct {
	mu        sync.Mutex
	n         int
	tasks     map[string]*serverTask
	calls     int // tools/call received
	withExt   int // of them, declaring the extension
	updates   []string
	cancelled []string
}

type serverTask struct {
	stage  int // 0 working, 1 asking, 2 answered, 3 cancelled
	who    string
	broken bool
}

func (ts *taskServer2026) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "tasks", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{config.Protocol2026}})
	for _, name := range []string{"job", "broken"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("reached the tool's handler: the middleware makes tasks")
		})
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok {
				return next(ctx, method, req)
			}
			caps := req.(interface {
				ClientCapabilities() *mcp.ClientCapabilities
			}).ClientCapabilities()
			ts.mu.Lock()
			defer ts.mu.Unlock()
			ts.calls++
			if caps == nil || caps.Extensions[TasksExtension] == nil {
				return nil, &jsonrpc.Error{Code: codeMissingCapability, Message: "Missing required client capability", Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`)}
			}
			ts.withExt++
			ts.n++
			id := fmt.Sprintf("task-%d", ts.n)
			if ts.tasks == nil {
				ts.tasks = map[string]*serverTask{}
			}
			ts.tasks[id] = &serverTask{broken: call.Params.Name == "broken"}
			return &rawTaskResult{raw: ts.taskJSON(id, "task")}, nil
		}
	})
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(mcp.AddReceivingCustomMethod(s, "tasks/get", func(_ context.Context, _ *mcp.ServerSession, p *taskIDArgs) (mcp.Result, error) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		t := ts.tasks[p.TaskID]
		if t == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
		}
		raw := ts.taskJSON(p.TaskID, "complete")
		if t.stage == 0 {
			t.stage = 1 // working once, then it asks
		}
		return &rawTaskResult{raw: raw}, nil
	}))
	must(mcp.AddReceivingCustomMethod(s, "tasks/update", func(_ context.Context, _ *mcp.ServerSession, p *taskIDArgs) (mcp.Result, error) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		t := ts.tasks[p.TaskID]
		if t == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Task not found"}
		}
		var r struct {
			Action  string
			Content struct{ Who string }
		}
		if raw, ok := p.InputResponses["name"]; ok && t.stage == 1 && json.Unmarshal(raw, &r) == nil {
			ts.updates = append(ts.updates, p.TaskID+":"+r.Content.Who)
			t.who, t.stage = r.Content.Who, 2
		}
		return &rawTaskResult{raw: json.RawMessage(`{"resultType":"complete"}`)}, nil
	}))
	must(mcp.AddReceivingCustomMethod(s, "tasks/cancel", func(_ context.Context, _ *mcp.ServerSession, p *taskIDArgs) (mcp.Result, error) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		t := ts.tasks[p.TaskID]
		if t == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Task not found"}
		}
		ts.cancelled = append(ts.cancelled, p.TaskID)
		t.stage = 3
		return &rawTaskResult{raw: json.RawMessage(`{"resultType":"complete"}`)}, nil
	}))
	return s
}

// taskJSON is task id as the server reports it now. ts.mu is held.
func (ts *taskServer2026) taskJSON(id, resultType string) json.RawMessage {
	t := ts.tasks[id]
	m := map[string]any{"resultType": resultType, "taskId": id, "createdAt": "2026-12-05T12:00:00Z", "lastUpdatedAt": "2026-12-05T12:00:01Z", "ttlMs": 60000, "pollIntervalMs": 1}
	switch {
	case t.stage == 3:
		m["status"] = "cancelled"
	case t.stage == 0:
		m["status"] = "working"
	case t.broken:
		m["status"], m["error"] = "failed", map[string]any{"code": -32603, "message": "API rate limit exceeded"}
	case t.stage == 1:
		m["status"] = "input_required"
		m["inputRequests"] = map[string]any{"name": map[string]any{"method": "elicitation/create", "params": map[string]any{"message": "Your name?", "requestedSchema": map[string]any{"type": "object"}}}}
	default:
		m["status"] = "completed"
		m["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "hello " + t.who}}, "isError": false}
	}
	b, _ := json.Marshal(m)
	return b
}

func (ts *taskServer2026) seen() (calls, withExt int, updates, cancelled []string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.calls, ts.withExt, append([]string(nil), ts.updates...), append([]string(nil), ts.cancelled...)
}

func startTaskServer2026(t *testing.T) (*Server, *taskServer2026) {
	t.Helper()
	ts := &taskServer2026{}
	s, _ := startEra(t, ts.server(), "")
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
	calls, withExt, updates, _ := ts.seen()
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
	waitFor(t, "the task cancelled", func() bool {
		_, _, _, cancelled := ts.seen()
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
	res, err := s.CallTool(ctx, CallParams{Request: r, Params: &mcp.CallToolParams{Name: "job"}, Task: json.RawMessage(`{"ttl":60000}`)})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := CreatedTask(res)
	if !ok || task.ID != "task-1" || task.Status != "working" || task.TTL.Milliseconds() != 60000 || strings.Contains(string(res), "resultType") {
		t.Fatalf("result %s, want a 2025 CreateTaskResult", res)
	}
	get, err := s.TaskRequest(ctx, TaskParams{Request: r, Method: "tasks/get", TaskID: "task-1"})
	var g map[string]any
	if err != nil || json.Unmarshal(get, &g) != nil || g["status"] != "working" || g["ttl"] != float64(60000) || g["pollInterval"] != float64(1) || g["resultType"] != nil || g["result"] != nil {
		t.Fatalf("tasks/get = %s (%v), want a 2025 task", get, err)
	}
	out, err := s.TaskRequest(ctx, TaskParams{Request: r, Method: "tasks/result", TaskID: "task-1"})
	if err != nil || !strings.Contains(string(out), "hello ada") || strings.Contains(string(out), "taskId") {
		t.Fatalf("tasks/result = %s (%v), want the tool's result", out, err)
	}
	if n := len(r.Caller.(*taskCaller).elicits); n != 1 {
		t.Errorf("the client was asked %d times, want once", n)
	}

	res, _ = s.CallTool(ctx, CallParams{Request: r, Params: &mcp.CallToolParams{Name: "job"}, Task: json.RawMessage(`{}`)})
	task, _ = CreatedTask(res)
	cancel, err := s.TaskRequest(ctx, TaskParams{Request: r, Method: "tasks/cancel", TaskID: task.ID})
	if err != nil || !strings.Contains(string(cancel), `"status":"cancelled"`) {
		t.Fatalf("tasks/cancel = %s (%v), want the task, cancelled", cancel, err)
	}
	if _, _, _, c := ts.seen(); strings.Join(c, ",") != task.ID {
		t.Errorf("server cancelled %v, want [%s]", c, task.ID)
	}
	_, err = s.TaskRequest(ctx, TaskParams{Request: r, Method: "tasks/list"})
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("tasks/list: %v, want method not found (the extension lists no tasks)", err)
	}
}

// waitFor polls cond until it holds, with a generous deadline: what it
// waits for happens in the background.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
