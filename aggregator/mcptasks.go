package aggregator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/rewrite"
	"github.com/mcpmux/mcpmux/upstream"
)

// Tasks: the task augmentation of MCP 2025-11-25, between clients and
// servers (see docs/protocol.md#tasks).
//
// A tool that lists execution.taskSupport "optional" or "required" may be
// called as a task: the server answers the tools/call at once with a
// CreateTaskResult, and the client then polls tasks/get, fetches the
// result with tasks/result, or cancels with tasks/cancel. The go-sdk has
// no tasks: the fields it would drop are lifted by the front
// (taskfront.go), the tasks/* methods are registered as custom methods,
// and upstream speaks them with raw requests (upstream/mcptasks.go).
//
// A client that declares the tasks capability gets tasks passed through:
//   - initialize advertises capabilities.tasks when the profile has a
//     tool that can run as a task;
//   - tools/list gives every definition as its server listed it;
//   - a task-augmented tools/call is forwarded with its task, and the
//     task it creates is registered as the session's, with its server;
//   - tasks/get, tasks/result and tasks/cancel go to the server of one of
//     the session's tasks (on the session's own connection to a per-client
//     server), and tasks/list lists the session's tasks: a task of
//     another client on a shared connection is neither visible nor
//     addressable;
//   - notifications/tasks/status go to the client that owns the task.
//
// For a client that does not, mcpmux runs a task-required tool as a task
// itself when the client calls it plainly, and answers with the task's
// result (upstream.CallParams.RunTask): such a tool works for every client
// (directly, a client without tasks cannot use it). Its tools/list gives
// those tools without their execution field, so that an SDK that refuses
// to call a task-required tool plainly calls it.
//
// Stateless HTTP has no sessions to own tasks: mcpmux declares no tasks
// capability there, and treats every client as one without tasks.

// mcpTasks is the one home of MCP tasks towards clients: those of
// 2025-11-25 above, and the tasks extension of 2026-07-28 (tasks2026.go).
// It makes a task of a call's answer, answers the tasks/* methods, mints
// and reads task handles, keeps each session's tasks, and says how tools
// are listed to a client with or without tasks.
//
// It holds only what tasks need, given at construction (New): the
// aggregator's pipeline is reached through the few funcs below, never
// through *Aggregator, so that tasks read, and change, on their own.
type mcpTasks struct {
	stateless bool // no sessions to own tasks: see above
	log       *slog.Logger
	mask      *logs.Masker // secrets of the config, hidden in what clients see

	// server returns the pool's server of that name; nil if none.
	server func(name string) *upstream.Server
	// settings are the current settings: timeouts, max_result_bytes,
	// rules.
	settings func() *config.Settings
	// signer signs task handles (tasks2026.go), with the key and replica
	// of the parked calls' states (mrtr.go).
	signer handleSigner
	// request is the upstream request of a client's request to srv, as
	// for any other (passthrough.go): its caller, features and client.
	request func(ctx context.Context, srv *upstream.Server, ss *mcp.ServerSession, runID string) upstream.Request
	// ruleCall is a call as the rules see it (pipeline.go): a task's
	// result goes through the rules that act on results.
	ruleCall func(ctx context.Context, p *profile, c *toolCall, e *Entry) (*rewrite.Call, *rewrite.Env)
	// runIDOf is the run id a request names (forward.go).
	runIDOf func(meta mcp.Meta, extra *mcp.RequestExtra) string
	// whenEnded runs f when client session ss has ended, at once if it
	// has (clients.go): a session's tasks go with it.
	whenEnded func(ss *mcp.ServerSession, f func())

	mu       sync.Mutex
	sessions map[*mcp.ServerSession][]*clientTask // each session's tasks, oldest first
}

// tasksCapability is the tasks capability mcpmux advertises: tasks/list
// (of the session's tasks) and tasks/cancel (by the task's server), and
// task-augmented tools/call.
var tasksCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// Tool-level task support, as tools list it in execution.taskSupport.
const (
	taskOptional = "optional"
	taskRequired = "required"
)

// taskSupportOf reads execution.taskSupport from a tool's definition as
// listed; "" when absent (which means forbidden).
func taskSupportOf(def json.RawMessage) string {
	if !bytes.Contains(def, []byte(`"taskSupport"`)) {
		return "" // nothing to decode
	}
	var d struct {
		Execution struct {
			TaskSupport string `json:"taskSupport"`
		} `json:"execution"`
	}
	_ = json.Unmarshal(def, &d)
	return d.Execution.TaskSupport
}

// setTaskListing records e's task support, and for a task-required tool
// the definition clients without tasks get: without its execution.
func (e *Entry) setTaskListing(support string) {
	e.taskSupport = support
	if support == taskRequired {
		if plain, err := withoutField(e.listed, "execution"); err == nil {
			e.plainListed = plain
		}
	}
}

// setExtensionTasks lists e, a tool of a 2026 server with the tasks
// extension, as one that may run as a task (execution.taskSupport
// "optional") to clients of 2025-11-25 tasks, and as its server listed it
// to any other: 2026 has no execution field, and a client without tasks
// gets the task's result.
func (e *Entry) setExtensionTasks() {
	withTasks, err := withField(e.listed, "execution", json.RawMessage(`{"taskSupport":"optional"}`))
	if err != nil {
		return
	}
	e.taskSupport, e.extensionTasks = taskOptional, true
	e.plainListed, e.listed = e.listed, withTasks
}

// clientTasks reports whether a client session declared the tasks
// capability (lifted into its initialize's _meta by the front).
func (m *mcpTasks) clientTasks(ss *mcp.ServerSession) bool {
	if m.stateless || ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Meta[clientTasksKey] != nil
}

// toolListing returns how ss is listed a tool: as its server listed it,
// or, for a client without tasks, a task-required tool without its
// execution.
func (m *mcpTasks) toolListing(ss *mcp.ServerSession) func(*Entry) json.RawMessage {
	if m.clientTasks(ss) {
		return func(e *Entry) json.RawMessage { return e.listed }
	}
	return func(e *Entry) json.RawMessage {
		if e.plainListed != nil {
			return e.plainListed
		}
		return e.listed
	}
}

// offersTasks reports whether the profile's view has a tool that can run
// as a task, so that its clients are offered the tasks capability.
func (m *mcpTasks) offersTasks(v *view) bool {
	if m.stateless {
		return false
	}
	for _, e := range v.toolList {
		if e.taskSupport == taskOptional || e.taskSupport == taskRequired {
			return true
		}
	}
	return false
}

// takeAugment takes a call's task (lifted by the front) out of its _meta:
// the pipeline sends it as params.task, never as _meta.
func takeAugment(meta mcp.Meta) (mcp.Meta, json.RawMessage) {
	v, ok := meta[augmentKey]
	if !ok {
		return meta, nil
	}
	rest := maps.Clone(meta)
	delete(rest, augmentKey)
	raw, err := json.Marshal(v)
	if err != nil || string(raw) == "null" {
		return rest, nil
	}
	return rest, raw
}

// taskMode says how forward sends c to e: with the client's task, or run
// as a task by mcpmux (a plain call of a task-required tool). Stateless,
// a client's task is ignored, as the spec has a server that declares no
// tasks capability do.
func (m *mcpTasks) taskMode(c *toolCall, e *Entry) (task json.RawMessage, run bool) {
	if c.mcpTask != nil && !m.stateless {
		return c.mcpTask, false
	}
	return nil, e.taskSupport == taskRequired
}

// taskCreated registers the task a task-augmented call created, and
// reports whether res is its CreateTaskResult: then nothing after the run
// step applies to it (rules and notes act on tool results; they apply to
// the task's result, see taskResult).
func (m *mcpTasks) taskCreated(p *profile, c *toolCall, e *Entry, res *result) bool {
	if c.mcpTask == nil || m.stateless || res.raw == nil || e.meta != nil {
		return false
	}
	t, ok := upstream.CreatedTask(res.raw)
	if !ok {
		return false // the server ran the call at once
	}
	m.addTask(c.session, &clientTask{id: t.ID, profile: p, call: c, entry: e, ttl: t.TTL})
	m.log.Debug("task created", "tool", e.Name, "task_id", t.ID, "session", sessionID(c.session))
	return true
}

// clientTask is a task one of a session's calls created on a server.
type clientTask struct {
	id      string
	profile *profile
	call    *toolCall // the call that created it: its caller, task id and rules
	entry   *Entry    // the tool, and with it the server
	ttl     time.Duration
	created time.Time
}

// expired reports whether the server may have forgotten the task.
func (t *clientTask) expired(now time.Time) bool {
	return t.ttl > 0 && now.After(t.created.Add(t.ttl))
}

// maxSessionTasks bounds the tasks a session may address; beyond it the
// oldest are forgotten.
const maxSessionTasks = 1000

// addTask registers t as the session's: the only tasks it may address,
// whatever the servers' connections carry.
func (m *mcpTasks) addTask(ss *mcp.ServerSession, t *clientTask) {
	t.created = time.Now()
	m.mu.Lock()
	tasks, known := m.sessions[ss]
	kept := tasks[:0]
	for _, old := range tasks {
		switch {
		case old.expired(t.created):
		case old.id == t.id:
			// Two servers gave one id: the latest task is the one the id
			// names now.
			m.log.Warn("a server gave a task the id of another task of the session; the older can no longer be addressed",
				"task_id", t.id, "server", t.entry.Server, "older_server", old.entry.Server)
		default:
			kept = append(kept, old)
		}
	}
	if len(kept) >= maxSessionTasks {
		kept = kept[1:]
	}
	if m.sessions == nil {
		m.sessions = map[*mcp.ServerSession][]*clientTask{}
	}
	m.sessions[ss] = append(kept, t)
	m.mu.Unlock()
	if !known {
		// Once per session, which keeps its entry until it ends (dropTask
		// leaves it, empty): a session that has already ended has its
		// tasks forgotten at once, as it could address them no more.
		m.whenEnded(ss, func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			delete(m.sessions, ss)
		})
	}
}

// task returns the session's task id, or nil.
func (m *mcpTasks) task(ss *mcp.ServerSession, id string) *clientTask {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.sessions[ss] {
		if t.id == id {
			return t
		}
	}
	return nil
}

// liveTasks returns the session's tasks, oldest first, without those past
// their ttl.
func (m *mcpTasks) liveTasks(ss *mcp.ServerSession) []*clientTask {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	var out []*clientTask
	for _, t := range m.sessions[ss] {
		if !t.expired(now) {
			out = append(out, t)
		}
	}
	return out
}

// dropTask forgets a task its server no longer knows.
func (m *mcpTasks) dropTask(ss *mcp.ServerSession, t *clientTask) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tasks := m.sessions[ss]
	for i, x := range tasks {
		if x == t {
			m.sessions[ss] = append(tasks[:i:i], tasks[i+1:]...)
			return
		}
	}
}

// taskParams are the params of tasks/get, tasks/result, tasks/cancel and
// tasks/list.
type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	// InputResponses are those of a tasks/update (2026-07-28's extension).
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// taskMethods are the tasks/* methods a client may send.
var taskMethods = []string{"tasks/get", "tasks/result", "tasks/cancel", "tasks/list", "tasks/update"}

// registerTaskMethods makes p's server accept the tasks/* methods, which
// the go-sdk would refuse as unknown. tasksMiddleware answers them, with
// the request's extra; the handlers answer the same way should one reach
// them.
func (m *mcpTasks) registerTaskMethods(p *profile) {
	for _, method := range taskMethods {
		err := mcp.AddReceivingCustomMethod(p.server, method, func(ctx context.Context, ss *mcp.ServerSession, params *taskParams) (mcp.Result, error) {
			return m.taskMethod(ctx, method, &mcp.ServerRequest[*taskParams]{Session: ss, Params: params})
		})
		if err != nil {
			// Only for a method the go-sdk has come to know itself: mcpmux
			// must then use its support instead.
			panic(fmt.Sprintf("registering %s: %v", method, err))
		}
	}
}

// tasksMiddleware answers the tasks/* methods, and advertises the tasks
// capability in initialize results.
func (m *mcpTasks) tasksMiddleware(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ServerRequest[*taskParams]); ok {
				if _, ok := sessionless(req); ok {
					return m.taskMethod2026(ctx, p, method, r)
				}
				return m.taskMethod(ctx, method, r)
			}
			res, err := next(ctx, method, req)
			if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && m.offersTasks(p.view.Load()) {
				return &tasksInitializeResult{ir}, nil
			}
			if dr, ok := res.(*mcp.DiscoverResult); ok && err == nil && offersExtensionTasks(p.view.Load()) {
				dr.Capabilities = withTasksExtension(dr.Capabilities)
			}
			return res, err
		}
	}
}

// tasksInitializeResult is an initialize result with the tasks
// capability, which the go-sdk's ServerCapabilities cannot hold.
type tasksInitializeResult struct{ *mcp.InitializeResult }

func (r *tasksInitializeResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.InitializeResult)
	if err != nil {
		return nil, err
	}
	caps := fieldOf(b, "capabilities")
	if len(caps) == 0 || string(caps) == "null" {
		caps = json.RawMessage("{}")
	}
	caps, err = withField(caps, "tasks", tasksCapability)
	if err != nil {
		return nil, fmt.Errorf("adding the tasks capability: %w", err)
	}
	return withField(b, "capabilities", caps)
}

// errTaskNotFound answers a request about a task the session does not
// have, as the spec says a server answers an unknown task id.
func errTaskNotFound(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Failed to retrieve task: Task not found (%q is not a task of this session)", id)}
}

// taskMethod answers a client's tasks/get, tasks/result, tasks/cancel or
// tasks/list.
func (m *mcpTasks) taskMethod(ctx context.Context, method string, req *mcp.ServerRequest[*taskParams]) (mcp.Result, error) {
	params := req.Params
	if params == nil {
		params = &taskParams{}
	}
	switch method {
	case "tasks/list":
		return m.listTasks(ctx, req.Session, params.Cursor)
	case "tasks/update":
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "tasks/update is a method of MCP 2026-07-28's tasks extension; this session speaks an earlier version, whose tasks get their input with tasks/result"}
	}
	t := m.task(req.Session, params.TaskID)
	if t == nil || m.stateless {
		return nil, errTaskNotFound(params.TaskID)
	}
	raw, err := m.askTaskServer(ctx, req.Session, t, method, closeClientStream(req.Extra))
	if err != nil {
		return nil, err
	}
	if method == "tasks/result" {
		raw = m.taskResult(ctx, t, raw)
	}
	return &rawResult{raw: raw}, nil
}

// askTaskServer sends a request about t to its server, under the tool's
// timeout, and returns the server's answer as it sent it. The server's
// JSON-RPC error is passed on as it is; what else goes wrong is an
// internal error saying what and what to do.
func (m *mcpTasks) askTaskServer(ctx context.Context, ss *mcp.ServerSession, t *clientTask, method string, streamClosed func(time.Duration) bool) (json.RawMessage, error) {
	e := t.entry
	srv := m.server(e.Server)
	if srv == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s %s: the task's server %q is no longer configured", method, t.id, e.Server)}
	}
	timeout := srv.Config().CallTimeout(e.Tool, m.settings().Timeout)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := srv.TaskRequest(cctx, upstream.TaskParams{
		Request: m.request(ctx, srv, ss, t.call.runID), Method: method, TaskID: t.id, StreamClosed: streamClosed, ExtensionTool: e.extensionTasks,
	})
	if err == nil {
		return raw, nil
	}
	var rpc *upstream.RPCError
	if errors.As(err, &rpc) {
		if rpc.Code == jsonrpc.CodeInvalidParams && method == "tasks/get" {
			m.dropTask(ss, t) // the server no longer knows it
		}
		return nil, &jsonrpc.Error{Code: rpc.Code, Message: rpc.Message, Data: rpc.Data}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	f, detail := classify(ctx, cctx, err)
	m.log.Warn("task request failed", "method", method, "task_id", t.id, "tool", e.Name, "session", sessionID(ss), "error", err)
	what := fmt.Sprintf("%v", detail)
	if f.outcome == failTimeout.outcome {
		what = fmt.Sprintf("the server did not answer within %v, the tool's timeout; the task goes on: ask again, or cancel it with tasks/cancel", timeout)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: m.mask.Mask(fmt.Sprintf("%s %s (tool '%s' on server '%s'): %s", method, t.id, e.Tool, e.Server, what))}
}

// taskResult applies to a task's result what the pipeline applies to a
// call's result after the server answered: max_result_bytes, then the
// rewrite rules that act on results.
func (m *mcpTasks) taskResult(ctx context.Context, t *clientTask, raw json.RawMessage) json.RawMessage {
	res := &result{raw: raw}
	settings := m.settings()
	limit := settings.MaxResultBytes
	if limit <= 0 {
		limit = config.DefaultMaxResultBytes
	}
	if res.size() > int(limit) {
		if capped, truncated := capResult(res.typed(), limit); truncated {
			res = decoded(capped)
		}
	}
	rules := settings.Rules()
	rc, env := m.ruleCall(ctx, t.profile, t.call, t.entry)
	if rules.Inspects(rc, res.isError()) {
		res = decoded(rules.After(ctx, rc, res.typed(), env))
	}
	return res.journaled()
}

// listTasks answers tasks/list with the session's own tasks. Each server
// that holds some is asked for its list, which on a shared connection has
// other clients' tasks too: only the session's are kept, in the server's
// order, servers in the order of the session's first task on each. A
// server that does not answer tasks/list is asked for each task with
// tasks/get. With one server, the answer is the server's with the tasks
// filtered (its other fields kept). A task its server no longer lists is
// left out and forgotten.
func (m *mcpTasks) listTasks(ctx context.Context, ss *mcp.ServerSession, cursor string) (mcp.Result, error) {
	if cursor != "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor: mcpmux lists all of a session's tasks in one page"}
	}
	var servers []string
	byServer := map[string][]*clientTask{}
	if !m.stateless {
		for _, t := range m.liveTasks(ss) {
			if byServer[t.entry.Server] == nil {
				servers = append(servers, t.entry.Server)
			}
			byServer[t.entry.Server] = append(byServer[t.entry.Server], t)
		}
	}
	var items []json.RawMessage
	var page json.RawMessage // the one server's answer
	for _, server := range servers {
		p, listed, err := m.serverTasks(ctx, ss, byServer[server])
		if err != nil {
			m.log.Warn("tasks/list: a server's tasks are left out", "server", server, "session", sessionID(ss), "error", err)
			continue
		}
		page = p
		items = append(items, listed...)
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	list := &listResult{field: "tasks", items: items}
	if len(servers) != 1 || page == nil {
		return list, nil
	}
	b, err := list.MarshalJSON()
	if err != nil {
		return nil, err
	}
	out, err := withField(page, "tasks", fieldOf(b, "tasks"))
	if err == nil {
		out, err = withoutField(out, "nextCursor")
	}
	if err != nil {
		return list, nil
	}
	return &rawResult{raw: out}, nil
}

// maxTaskListPages bounds the pages of a server's tasks/list.
const maxTaskListPages = 100

// serverTasks returns how one server lists ts, tasks of the session on it:
// its first page (nil without one), and the tasks as it lists them.
func (m *mcpTasks) serverTasks(ctx context.Context, ss *mcp.ServerSession, ts []*clientTask) (json.RawMessage, []json.RawMessage, error) {
	e := ts[0].entry
	srv := m.server(e.Server)
	if srv == nil {
		return nil, nil, fmt.Errorf("server %q is no longer configured", e.Server)
	}
	mine := map[string]*clientTask{}
	for _, t := range ts {
		mine[t.id] = t
	}
	cctx, cancel := context.WithTimeout(ctx, srv.Config().CallTimeout(e.Tool, m.settings().Timeout))
	defer cancel()
	var first json.RawMessage
	var items []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for range maxTaskListPages {
		raw, err := srv.TaskRequest(cctx, upstream.TaskParams{Request: m.request(ctx, srv, ss, ts[0].call.runID), Method: "tasks/list", Cursor: cursor, ExtensionTool: e.extensionTasks})
		var rpc *upstream.RPCError
		if errors.As(err, &rpc) && first == nil {
			return nil, m.getEach(ctx, ss, ts), nil // it lists no tasks
		}
		if err != nil {
			return nil, nil, err
		}
		if first == nil {
			first = raw
		}
		var p struct {
			Tasks      []json.RawMessage `json:"tasks"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, nil, fmt.Errorf("reading tasks/list: %w", err)
		}
		for _, it := range p.Tasks {
			var id struct {
				TaskID string `json:"taskId"`
			}
			if json.Unmarshal(it, &id) == nil && mine[id.TaskID] != nil && !seen[id.TaskID] {
				seen[id.TaskID] = true
				items = append(items, it)
			}
		}
		if p.NextCursor == "" {
			for id, t := range mine {
				if !seen[id] {
					m.dropTask(ss, t) // the server no longer has it
				}
			}
			return first, items, nil
		}
		cursor = p.NextCursor
	}
	return nil, nil, fmt.Errorf("more than %d pages of tasks", maxTaskListPages)
}

// taskListConcurrency bounds the tasks/get requests that list the tasks
// of a server without tasks/list.
const taskListConcurrency = 4

// getEach returns each of ts as its server reports it now (tasks/get);
// one it no longer knows is left out.
func (m *mcpTasks) getEach(ctx context.Context, ss *mcp.ServerSession, ts []*clientTask) []json.RawMessage {
	items := make([]json.RawMessage, len(ts))
	sem := make(chan struct{}, taskListConcurrency)
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if raw, err := m.askTaskServer(ctx, ss, t, "tasks/get", nil); err == nil {
				items[i] = raw
			}
		})
	}
	wg.Wait()
	out := items[:0]
	for _, it := range items {
		if it != nil {
			out = append(out, it)
		}
	}
	return out
}

// fieldOf returns the value of obj's top-level field key; nil if absent.
func fieldOf(obj json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	return m[key]
}

// withoutField returns the JSON object obj without its top-level field
// key, every other byte as it was.
func withoutField(obj json.RawMessage, key string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	first := true
	start := int(dec.InputOffset()) // after the previous member: its comma follows
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		if name, _ := tok.(string); name == key {
			rest := obj[end:]
			if first {
				// No comma before it: drop the one after it.
				if r := bytes.TrimLeft(rest, " \t\r\n"); bytes.HasPrefix(r, []byte(",")) {
					rest = bytes.TrimLeft(r[1:], " \t\r\n")
				}
			}
			out := make([]byte, 0, len(obj))
			out = append(out, obj[:start]...)
			return append(out, rest...), nil
		}
		first, start = false, end
	}
	return obj, nil
}
