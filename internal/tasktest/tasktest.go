// Package tasktest makes a go-sdk MCP server run tools as tasks (the task
// augmentation of MCP 2025-11-25), for tests: the go-sdk has no tasks.
//
// Install adds to an mcp.Server the tasks/get, tasks/result, tasks/cancel
// and tasks/list methods, and tools whose definitions list
// execution.taskSupport. A task-augmented tools/call of such a tool
// answers at once with a CreateTaskResult and runs the tool in the
// background; a plain call of a task-required tool is refused with
// -32601, as the spec says. What a running task asks the client
// (Call.Elicit) is delivered through the client's tasks/result, tied to
// the task by related-task _meta, with the task input_required meanwhile,
// as the TypeScript SDK's servers do.
//
// The go-sdk would drop a tools/call's params.task: the server's
// transport must be wrapped (Wrap for stdio and in-memory transports,
// Handler for Streamable HTTP) to keep it. Wrap also sends
// notifications/tasks/status on each change of a task created through
// its connection, which the go-sdk cannot send either.
package tasktest

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// liftKey is the _meta key the wrapped transports put params.task under.
const liftKey = "tasktest/task"

const relatedTaskKey = "io.modelcontextprotocol/related-task"

// Tasks are the task tools and the tasks of one server.
type Tasks struct {
	mu    sync.Mutex
	tools map[string]*taskTool
	tasks map[string]*task
	order []string // task ids, oldest first
	next  int
}

type taskTool struct {
	support string
	run     RunFunc
}

// RunFunc runs a call of a tool, plain or as a task.
type RunFunc func(ctx context.Context, c *Call) (*mcp.CallToolResult, error)

// Call is one call of a task tool.
type Call struct {
	Args json.RawMessage
	// TaskID is the task the call runs as; "" for a plain call.
	TaskID string
	// ProgressToken is the token of the tools/call, if it had one: it
	// stays valid for the task's life.
	ProgressToken any
	session       *mcp.ServerSession
	t             *task
}

// Elicit asks the client. A task asks through the client's tasks/result,
// and is input_required until the answer comes; a plain call asks
// directly.
func (c *Call) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if c.t == nil {
		return c.session.Elicit(ctx, p)
	}
	return c.t.ask(ctx, p)
}

// Progress sends the caller a progress notification with the call's
// token, if it gave one.
func (c *Call) Progress(progress, total float64, message string) {
	if c.ProgressToken == nil {
		return
	}
	_ = c.session.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{ProgressToken: c.ProgressToken, Progress: progress, Total: total, Message: message})
}

var (
	installedMu sync.Mutex
	installed   = map[*mcp.Server]*Tasks{}
)

// Install makes s a server of tasks and returns its Tasks; installing
// twice returns the same.
func Install(s *mcp.Server) *Tasks {
	installedMu.Lock()
	defer installedMu.Unlock()
	if ts := installed[s]; ts != nil {
		return ts
	}
	ts := &Tasks{tools: map[string]*taskTool{}, tasks: map[string]*task{}}
	installed[s] = ts
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel", "tasks/list"} {
		if err := mcp.AddReceivingCustomMethod(s, method, func(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
			return ts.method(ctx, ss, method, p)
		}); err != nil {
			panic(err)
		}
	}
	s.AddReceivingMiddleware(ts.middleware)
	return ts
}

// AddTool adds a tool with execution.taskSupport support ("optional",
// "required", or "" for none) that run runs.
func (ts *Tasks) AddTool(s *mcp.Server, t *mcp.Tool, support string, run RunFunc) {
	s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return run(ctx, &Call{Args: req.Params.Arguments, session: req.Session, ProgressToken: req.Params.GetProgressToken()})
	})
	ts.mu.Lock()
	ts.tools[t.Name] = &taskTool{support: support, run: run}
	ts.mu.Unlock()
}

// Task returns the status of task id, "" if there is no such task.
func (ts *Tasks) Task(id string) (status string) {
	ts.mu.Lock()
	t := ts.tasks[id]
	ts.mu.Unlock()
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status
}

// Await waits until task id is in status, and returns the status it has
// when ctx ends first ("" if there is no such task).
func (ts *Tasks) Await(ctx context.Context, id, status string) (string, error) {
	ts.mu.Lock()
	t := ts.tasks[id]
	ts.mu.Unlock()
	if t == nil {
		return "", fmt.Errorf("no task %q", id)
	}
	for {
		t.mu.Lock()
		now, changed := t.status, t.changed
		t.mu.Unlock()
		if now == status {
			return now, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return now, ctx.Err()
		}
	}
}

// IDs returns the ids of every task, oldest first.
func (ts *Tasks) IDs() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.order...)
}

// middleware lists the task tools with their execution, and runs their
// calls.
func (ts *Tasks) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				return ts.listed(lr)
			}
			return res, err
		case *mcp.CallToolRequest:
			ts.mu.Lock()
			tool := ts.tools[r.Params.Name]
			ts.mu.Unlock()
			if tool == nil {
				return next(ctx, method, req)
			}
			augment, asTask := r.Params.Meta[liftKey]
			switch {
			case asTask && tool.support != "":
				return ts.start(r, tool, augment)
			case !asTask && tool.support == "required":
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("Tool %s requires task augmentation (taskSupport: 'required')", r.Params.Name)}
			}
		}
		return next(ctx, method, req)
	}
}

// listed adds execution.taskSupport to the task tools of a tools/list
// result, which the go-sdk's Tool cannot hold.
func (ts *Tasks) listed(lr *mcp.ListToolsResult) (mcp.Result, error) {
	var tools []map[string]any
	for _, t := range lr.Tools {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		ts.mu.Lock()
		if tt := ts.tools[t.Name]; tt != nil && tt.support != "" {
			m["execution"] = map[string]any{"taskSupport": tt.support}
		}
		ts.mu.Unlock()
		tools = append(tools, m)
	}
	out := map[string]any{"tools": tools}
	if lr.NextCursor != "" {
		out["nextCursor"] = lr.NextCursor
	}
	b, err := json.Marshal(out)
	return &rawResult{raw: b}, err
}

// start creates a task for the call and runs it in the background.
func (ts *Tasks) start(r *mcp.CallToolRequest, tool *taskTool, augment any) (mcp.Result, error) {
	var ttl int64 = 60000
	if m, ok := augment.(map[string]any); ok {
		if v, ok := m["ttl"].(float64); ok && v > 0 {
			ttl = int64(v)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts.mu.Lock()
	ts.next++
	now := time.Now().UTC()
	t := &task{id: fmt.Sprintf("task-%d-%s", ts.next, crand.Text()[:8]), status: "working", created: now, updated: now, ttl: ttl, cancel: cancel, changed: make(chan struct{})}
	ts.tasks[t.id] = t
	ts.order = append(ts.order, t.id)
	ts.mu.Unlock()
	call := &Call{Args: r.Params.Arguments, TaskID: t.id, ProgressToken: r.Params.GetProgressToken(), session: r.Session, t: t}
	b, err := json.Marshal(map[string]any{"task": t.state()}) // as created: working
	go func() {
		res, err := tool.run(ctx, call)
		t.finish(res, err)
	}()
	return &rawResult{raw: b}, err
}

// taskParams are the params of the tasks/* methods.
type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

func (ts *Tasks) method(ctx context.Context, ss *mcp.ServerSession, method string, p *taskParams) (mcp.Result, error) {
	if method == "tasks/list" {
		ts.mu.Lock()
		var states []map[string]any
		for _, id := range ts.order {
			states = append(states, ts.tasks[id].state())
		}
		ts.mu.Unlock()
		b, err := json.Marshal(map[string]any{"tasks": states})
		return &rawResult{raw: b}, err
	}
	ts.mu.Lock()
	t := ts.tasks[p.TaskID]
	ts.mu.Unlock()
	if t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	}
	switch method {
	case "tasks/get":
		b, err := json.Marshal(t.state())
		return &rawResult{raw: b}, err
	case "tasks/cancel":
		if !t.cancelled() {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Cannot cancel task: already in terminal status '%s'", t.state()["status"])}
		}
		b, err := json.Marshal(t.state())
		return &rawResult{raw: b}, err
	}
	return t.awaitResult(ctx, ss)
}

// task is one task.
type task struct {
	id      string
	created time.Time
	ttl     int64
	cancel  context.CancelFunc

	mu       sync.Mutex
	status   string
	message  string
	updated  time.Time
	result   json.RawMessage        // the tool's result, once over
	err      *jsonrpc.Error         // the call's JSON-RPC error, once over
	asks     []*ask                 // elicitations waiting for a tasks/result
	changed  chan struct{}          // closed and replaced on every change
	watchers []chan json.RawMessage // see watch
}

type ask struct {
	params *mcp.ElicitParams
	answer chan askAnswer
}

type askAnswer struct {
	res *mcp.ElicitResult
	err error
}

func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// state is the task as tasks/get answers it.
func (t *task) state() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stateLocked()
}

func (t *task) stateLocked() map[string]any {
	s := map[string]any{
		"taskId": t.id, "status": t.status, "createdAt": t.created.Format(time.RFC3339Nano),
		"lastUpdatedAt": t.updated.Format(time.RFC3339Nano), "ttl": t.ttl, "pollInterval": 100,
	}
	if t.message != "" {
		s["statusMessage"] = t.message
	}
	return s
}

// setLocked changes the task's status and tells everyone. t.mu must be held.
func (t *task) setLocked(status, message string) {
	t.status, t.message, t.updated = status, message, time.Now().UTC()
	close(t.changed)
	t.changed = make(chan struct{})
	b, _ := json.Marshal(t.stateLocked())
	for _, w := range t.watchers {
		select {
		case w <- b:
		default: // a watcher that cannot keep up misses some
		}
		if terminal(status) {
			close(w)
		}
	}
	if terminal(status) {
		t.watchers = nil
	}
}

// watch has send called with the task's state on each change, in order.
func (t *task) watch(send func(json.RawMessage)) {
	w := make(chan json.RawMessage, 64)
	go func() {
		for state := range w {
			send(state)
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	if terminal(t.status) {
		close(w)
		return
	}
	t.watchers = append(t.watchers, w)
}

// finish records the tool's outcome, unless the task was cancelled.
func (t *task) finish(res *mcp.CallToolResult, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if terminal(t.status) {
		return
	}
	if err != nil {
		t.err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		t.setLocked("failed", err.Error())
		return
	}
	t.result, _ = json.Marshal(res)
	if res.IsError {
		t.setLocked("failed", "the tool failed")
		return
	}
	t.setLocked("completed", "")
}

// cancelled cancels the task; false if it was over.
func (t *task) cancelled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if terminal(t.status) {
		return false
	}
	t.setLocked("cancelled", "The task was cancelled by request.")
	t.cancel()
	return true
}

// ask queues an elicitation for the next tasks/result and waits for its
// answer.
func (t *task) ask(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	a := &ask{params: p, answer: make(chan askAnswer, 1)}
	t.mu.Lock()
	t.asks = append(t.asks, a)
	t.setLocked("input_required", "Waiting for the client's answer")
	t.mu.Unlock()
	select {
	case ans := <-a.answer:
		t.mu.Lock()
		if !terminal(t.status) {
			t.setLocked("working", "")
		}
		t.mu.Unlock()
		return ans.res, ans.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// awaitResult answers tasks/result: it delivers what the task asks meanwhile,
// and returns once the task is over.
func (t *task) awaitResult(ctx context.Context, ss *mcp.ServerSession) (mcp.Result, error) {
	related := map[string]any{relatedTaskKey: map[string]any{"taskId": t.id}}
	for {
		t.mu.Lock()
		if terminal(t.status) {
			res, rpcErr, status := t.result, t.err, t.status
			t.mu.Unlock()
			switch {
			case rpcErr != nil:
				return nil, rpcErr
			case res == nil:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Task " + status}
			}
			var m map[string]any
			_ = json.Unmarshal(res, &m)
			m["_meta"] = related
			b, err := json.Marshal(m)
			return &rawResult{raw: b}, err
		}
		if len(t.asks) > 0 {
			a := t.asks[0]
			t.asks = t.asks[1:]
			t.mu.Unlock()
			p := *a.params
			p.Meta = related
			res, err := ss.Elicit(ctx, &p)
			a.answer <- askAnswer{res, err}
			continue
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// rawResult is a result as JSON.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

// Wrap returns t with what s's tasks need of a connection: a tools/call's
// params.task kept (in _meta), and notifications/tasks/status sent for
// the tasks created through it. For a server without Install, it returns
// t as it is.
func Wrap(s *mcp.Server, t mcp.Transport) mcp.Transport {
	installedMu.Lock()
	ts := installed[s]
	installedMu.Unlock()
	if ts == nil {
		return t
	}
	return &transport{Transport: t, ts: ts}
}

type transport struct {
	mcp.Transport
	ts *Tasks
}

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Connection: c, ts: t.ts}, nil
}

type conn struct {
	mcp.Connection
	ts *Tasks
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.Method == "tools/call" {
		req.Params = lift(req.Params)
	}
	return msg, err
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && bytes.Contains(resp.Result, []byte(`"task"`)) {
		var r struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		if json.Unmarshal(resp.Result, &r) == nil && r.Task.TaskID != "" {
			c.ts.mu.Lock()
			t := c.ts.tasks[r.Task.TaskID]
			c.ts.mu.Unlock()
			if t != nil {
				t.watch(func(state json.RawMessage) {
					_ = c.Connection.Write(context.Background(), &jsonrpc.Request{Method: "notifications/tasks/status", Params: state})
				})
			}
		}
	}
	return c.Connection.Write(ctx, msg)
}

// lift moves a tools/call's params.task into _meta.
func lift(params json.RawMessage) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p["task"] == nil {
		return params
	}
	meta := map[string]json.RawMessage{}
	if p["_meta"] != nil {
		_ = json.Unmarshal(p["_meta"], &meta)
	}
	meta[liftKey] = p["task"]
	delete(p, "task")
	p["_meta"], _ = json.Marshal(meta)
	out, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return out
}

// Handler keeps the params.task of the tools/call requests POSTed to a
// Streamable HTTP handler (in _meta, for the server's Tasks).
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if msg, err := jsonrpc.DecodeMessage(body); err == nil {
				if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
					req.Params = lift(req.Params)
					if b, err := jsonrpc.EncodeMessage(req); err == nil {
						body = b
					}
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		h.ServeHTTP(w, r)
	})
}
