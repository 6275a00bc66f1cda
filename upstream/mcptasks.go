package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (the task augmentation of MCP 2025-11-25).
//
// A client may augment a tools/call with a task: the server answers at
// once with a CreateTaskResult, runs the tool in the background, and the
// client polls tasks/get, fetches the result with tasks/result (which
// blocks until the task is over) or cancels it with tasks/cancel. The
// go-sdk has none of this, so mcpmux speaks it with raw requests (raw.go).
// Here:
//
//   - a task-augmented call (CallParams.MCPTask) is sent with its task, and
//     the task it creates is remembered as its caller's on the connection:
//     a shared connection carries the tasks of many clients, and what the
//     server sends about a task (notifications/tasks/status, requests with
//     related-task _meta, progress with the creating call's token) must
//     reach the client that owns it;
//   - a tool is run as a task for a caller that called it plainly
//     (CallParams.RunTask): tools/call with a task, then tasks/result, and
//     tasks/cancel should the call end first;
//   - a client's tasks/get, tasks/result and tasks/cancel are forwarded on
//     its connection (Server.TaskRequest).
//
// Which task ids a client may address is the aggregator's business;
// upstream routes what servers send.

const (
	// relatedTaskKey is the _meta key that ties a message to a task.
	relatedTaskKey = "io.modelcontextprotocol/related-task"
	// taskStatusMethod is the notification of a task's new status.
	taskStatusMethod = "notifications/tasks/status"
)

// TaskInfo is what a CreateTaskResult says of the task it created.
type TaskInfo struct {
	ID     string
	Status string
	// TTL is how long the server keeps the task from its creation; zero
	// when it did not say (or keeps it for good).
	TTL time.Duration
}

// CreatedTask reads a tool call's result as a CreateTaskResult: the
// task it created, or false if the result is something else (the
// server ran the call at once, or answered with a tool result).
func CreatedTask(result json.RawMessage) (TaskInfo, bool) {
	if !bytes.Contains(result, []byte(`"task"`)) {
		return TaskInfo{}, false // not a CreateTaskResult: nothing to decode
	}
	var r struct {
		Task *struct {
			TaskID string   `json:"taskId"`
			Status string   `json:"status"`
			TTL    *float64 `json:"ttl"`
		} `json:"task"`
	}
	if json.Unmarshal(result, &r) != nil || r.Task == nil || r.Task.TaskID == "" {
		return TaskInfo{}, false
	}
	t := TaskInfo{ID: r.Task.TaskID, Status: r.Task.Status}
	if r.Task.TTL != nil && *r.Task.TTL > 0 {
		t.TTL = time.Duration(*r.Task.TTL * float64(time.Millisecond))
	}
	return t, true
}

// terminalStatus reports whether a task in status s is over.
func terminalStatus(s string) bool {
	return s == "completed" || s == "failed" || s == "cancelled"
}

// taskCall is the params of a task-augmented tools/call.
type taskCall struct {
	*mcp.CallToolParams
	Task json.RawMessage `json:"task"`
}

// taskIDParams are the params of tasks/get, tasks/result, tasks/cancel.
type taskIDParams struct {
	TaskID string `json:"taskId"`
}

// ownedTask is a task a server created on a connection for a caller.
type ownedTask struct {
	caller  Caller
	token   string    // progress token of the call that created it: progress for the task comes with it
	created time.Time // when mcpmux saw it created
	expires time.Time // when the server may forget it (its ttl); zero: it did not say
}

// maxOwnedTasks bounds the tasks a connection remembers, and
// maxPendingStatus the status notifications it holds for tasks not yet
// known; beyond them the oldest are forgotten.
const (
	maxOwnedTasks    = 10000
	maxPendingStatus = 100
)

// pendingStatusWait is how long a status notification waits for its task
// to become known: a server may send it before mcpmux has read the
// CreateTaskResult that creates the task (over HTTP it comes on another
// stream).
const pendingStatusWait = 5 * time.Second

// pendingStatus is a status notification held for a task not yet known.
type pendingStatus struct {
	task   string
	params json.RawMessage
	at     time.Time
}

// callTasks are the MCP tasks servers run for mcpmux's calls on one
// connection, of both eras: the task augmentation of 2025-11-25 (here)
// and the tasks extension of 2026-07-28 (tasks2026.go). The connection
// owns it and gives it what it uses (connTasks); it holds no connection.
type callTasks struct {
	// mu is the connection's lock: a task and the request that created or
	// waits on it change together (a task keeps its request's progress
	// token routed; a task is routed to the caller of the request waiting
	// on it), so the tasks below are guarded with the requests.
	mu *sync.Mutex
	// requests returns the connection's requests by progress token; mu
	// must be held.
	requests func() map[string]*inflight
	// call sends a raw request on the connection (raw.go).
	call func(ctx context.Context, method string, params any) (json.RawMessage, error)
	// stateless reports whether the connection speaks 2026-07-28: read at
	// each call, the era being known only once the session is open.
	stateless func() bool
	// caller is the client a server's request is for when it names no
	// task of the connection (conn.caller).
	caller func(ctx context.Context) (Caller, error)
	// fulfil asks the client of the call what a 2026 task asks (era.go).
	fulfil func(ctx context.Context, requests map[string]json.RawMessage) (map[string]json.RawMessage, error)
	// params returns the Mcp-Param-* bindings of a tool (paramheaders.go).
	params func(tool string) []paramBinding
	gate   *progressGate // the connection's: a task is forgotten after the progress read before its last status
	log    *slog.Logger

	statusMu sync.Mutex // orders the task status notifications sent to clients

	owned   map[string]*ownedTask // (mu) the clients' tasks on this connection, by id
	pending []pendingStatus       // (mu) status notifications of tasks not known yet
}

// connTasks makes the callTasks of c.
func connTasks(c *conn) *callTasks {
	return &callTasks{
		mu:        &c.mu,
		requests:  func() map[string]*inflight { return c.requests },
		call:      c.rawCall,
		stateless: c.stateless,
		caller:    c.caller,
		fulfil:    c.fulfil,
		params:    func(tool string) []paramBinding { return c.srv.Features().params[tool] },
		gate:      c.gate,
		log:       c.srv.log,
	}
}

// callTool sends a tool call on the connection: plain, task-augmented
// (p.MCPTask) or run as a task (p.RunTask). token is the call's progress
// token.
func (ct *callTasks) callTool(ctx context.Context, params *mcp.CallToolParams, p *CallParams, token string) (json.RawMessage, error) {
	switch {
	case ct.stateless() && !p.RunTask && (p.MCPTask == nil || p.ExtensionTool):
		return ct.callTool2026(ctx, params, p, token) // tasks of the extension
	case p.MCPTask != nil:
		res, err := ct.call(ctx, "tools/call", &taskCall{params, p.MCPTask})
		if err == nil {
			if t, ok := CreatedTask(res); ok {
				ct.own(t, token)
			}
		}
		return res, err
	case p.RunTask:
		return ct.runTask(ctx, params, token)
	}
	return ct.call(ctx, "tools/call", params)
}

// taskRetention is how much longer than the call may run a task mcpmux
// runs itself asks the server to keep it: its result must still be there
// when tasks/result returns.
const taskRetention = time.Minute

// runTask runs a tool that requires a task for a caller that called it
// plainly: the call is made with a task, and its result fetched with
// tasks/result, which the server answers once the task is over. The
// request stays in flight with its caller meanwhile, so that what the
// server asks about the task (an elicitation with related-task _meta)
// reaches the caller, and progress keeps the call's token. Should ctx end
// first, the task is cancelled: notifications/cancelled ends a request,
// not a task.
func (ct *callTasks) runTask(ctx context.Context, params *mcp.CallToolParams, token string) (json.RawMessage, error) {
	task := json.RawMessage(`{}`)
	if deadline, ok := ctx.Deadline(); ok {
		task = fmt.Appendf(nil, `{"ttl":%d}`, (time.Until(deadline) + taskRetention).Milliseconds())
	}
	res, err := ct.createTask(ctx, &taskCall{params, task})
	if err != nil {
		return nil, err
	}
	t, ok := CreatedTask(res)
	if !ok {
		return res, nil // the server answered at once
	}
	ct.mu.Lock()
	if r := ct.requests()[token]; r != nil {
		r.task, r.runs = t.ID, true
	}
	ct.mu.Unlock()
	res, err = ct.call(ctx, "tasks/result", &taskIDParams{t.ID})
	if ctx.Err() != nil {
		go ct.cancelTask(context.WithoutCancel(ctx), t.ID)
	}
	return res, err
}

// createTask sends the task-augmented tools/call of runTask. A task
// augmented request is not cancelled with notifications/cancelled but
// with tasks/cancel (MCP 2025-11-25, cancellation), which needs the task's
// id: so when ctx ends before the CreateTaskResult has come, the request
// is left running, its answer awaited for cancelNotifyTimeout more, and
// the task it created cancelled. Else a task created just as its call
// ended would run on, with nobody to fetch its result.
func (ct *callTasks) createTask(ctx context.Context, call *taskCall) (json.RawMessage, error) {
	type answer struct {
		res json.RawMessage
		err error
	}
	// Buffered: the request may outlive the call.
	done := make(chan answer, 1)
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		res, err := ct.call(rctx, "tools/call", call)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		stop()
		return a.res, a.err
	case <-ctx.Done():
	}
	go func() {
		// Past this wait the request is given up (notifications/cancelled:
		// the only way left to stop what it started).
		late := time.AfterFunc(cancelNotifyTimeout, stop)
		a := <-done
		late.Stop()
		stop()
		if t, ok := CreatedTask(a.res); ok && a.err == nil {
			ct.cancelTask(context.WithoutCancel(ctx), t.ID)
		}
	}()
	return nil, ctx.Err()
}

// cancelTask asks the server to cancel a task mcpmux ran itself, whose
// call has ended; best effort.
func (ct *callTasks) cancelTask(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, cancelNotifyTimeout)
	defer cancel()
	if _, err := ct.call(ctx, "tasks/cancel", &taskIDParams{id}); err != nil {
		ct.log.Debug("cancelling a task whose call ended", "task", id, "error", err)
		return
	}
	ct.log.Info("cancelled the task of a call that ended before it", "task", id)
}

// own remembers t as the task of the request with token, created on the
// connection.
func (ct *callTasks) own(t TaskInfo, token string) {
	// Status notifications held for the task go out before any later one.
	ct.statusMu.Lock()
	defer ct.statusMu.Unlock()
	now := time.Now()
	owned := &ownedTask{token: token, created: now}
	if t.TTL > 0 {
		owned.expires = now.Add(t.TTL)
	}
	ct.mu.Lock()
	r := ct.requests()[token]
	if r == nil || r.caller == nil {
		ct.mu.Unlock()
		return // no client to route to
	}
	owned.caller = r.caller
	r.keep = r.progress != nil
	if ct.owned == nil {
		ct.owned = map[string]*ownedTask{}
	}
	ct.sweepTasksLocked(now)
	ct.owned[t.ID] = owned
	var held []json.RawMessage
	kept := ct.pending[:0]
	for _, p := range ct.pending {
		if p.task == t.ID {
			held = append(held, p.params)
		} else {
			kept = append(kept, p)
		}
	}
	ct.pending = kept
	ct.mu.Unlock()
	for _, params := range held {
		ct.deliverStatus(t.ID, owned.caller, params)
	}
}

// sweepTasksLocked forgets the tasks whose ttl is over, and the oldest
// beyond maxOwnedTasks. ct.mu must be held.
func (ct *callTasks) sweepTasksLocked(now time.Time) {
	var oldest string
	for id, t := range ct.owned {
		if !t.expires.IsZero() && now.After(t.expires) {
			ct.forgetTaskLocked(id)
			continue
		}
		if oldest == "" || t.created.Before(ct.owned[oldest].created) {
			oldest = id
		}
	}
	if len(ct.owned) >= maxOwnedTasks {
		ct.forgetTaskLocked(oldest)
	}
}

// forgetTask forgets a task that is over: nothing more comes about it.
func (ct *callTasks) forgetTask(id string) {
	ct.mu.Lock()
	ct.forgetTaskLocked(id)
	ct.mu.Unlock()
}

func (ct *callTasks) forgetTaskLocked(id string) {
	t := ct.owned[id]
	if t == nil {
		return
	}
	delete(ct.owned, id)
	if r := ct.requests()[t.token]; r != nil && r.keep {
		if r.done {
			delete(ct.requests(), t.token)
		} else {
			r.keep = false // the call's end forgets it
		}
	}
}

// holdsTasks reports whether tasks of c's clients may still be running:
// a per-client connection is not closed for being idle meanwhile.
func (c *conn) holdsTasks() bool { return c.tasks.holds() }

func (ct *callTasks) holds() bool {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.sweepTasksLocked(time.Now())
	return len(ct.owned) > 0
}

// relatedTask is the task a message's _meta ties it to; "" if none.
func relatedTask(m mcp.Meta) string {
	v, _ := m[relatedTaskKey].(map[string]any)
	id, _ := v["taskId"].(string)
	return id
}

// callerFor returns the client a server's request with _meta m is for: the
// client of the task it is related to, if it names one of the
// connection's, else the one client with a request running (conn.caller).
func (ct *callTasks) callerFor(ctx context.Context, m mcp.Meta) (Caller, error) {
	if id := relatedTask(m); id != "" {
		if cl := ct.taskCaller(id); cl != nil {
			return cl, nil
		}
	}
	return ct.caller(ctx)
}

// taskCaller returns the client of task id: the one waiting on it
// (tasks/result, or a call mcpmux runs as the task), else the one that
// created it; nil if the connection knows no such task.
func (ct *callTasks) taskCaller(id string) Caller {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	for _, r := range ct.requests() {
		if r.task == id && !r.done && r.caller != nil {
			return r.caller
		}
	}
	if t := ct.owned[id]; t != nil {
		return t.caller
	}
	return nil
}

// taskStatusData is in the data of a notifications/tasks/status.
var taskStatusData = []byte(`"method":"` + taskStatusMethod + `"`)

// taskStatusMessage handles a notifications/tasks/status message as read
// from the server (data is the whole JSON-RPC message).
func (ct *callTasks) taskStatusMessage(data []byte) {
	msg, err := jsonrpc.DecodeMessage(data)
	if req, ok := msg.(*jsonrpc.Request); err == nil && ok && req.Method == taskStatusMethod {
		ct.taskStatus(req.Params)
	}
}

// taskStatus forwards a server's notifications/tasks/status to the client
// that owns the task. One about a task mcpmux runs itself goes nowhere:
// its client made a plain call. One about a task not known yet is held a
// moment for it (see pendingStatusWait).
func (ct *callTasks) taskStatus(params json.RawMessage) {
	var st struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &st) != nil || st.TaskID == "" {
		return
	}
	ct.statusMu.Lock()
	defer ct.statusMu.Unlock()
	now := time.Now()
	ct.mu.Lock()
	t := ct.owned[st.TaskID]
	if t == nil {
		kept := ct.pending[:0]
		for _, p := range ct.pending {
			if now.Sub(p.at) < pendingStatusWait {
				kept = append(kept, p)
			}
		}
		ct.pending = kept
		if !ct.runsTaskLocked(st.TaskID) && len(ct.pending) < maxPendingStatus {
			ct.pending = append(ct.pending, pendingStatus{task: st.TaskID, params: params, at: now})
		}
		ct.mu.Unlock()
		return
	}
	ct.mu.Unlock()
	ct.deliverStatus(st.TaskID, t.caller, params)
}

// runsTaskLocked reports whether mcpmux runs task id itself on the
// connection.
func (ct *callTasks) runsTaskLocked(id string) bool {
	for _, r := range ct.requests() {
		if r.task == id && r.runs && !r.done {
			return true
		}
	}
	return false
}

// deliverStatus sends a task's status notification to its client, and
// forgets a task that is over.
func (ct *callTasks) deliverStatus(id string, cl Caller, params json.RawMessage) {
	cl.TaskStatus(context.Background(), params)
	var st struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(params, &st) == nil && terminalStatus(st.Status) {
		// The status is taken as it is read, while the progress the server
		// sent before it may still wait for its handler (order.go): the
		// task's progress token is forgotten once that has been handled.
		ct.gate.then(func() { ct.forgetTask(id) })
	}
}

// TaskParams is a client's request about one of its tasks, or tasks/list.
type TaskParams struct {
	Request
	// Method is tasks/get, tasks/result, tasks/cancel or tasks/list.
	Method string
	TaskID string // of all but tasks/list
	Cursor string // of tasks/list
	// StreamClosed is as for CallParams (tasks/result may run long).
	StreamClosed func(retry time.Duration) (unreachable bool)
	// Extension: the client declared the tasks extension of 2026-07-28, and
	// its request goes to a 2026 server as it is (tasks2026.go); else a
	// 2026 server's task is spoken of in the 2025 way.
	Extension bool
	// ExtensionTool: the task is a 2026 server's, of the extension, made
	// a 2025 task for a client of 2025-11-25 (tasks2026.go).
	ExtensionTool bool
	// InputResponses are the answers of a tasks/update.
	InputResponses json.RawMessage
}

// TaskRequest forwards a client's request about a task to the server, on
// the caller's connection (the shared one, or the caller's own, where the
// task lives), and returns the server's result as it sent it. While
// tasks/result waits, what the server asks about the task goes to the
// caller.
func (s *Server) TaskRequest(ctx context.Context, p TaskParams) (json.RawMessage, error) {
	return run(ctx, s, p.Request, hooks{streamClosed: p.StreamClosed}, func(ctx context.Context, c *conn, token string) (json.RawMessage, error) {
		return c.tasks.forward(ctx, p, token)
	})
}

// forward sends a client's request about a task (TaskRequest) as the
// request with token.
func (ct *callTasks) forward(ctx context.Context, p TaskParams, token string) (json.RawMessage, error) {
	if ct.stateless() && (p.Extension || p.ExtensionTool) {
		return ct.taskRequest2026(ctx, p)
	}
	if p.Method == "tasks/result" {
		ct.mu.Lock()
		if r := ct.requests()[token]; r != nil {
			r.task = p.TaskID
		}
		ct.mu.Unlock()
	}
	var params any = &taskIDParams{p.TaskID}
	if p.Method == "tasks/list" {
		params = &struct {
			Cursor string `json:"cursor,omitempty"`
		}{p.Cursor}
	}
	res, err := ct.call(ctx, p.Method, params)
	if err != nil || p.Method == "tasks/list" {
		return res, err
	}
	over := p.Method == "tasks/result" // it returns once the task is over
	if !over {
		var st struct {
			Status string `json:"status"`
		}
		over = json.Unmarshal(res, &st) == nil && terminalStatus(st.Status)
	}
	if over {
		// Its last status notification may still be on its way (over
		// HTTP, on another stream).
		time.AfterFunc(pendingStatusWait, func() { ct.forgetTask(p.TaskID) })
	}
	return res, nil
}
