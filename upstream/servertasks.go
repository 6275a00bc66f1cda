package upstream

//lint:file-ignore SA1019 sampling is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older (docs/protocol.md), where a server may ask for sampling as a task, which mcpmux runs by asking the client plainly.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks a server asks its client to run (MCP 2025-11-25).
//
// A client may declare that it runs sampling or elicitation requests as
// tasks (tasks.requests.sampling.createMessage,
// tasks.requests.elicitation.create). A server may then augment such a
// request with a task: the client answers at once with a CreateTaskResult,
// and the server polls tasks/get and fetches the answer with tasks/result
// (server-everything's trigger-*-async tools do). mcpmux runs these tasks
// itself: it answers the server's request with a task of its own, asks the
// client of the call plainly, as it forwards any sampling or elicitation,
// and answers the server's tasks/get, tasks/result, tasks/list and
// tasks/cancel from the outcome. A connection declares the capability as
// its client did (ClientFeatures), so that the server lists the tools it
// would list to the client; the client needs no tasks for them to work.
//
// The go-sdk's client has neither the capability nor these requests. Its
// initialize is given the capability on the way out (declareTasks), and
// the requests are taken off the connection before the SDK reads them —
// by tapConn, and over HTTP from the event streams (wireTransport)
// — and answered on the connection by mcpmux.

// declareTasks returns an initialize request's params with the tasks
// capability caps added.
func declareTasks(params json.RawMessage, caps json.RawMessage) json.RawMessage {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return params
	}
	c := map[string]json.RawMessage{}
	if raw := p["capabilities"]; raw != nil && json.Unmarshal(raw, &c) != nil {
		return params
	}
	c["tasks"] = caps
	var err error
	if p["capabilities"], err = json.Marshal(c); err != nil {
		return params
	}
	out, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return out
}

// declareTasksBodies declares the tasks capability in the initialize an
// HTTP connection POSTs.
type declareTasksBodies struct {
	base http.RoundTripper
	caps json.RawMessage
}

func (t *declareTasksBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil || req.Body == http.NoBody {
		return t.base.RoundTrip(req)
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	if bytes.Contains(b, []byte(`"initialize"`)) {
		if msg, err := jsonrpc.DecodeMessage(b); err == nil {
			if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "initialize" {
				r.Params = declareTasks(r.Params, t.caps)
				if out, err := jsonrpc.EncodeMessage(r); err == nil {
					b = out
				}
			}
		}
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.ContentLength = int64(len(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return t.base.RoundTrip(req)
}

// askedTask is a task mcpmux runs for a server: one of its sampling or
// elicitation requests, asked as a task.
type askedTask struct {
	id      string
	created time.Time
	ttl     time.Duration
	cancel  context.CancelFunc
	done    chan struct{} // closed once over

	mu      sync.Mutex
	status  string
	message string
	updated time.Time
	result  json.RawMessage // the client's answer, once over
	err     *jsonrpc.Error  // what failed instead
}

// maxAskedTasks bounds the tasks a connection runs for its server; beyond
// it the oldest are forgotten. defaultAskedTTL is how long one is kept
// whose request named no ttl.
const (
	maxAskedTasks   = 1000
	defaultAskedTTL = 5 * time.Minute
)

// askedTaskPoll is the polling interval the server is given.
const askedTaskPoll = 500 * time.Millisecond

// state is the task as tasks/get answers it.
func (t *askedTask) state() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := map[string]any{
		"taskId": t.id, "status": t.status, "ttl": t.ttl.Milliseconds(), "pollInterval": askedTaskPoll.Milliseconds(),
		"createdAt": t.created.UTC().Format(time.RFC3339Nano), "lastUpdatedAt": t.updated.UTC().Format(time.RFC3339Nano),
	}
	if t.message != "" {
		s["statusMessage"] = t.message
	}
	return s
}

// finish records the client's answer, unless the task was cancelled.
func (t *askedTask) finish(result json.RawMessage, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if terminalStatus(t.status) {
		return
	}
	t.updated = time.Now()
	if err != nil {
		t.status, t.message = "failed", err.Error()
		t.err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	} else {
		t.status, t.result = "completed", result
	}
	close(t.done)
}

// cancelled cancels the task; false if it was over.
func (t *askedTask) cancelled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if terminalStatus(t.status) {
		return false
	}
	t.status, t.message, t.updated = "cancelled", "The task was cancelled by request.", time.Now()
	t.cancel()
	close(t.done)
	return true
}

// askedTasks are the tasks mcpmux runs on one connection for its server:
// the server's sampling and elicitation requests asked as tasks, and its
// tasks/* requests about them. The connection owns it and gives it what
// it uses (connAsked); it holds no connection.
type askedTasks struct {
	features ClientFeatures // what the connection declares: which requests it runs as tasks
	// write sends a message on the connection: the answers to the requests
	// taken off it (the go-sdk never sees them).
	write func(ctx context.Context, msg jsonrpc.Message) error
	// callerFor is the client a server's request with _meta is for
	// (callTasks.callerFor).
	callerFor func(ctx context.Context, m mcp.Meta) (Caller, error)
	ctx       context.Context // the server's: asking the client of the call begins under it
	done      <-chan struct{} // closed when the connection has ended: its tasks end with it
	log       *slog.Logger

	// mu is its own: these tasks share nothing with the connection's
	// requests (the client to ask is found before a task is made).
	mu    sync.Mutex
	byID  map[string]*askedTask
	order []*askedTask // oldest first
}

// connAsked makes the askedTasks of c.
func connAsked(c *conn) *askedTasks {
	return &askedTasks{
		features: c.features,
		// The connection is known once the session connects (tap), after
		// c is made.
		write:     func(ctx context.Context, msg jsonrpc.Message) error { return c.wire.Write(ctx, msg) },
		callerFor: c.tasks.callerFor,
		ctx:       c.srv.ctx,
		done:      c.done,
		log:       c.srv.log,
	}
}

// takeMessage takes a server's message (JSON) that mcpmux answers itself
// (see take) off the connection.
func (at *askedTasks) takeMessage(data []byte) bool {
	msg, err := jsonrpc.DecodeMessage(data)
	req, ok := msg.(*jsonrpc.Request)
	return err == nil && ok && at.take(req)
}

// take reports whether a server's request is one mcpmux answers itself,
// and answers it: a sampling or elicitation request augmented with a
// task, and tasks/*, on a connection that declared it runs them. The
// others go to the go-sdk.
func (at *askedTasks) take(req *jsonrpc.Request) bool {
	if !req.IsCall() {
		return false
	}
	switch req.Method {
	case "sampling/createMessage":
		if !at.features.SamplingTasks || !hasTask(req.Params) {
			return false
		}
	case "elicitation/create":
		if !at.features.ElicitationTasks || !hasTask(req.Params) {
			return false
		}
	case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel":
		if at.features.tasksCapability() == nil {
			return false // a client without tasks: the SDK refuses them
		}
	default:
		return false
	}
	go func() {
		res, err := at.answer(req)
		resp := &jsonrpc.Response{ID: req.ID, Result: res}
		if err != nil {
			resp = &jsonrpc.Response{ID: req.ID, Error: err}
		}
		ctx, cancel := context.WithTimeout(context.Background(), cancelNotifyTimeout)
		defer cancel()
		if err := at.write(ctx, resp); err != nil {
			at.log.Debug("answering the server's request", "method", req.Method, "error", err)
		}
	}()
	return true
}

// hasTask reports whether a request's params augment it with a task.
func hasTask(params json.RawMessage) bool {
	if !bytes.Contains(params, []byte(`"task"`)) {
		return false
	}
	var p struct {
		Task json.RawMessage `json:"task"`
	}
	return json.Unmarshal(params, &p) == nil && len(p.Task) > 0 && string(p.Task) != "null"
}

// answer answers a request take took.
func (at *askedTasks) answer(req *jsonrpc.Request) (json.RawMessage, *jsonrpc.Error) {
	switch req.Method {
	case "sampling/createMessage", "elicitation/create":
		return at.run(req)
	case "tasks/list":
		at.mu.Lock()
		at.sweepLocked(time.Now())
		var states []map[string]any
		for _, t := range at.order {
			states = append(states, t.state())
		}
		at.mu.Unlock()
		if states == nil {
			states = []map[string]any{}
		}
		b, _ := json.Marshal(map[string]any{"tasks": states})
		return b, nil
	}
	var p taskIDParams
	_ = json.Unmarshal(req.Params, &p)
	at.mu.Lock()
	t := at.byID[p.TaskID]
	at.mu.Unlock()
	if t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	}
	switch req.Method {
	case "tasks/get":
		b, _ := json.Marshal(t.state())
		return b, nil
	case "tasks/cancel":
		if !t.cancelled() {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Cannot cancel task in terminal status: %s", t.state()["status"])}
		}
		b, _ := json.Marshal(t.state())
		return b, nil
	}
	// tasks/result: once the task is over.
	select {
	case <-t.done:
	case <-at.done:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the connection is closing"}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.result == nil {
		if t.err != nil {
			return nil, t.err
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Task %s was %s", t.id, t.status)}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(t.result, &m) != nil {
		return t.result, nil
	}
	m["_meta"] = mustJSON(map[string]any{relatedTaskKey: map[string]any{"taskId": t.id}})
	b, _ := json.Marshal(m)
	return b, nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// run starts a task for a sampling or elicitation request augmented
// with one, and answers with its CreateTaskResult: the client of the call
// is asked plainly, in the background.
func (at *askedTasks) run(req *jsonrpc.Request) (json.RawMessage, *jsonrpc.Error) {
	var p struct {
		Task struct {
			TTL *float64 `json:"ttl"`
		} `json:"task"`
		Meta mcp.Meta `json:"_meta"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	// The client is the one of the call running now, found before the
	// request returns.
	cl, err := at.callerFor(at.ctx, p.Meta)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcpmux could not forward %s to a client: %v", req.Method, err)}
	}
	now := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	t := &askedTask{id: rand.Text(), created: now, updated: now, ttl: defaultAskedTTL, cancel: cancel, done: make(chan struct{}), status: "working"}
	if p.Task.TTL != nil && *p.Task.TTL > 0 {
		t.ttl = time.Duration(*p.Task.TTL * float64(time.Millisecond))
	}
	at.mu.Lock()
	if at.byID == nil {
		at.byID = map[string]*askedTask{}
	}
	at.sweepLocked(now)
	at.byID[t.id] = t
	at.order = append(at.order, t)
	at.mu.Unlock()
	// The task as created, working: taken before it runs, so that a
	// client that answers at once does not make it "completed" already
	// (the server then polls, as it would a client's own task).
	created := t.state()
	go func() {
		defer cancel()
		go func() { // the task ends with the connection
			select {
			case <-at.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		t.finish(askPlainly(ctx, cl, req))
	}()
	b, _ := json.Marshal(map[string]any{"task": created})
	return b, nil
}

// askPlainly asks the client what the server asked as a task, as the
// request it would be without the task.
func askPlainly(ctx context.Context, cl Caller, req *jsonrpc.Request) (json.RawMessage, error) {
	if req.Method == "sampling/createMessage" {
		var p mcp.CreateMessageWithToolsParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		res, err := cl.CreateMessage(ctx, &p)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	}
	var p mcp.ElicitParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, err
	}
	res, err := cl.Elicit(ctx, &p)
	if err != nil {
		return nil, err
	}
	return EncodeElicitResult(res)
}

// sweepLocked forgets the asked tasks past their ttl, and the oldest
// beyond maxAskedTasks. at.mu must be held.
func (at *askedTasks) sweepLocked(now time.Time) {
	kept := at.order[:0]
	for _, t := range at.order {
		if now.Sub(t.created) > t.ttl {
			delete(at.byID, t.id)
			continue
		}
		kept = append(kept, t)
	}
	for len(kept) >= maxAskedTasks {
		delete(at.byID, kept[0].id)
		kept = kept[1:]
	}
	at.order = kept
}
