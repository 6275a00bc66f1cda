package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks of MCP 2026-07-28: the extension io.modelcontextprotocol/tasks
// (SEP-2663), which replaces the task augmentation of 2025-11-25
// (mcptasks.go).
//
// A 2026 server may answer any tools/call of a client that declared the
// extension in the request's capabilities with a task handle
// (resultType "task"); the client then polls tasks/get until the task is
// over, answers what the task asks (status input_required, its
// inputRequests) with tasks/update, and may cancel it with tasks/cancel.
// There is no tasks/result and no tasks/list.
//
// mcpmux declares the extension on every request of a 2026 connection: it
// can finish any task itself. A task handle then reaches the client of
// the call as that client can take it:
//
//   - a client that declared the extension itself (a 2026 client,
//     CallParams.TasksExtension) gets the handle, and its tasks/get,
//     tasks/update and tasks/cancel are forwarded (TaskRequest);
//   - a client of 2025-11-25 that augmented its call with a task
//     (CallParams.MCPTask) gets a 2025 CreateTaskResult, and its tasks/get,
//     tasks/result and tasks/cancel are answered in the 2025 way from the
//     server's tasks/get (tasks/result polls until the task is over,
//     asking the client what the task asks meanwhile);
//   - any other client gets the task's result, as if the server had run
//     the call at once: mcpmux polls, asking the client what the task
//     asks, and cancels the task should the call end first.

// TasksExtension is the name of the tasks extension in capabilities.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Bounds of polling a 2026 task: the server's pollIntervalMs is honoured
// within them (a server that says 0 must not make mcpmux poll in a loop,
// one that says an hour must not leave a call waiting past its work).
const (
	minTaskPoll     = 20 * time.Millisecond
	maxTaskPoll     = 5 * time.Second
	defaultTaskPoll = 500 * time.Millisecond
)

// task2026 is a Task of the extension as tasks/get (or a CreateTaskResult)
// has it.
type task2026 struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage,omitempty"`
	CreatedAt      string                     `json:"createdAt,omitempty"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt,omitempty"`
	TTLMs          *float64                   `json:"ttlMs"`
	PollIntervalMs *float64                   `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result         json.RawMessage            `json:"result,omitempty"`
	Error          *jsonrpc.Error             `json:"error,omitempty"`
}

// taskHandle reads a 2026 result as a task handle (resultType "task").
func taskHandle(res json.RawMessage) (*task2026, bool) {
	if !bytes.Contains(res, []byte(`"task"`)) {
		return nil, false
	}
	var t task2026
	if json.Unmarshal(res, &t) != nil || t.ResultType != "task" || t.TaskID == "" {
		return nil, false
	}
	return &t, true
}

// IsTaskHandle reports whether a tools/call result is a task handle of the
// tasks extension, which only a client that declared it may get.
func IsTaskHandle(res json.RawMessage) bool {
	_, ok := taskHandle(res)
	return ok
}

// poll is how long to wait before asking for t again.
func (t *task2026) poll() time.Duration {
	if t.PollIntervalMs == nil {
		return defaultTaskPoll
	}
	return min(max(time.Duration(*t.PollIntervalMs*float64(time.Millisecond)), minTaskPoll), maxTaskPoll)
}

// as2025 is t as a Task of 2025-11-25 (ttl and pollInterval, no result,
// error or input requests: those come with tasks/result there).
func (t *task2026) as2025() map[string]any {
	m := map[string]any{"taskId": t.TaskID, "status": t.Status, "ttl": t.TTLMs}
	if t.StatusMessage != "" {
		m["statusMessage"] = t.StatusMessage
	}
	if t.CreatedAt != "" {
		m["createdAt"] = t.CreatedAt
	}
	if t.LastUpdatedAt != "" {
		m["lastUpdatedAt"] = t.LastUpdatedAt
	}
	if t.PollIntervalMs != nil {
		m["pollInterval"] = *t.PollIntervalMs
	}
	return m
}

// info is what mcpmux remembers of t as a client's task (own).
func (t *task2026) info() TaskInfo {
	info := TaskInfo{ID: t.TaskID, Status: t.Status}
	if t.TTLMs != nil && *t.TTLMs > 0 {
		info.TTL = time.Duration(*t.TTLMs * float64(time.Millisecond))
	}
	return info
}

// callTool2026 sends a tool call on a 2026 connection, and gives a task
// handle the server answers with to the caller as it can take it (see
// above).
func (ct *callTasks) callTool2026(ctx context.Context, params *mcp.CallToolParams, p *CallParams, token string) (json.RawMessage, error) {
	if bindings := ct.params(params.Name); len(bindings) > 0 {
		args, _ := params.Arguments.(json.RawMessage)
		if args == nil {
			args, _ = json.Marshal(params.Arguments)
		}
		ctx = withParamHeaders(ctx, paramHeaders(bindings, args))
	}
	res, err := ct.call(ctx, "tools/call", params)
	if err != nil {
		return nil, err
	}
	t, ok := taskHandle(res)
	switch {
	case !ok || p.TasksExtension:
		return res, nil
	case p.MCPTask != nil:
		ct.own(t.info(), token)
		return json.Marshal(map[string]any{"task": t.as2025()})
	}
	return ct.finishTask(ctx, t)
}

// taskGet asks the server for task id.
func (ct *callTasks) taskGet(ctx context.Context, id string) (*task2026, error) {
	res, err := ct.call(ctx, "tasks/get", &taskIDParams{id})
	if err != nil {
		return nil, err
	}
	var t task2026
	if err := json.Unmarshal(res, &t); err != nil || t.Status == "" {
		return nil, fmt.Errorf("reading the server's tasks/get of %q: %s", id, bytes.TrimSpace(res))
	}
	if t.TaskID == "" {
		t.TaskID = id
	}
	return &t, nil
}

// taskUpdate sends the answers to a task's input requests.
func (ct *callTasks) taskUpdate(ctx context.Context, id string, answers map[string]json.RawMessage) error {
	_, err := ct.call(ctx, "tasks/update", &struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}{id, answers})
	return err
}

// finishTask polls task t until it is over, and returns its result as the
// call's: the result of a completed task, the JSON-RPC error of a failed
// one. What the task asks meanwhile is asked of the client of the call
// (each request once: a poll before the server has read the answers shows
// the same requests again). Should ctx end first, the task is cancelled.
func (ct *callTasks) finishTask(ctx context.Context, t *task2026) (json.RawMessage, error) {
	id := t.TaskID
	answered := map[string]bool{}
	for {
		switch t.Status {
		case "completed":
			if len(t.Result) == 0 {
				return nil, fmt.Errorf("the server's task %q completed without a result", id)
			}
			return withoutEnvelope(t.Result), nil
		case "failed":
			if t.Error == nil {
				return nil, fmt.Errorf("the server's task %q failed without saying why: %s", id, t.StatusMessage)
			}
			return nil, t.Error
		case "cancelled":
			return nil, fmt.Errorf("the server cancelled the task running the call (%q): %s", id, t.StatusMessage)
		case "input_required":
			fresh := map[string]json.RawMessage{}
			for k, r := range t.InputRequests {
				if !answered[k] {
					fresh[k] = r
				}
			}
			if len(fresh) > 0 {
				answers, err := ct.fulfil(ctx, fresh)
				if err != nil {
					ct.cancelTaskOnEnd(ctx, id, err)
					return nil, err
				}
				if err := ct.taskUpdate(ctx, id, answers); err != nil {
					ct.cancelTaskOnEnd(ctx, id, err)
					return nil, err
				}
				for k := range fresh {
					answered[k] = true
				}
				break // the answers may already have moved it on
			}
			fallthrough
		default:
			if err := sleepCtx(ctx, t.poll()); err != nil {
				ct.cancelTaskOnEnd(ctx, id, err)
				return nil, err
			}
		}
		next, err := ct.taskGet(ctx, id)
		if err != nil {
			ct.cancelTaskOnEnd(ctx, id, err)
			return nil, err
		}
		t = next
	}
}

// cancelTaskOnEnd cancels a task mcpmux was finishing whose call ended
// (ctx is done) or failed on its way; in the background, best effort.
func (ct *callTasks) cancelTaskOnEnd(ctx context.Context, id string, _ error) {
	go ct.cancelTask(context.WithoutCancel(ctx), id)
}

// taskRequest2026 answers a client's request about a task of a 2026
// server: forwarded as it is for a client of the extension (tasks/get,
// tasks/update, tasks/cancel), in the 2025 way for a client of 2025-11-25
// (tasks/get, tasks/result, tasks/cancel; no tasks/list).
func (ct *callTasks) taskRequest2026(ctx context.Context, p TaskParams) (json.RawMessage, error) {
	if p.Extension {
		params := json.RawMessage(fmt.Appendf(nil, `{"taskId":%q}`, p.TaskID))
		if p.Method == "tasks/update" {
			params = fmt.Appendf(nil, `{"taskId":%q,"inputResponses":%s}`, p.TaskID, orEmpty(p.InputResponses))
		}
		return ct.call(ctx, p.Method, params)
	}
	switch p.Method {
	case "tasks/get":
		t, err := ct.taskGet(ctx, p.TaskID)
		if err != nil {
			return nil, err
		}
		if terminalStatus(t.Status) {
			ct.forgetTask(p.TaskID)
		}
		return json.Marshal(t.as2025())
	case "tasks/result":
		t, err := ct.taskGet(ctx, p.TaskID)
		if err != nil {
			return nil, err
		}
		res, err := ct.finishTask(ctx, t)
		ct.forgetTask(p.TaskID)
		return res, err
	case "tasks/cancel":
		if _, err := ct.call(ctx, "tasks/cancel", &taskIDParams{p.TaskID}); err != nil {
			return nil, err
		}
		// 2025-11-25 answers with the task as it is after the request.
		t, err := ct.taskGet(ctx, p.TaskID)
		if err != nil {
			return nil, err
		}
		return json.Marshal(t.as2025())
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%s: the server speaks MCP 2026-07-28, whose tasks extension has no such method", p.Method)}
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}
