// Extension is the server side of MCP 2026-07-28's tasks extension
// (io.modelcontextprotocol/tasks), for tests: the go-sdk has none.
//
// InstallExtension gives a go-sdk server of 2026-07-28 two tools that make
// tasks: "job" makes a task, for a client that declared the extension,
// that is working once, then asks for a name (input_required, an
// elicitation whose answer's content has "who" or "name"), and completes with
// "hello <who>"; "broken" makes one that fails with a JSON-RPC error. A
// call of a client without the extension is refused with -32021, as the
// extension has a server that cannot run a call without a task do.
// tasks/get, tasks/update and tasks/cancel are served as the extension
// says.
package tasktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TasksExtension names the extension in capabilities.
const TasksExtension = "io.modelcontextprotocol/tasks"

type taskArgs struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// Extension is the tasks of a server (see InstallExtension).
type Extension struct {
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

// InstallExtension adds the tools and methods of the tasks extension to s.
func InstallExtension(s *mcp.Server) *Extension {
	ts := &Extension{}
	for _, name := range []string{"job", "broken"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("reached the tool's handler: the middleware makes tasks")
		})
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || (call.Params.Name != "job" && call.Params.Name != "broken") {
				res, err := next(ctx, method, req)
				if dr, ok := res.(*mcp.DiscoverResult); ok && err == nil {
					// Declared in server/discover, which the go-sdk's
					// options cannot say.
					caps := *dr.Capabilities
					caps.Extensions = map[string]any{TasksExtension: map[string]any{}}
					dr.Capabilities = &caps
				}
				return res, err
			}
			caps := req.(interface {
				ClientCapabilities() *mcp.ClientCapabilities
			}).ClientCapabilities()
			ts.mu.Lock()
			defer ts.mu.Unlock()
			ts.calls++
			if caps == nil || caps.Extensions[TasksExtension] == nil {
				return nil, &jsonrpc.Error{Code: -32021, Message: "Missing required client capability", Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`)}
			}
			ts.withExt++
			ts.n++
			id := fmt.Sprintf("task-%d", ts.n)
			if ts.tasks == nil {
				ts.tasks = map[string]*serverTask{}
			}
			ts.tasks[id] = &serverTask{broken: call.Params.Name == "broken"}
			return &rawResult{raw: ts.taskJSON(id, "task")}, nil
		}
	})
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(mcp.AddReceivingCustomMethod(s, "tasks/get", func(_ context.Context, _ *mcp.ServerSession, p *taskArgs) (mcp.Result, error) {
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
		return &rawResult{raw: raw}, nil
	}))
	must(mcp.AddReceivingCustomMethod(s, "tasks/update", func(_ context.Context, _ *mcp.ServerSession, p *taskArgs) (mcp.Result, error) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		t := ts.tasks[p.TaskID]
		if t == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Task not found"}
		}
		var r struct {
			Action  string
			Content struct{ Who, Name string }
		}
		if raw, ok := p.InputResponses["name"]; ok && t.stage == 1 && json.Unmarshal(raw, &r) == nil {
			who := r.Content.Who
			if who == "" {
				who = r.Content.Name
			}
			ts.updates = append(ts.updates, p.TaskID+":"+who)
			t.who, t.stage = who, 2
		}
		return &rawResult{raw: json.RawMessage(`{"resultType":"complete"}`)}, nil
	}))
	must(mcp.AddReceivingCustomMethod(s, "tasks/cancel", func(_ context.Context, _ *mcp.ServerSession, p *taskArgs) (mcp.Result, error) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		t := ts.tasks[p.TaskID]
		if t == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Task not found"}
		}
		ts.cancelled = append(ts.cancelled, p.TaskID)
		t.stage = 3
		return &rawResult{raw: json.RawMessage(`{"resultType":"complete"}`)}, nil
	}))
	return ts
}

// taskJSON is task id as the server reports it now. ts.mu is held.
func (ts *Extension) taskJSON(id, resultType string) json.RawMessage {
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

// Seen returns what the server saw: tools/call requests, those of them
// declaring the extension, the answers of tasks/update (task:who) and the
// tasks cancelled.
func (ts *Extension) Seen() (calls, withExt int, updates, cancelled []string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.calls, ts.withExt, append([]string(nil), ts.updates...), append([]string(nil), ts.cancelled...)
}
