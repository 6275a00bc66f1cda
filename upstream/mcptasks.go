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

// callTool sends a tool call on c: plain, task-augmented (p.MCPTask) or run
// as a task (p.RunTask). token is the call's progress token.
func (c *conn) callTool(ctx context.Context, params *mcp.CallToolParams, p *CallParams, token string) (json.RawMessage, error) {
	switch {
	case c.stateless() && !p.RunTask && (p.MCPTask == nil || p.ExtensionTool):
		return c.callTool2026(ctx, params, p, token) // tasks of the extension
	case p.MCPTask != nil:
		res, err := c.rawCall(ctx, "tools/call", &taskCall{params, p.MCPTask})
		if err == nil {
			if t, ok := CreatedTask(res); ok {
				c.own(t, token)
			}
		}
		return res, err
	case p.RunTask:
		return c.runTask(ctx, params, token)
	}
	return c.rawCall(ctx, "tools/call", params)
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
func (c *conn) runTask(ctx context.Context, params *mcp.CallToolParams, token string) (json.RawMessage, error) {
	task := json.RawMessage(`{}`)
	if deadline, ok := ctx.Deadline(); ok {
		task = fmt.Appendf(nil, `{"ttl":%d}`, (time.Until(deadline) + taskRetention).Milliseconds())
	}
	res, err := c.createTask(ctx, &taskCall{params, task})
	if err != nil {
		return nil, err
	}
	t, ok := CreatedTask(res)
	if !ok {
		return res, nil // the server answered at once
	}
	c.mu.Lock()
	if r := c.requests[token]; r != nil {
		r.task, r.runs = t.ID, true
	}
	c.mu.Unlock()
	res, err = c.rawCall(ctx, "tasks/result", &taskIDParams{t.ID})
	if ctx.Err() != nil {
		go c.cancelTask(context.WithoutCancel(ctx), t.ID)
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
func (c *conn) createTask(ctx context.Context, call *taskCall) (json.RawMessage, error) {
	type answer struct {
		res json.RawMessage
		err error
	}
	// Buffered: the request may outlive the call.
	done := make(chan answer, 1)
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		res, err := c.rawCall(rctx, "tools/call", call)
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
			c.cancelTask(context.WithoutCancel(ctx), t.ID)
		}
	}()
	return nil, ctx.Err()
}

// cancelTask asks the server to cancel a task mcpmux ran itself, whose
// call has ended; best effort.
func (c *conn) cancelTask(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, cancelNotifyTimeout)
	defer cancel()
	if _, err := c.rawCall(ctx, "tasks/cancel", &taskIDParams{id}); err != nil {
		c.srv.log.Debug("cancelling a task whose call ended", "task", id, "error", err)
		return
	}
	c.srv.log.Info("cancelled the task of a call that ended before it", "task", id)
}

// own remembers t as the task of the request with token, created on c.
func (c *conn) own(t TaskInfo, token string) {
	// Status notifications held for the task go out before any later one.
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	now := time.Now()
	owned := &ownedTask{token: token, created: now}
	if t.TTL > 0 {
		owned.expires = now.Add(t.TTL)
	}
	c.mu.Lock()
	r := c.requests[token]
	if r == nil || r.caller == nil {
		c.mu.Unlock()
		return // no client to route to
	}
	owned.caller = r.caller
	r.keep = r.progress != nil
	if c.tasks == nil {
		c.tasks = map[string]*ownedTask{}
	}
	c.sweepTasksLocked(now)
	c.tasks[t.ID] = owned
	var held []json.RawMessage
	kept := c.pending[:0]
	for _, p := range c.pending {
		if p.task == t.ID {
			held = append(held, p.params)
		} else {
			kept = append(kept, p)
		}
	}
	c.pending = kept
	c.mu.Unlock()
	for _, params := range held {
		c.deliverStatus(t.ID, owned.caller, params)
	}
}

// sweepTasksLocked forgets the tasks whose ttl is over, and the oldest
// beyond maxOwnedTasks. c.mu must be held.
func (c *conn) sweepTasksLocked(now time.Time) {
	var oldest string
	for id, t := range c.tasks {
		if !t.expires.IsZero() && now.After(t.expires) {
			c.forgetTaskLocked(id)
			continue
		}
		if oldest == "" || t.created.Before(c.tasks[oldest].created) {
			oldest = id
		}
	}
	if len(c.tasks) >= maxOwnedTasks {
		c.forgetTaskLocked(oldest)
	}
}

// forgetTask forgets a task that is over: nothing more comes about it.
func (c *conn) forgetTask(id string) {
	c.mu.Lock()
	c.forgetTaskLocked(id)
	c.mu.Unlock()
}

func (c *conn) forgetTaskLocked(id string) {
	t := c.tasks[id]
	if t == nil {
		return
	}
	delete(c.tasks, id)
	if r := c.requests[t.token]; r != nil && r.keep {
		if r.done {
			delete(c.requests, t.token)
		} else {
			r.keep = false // the call's end forgets it
		}
	}
}

// holdsTasks reports whether tasks of c's clients may still be running:
// a per-client connection is not closed for being idle meanwhile.
func (c *conn) holdsTasks() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweepTasksLocked(time.Now())
	return len(c.tasks) > 0
}

// relatedTask is the task a message's _meta ties it to; "" if none.
func relatedTask(m mcp.Meta) string {
	v, _ := m[relatedTaskKey].(map[string]any)
	id, _ := v["taskId"].(string)
	return id
}

// callerFor returns the client a server's request with _meta m is for: the
// client of the task it is related to, if it names one of c's, else the
// one client with a request running (see caller).
func (c *conn) callerFor(ctx context.Context, m mcp.Meta) (Caller, error) {
	if id := relatedTask(m); id != "" {
		if cl := c.taskCaller(id); cl != nil {
			return cl, nil
		}
	}
	return c.caller(ctx)
}

// taskCaller returns the client of task id: the one waiting on it
// (tasks/result, or a call mcpmux runs as the task), else the one that
// created it; nil if c knows no such task.
func (c *conn) taskCaller(id string) Caller {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.requests {
		if r.task == id && !r.done && r.caller != nil {
			return r.caller
		}
	}
	if t := c.tasks[id]; t != nil {
		return t.caller
	}
	return nil
}

// taskStatusData is in the data of a notifications/tasks/status.
var taskStatusData = []byte(`"method":"` + taskStatusMethod + `"`)

// taskStatusMessage handles a notifications/tasks/status message as read
// from the server (data is the whole JSON-RPC message).
func (c *conn) taskStatusMessage(data []byte) {
	msg, err := jsonrpc.DecodeMessage(data)
	if req, ok := msg.(*jsonrpc.Request); err == nil && ok && req.Method == taskStatusMethod {
		c.taskStatus(req.Params)
	}
}

// taskStatus forwards a server's notifications/tasks/status to the client
// that owns the task. One about a task mcpmux runs itself goes nowhere:
// its client made a plain call. One about a task not known yet is held a
// moment for it (see pendingStatusWait).
func (c *conn) taskStatus(params json.RawMessage) {
	var st struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &st) != nil || st.TaskID == "" {
		return
	}
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	now := time.Now()
	c.mu.Lock()
	t := c.tasks[st.TaskID]
	if t == nil {
		kept := c.pending[:0]
		for _, p := range c.pending {
			if now.Sub(p.at) < pendingStatusWait {
				kept = append(kept, p)
			}
		}
		c.pending = kept
		if !c.runsTaskLocked(st.TaskID) && len(c.pending) < maxPendingStatus {
			c.pending = append(c.pending, pendingStatus{task: st.TaskID, params: params, at: now})
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.deliverStatus(st.TaskID, t.caller, params)
}

// runsTaskLocked reports whether mcpmux runs task id itself on c.
func (c *conn) runsTaskLocked(id string) bool {
	for _, r := range c.requests {
		if r.task == id && r.runs && !r.done {
			return true
		}
	}
	return false
}

// deliverStatus sends a task's status notification to its client, and
// forgets a task that is over.
func (c *conn) deliverStatus(id string, cl Caller, params json.RawMessage) {
	cl.TaskStatus(context.Background(), params)
	var st struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(params, &st) == nil && terminalStatus(st.Status) {
		// The status is taken as it is read, while the progress the server
		// sent before it may still wait for its handler (order.go): the
		// task's progress token is forgotten once that has been handled.
		c.gate.then(func() { c.forgetTask(id) })
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
		if c.stateless() && (p.Extension || p.ExtensionTool) {
			return c.taskRequest2026(ctx, p)
		}
		if p.Method == "tasks/result" {
			c.mu.Lock()
			if r := c.requests[token]; r != nil {
				r.task = p.TaskID
			}
			c.mu.Unlock()
		}
		var params any = &taskIDParams{p.TaskID}
		if p.Method == "tasks/list" {
			params = &struct {
				Cursor string `json:"cursor,omitempty"`
			}{p.Cursor}
		}
		res, err := c.rawCall(ctx, p.Method, params)
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
			time.AfterFunc(pendingStatusWait, func() { c.forgetTask(p.TaskID) })
		}
		return res, nil
	})
}
