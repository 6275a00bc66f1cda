package upstream

//lint:file-ignore SA1019 the tests forward sampling, roots and logging of MCP 2025-11-25, which mcpmux still carries (deprecated from 2026-07-28 on).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/tasktest"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// taskCaller is a client of the tests: it answers elicitations with its
// name and records what reaches it.
type taskCaller struct {
	name string

	mu       sync.Mutex
	elicits  []*mcp.ElicitParams
	statuses []string // status of each notifications/tasks/status
	changed  chan struct{}
}

func newTaskCaller(name string) *taskCaller {
	return &taskCaller{name: name, changed: make(chan struct{}, 100)}
}

func (c *taskCaller) ID() string { return c.name }
func (c *taskCaller) CreateMessage(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return nil, errors.New("no sampling")
}
func (c *taskCaller) Elicit(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	c.mu.Lock()
	c.elicits = append(c.elicits, p)
	c.mu.Unlock()
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": c.name}}, nil
}
func (c *taskCaller) ListRoots(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	return nil, errors.New("no roots")
}
func (c *taskCaller) Log(context.Context, *mcp.LoggingMessageParams) {}
func (c *taskCaller) ResourcesChanged()                              {}

func (c *taskCaller) TaskStatus(_ context.Context, params json.RawMessage) {
	var st struct{ Status string }
	_ = json.Unmarshal(params, &st)
	c.mu.Lock()
	c.statuses = append(c.statuses, st.Status)
	c.mu.Unlock()
	c.changed <- struct{}{}
}

// waitStatus waits until the caller has been told the task is status.
func (c *taskCaller) waitStatus(t *testing.T, status string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		got := append([]string(nil), c.statuses...)
		c.mu.Unlock()
		for _, s := range got {
			if s == status {
				return
			}
		}
		select {
		case <-c.changed:
		case <-deadline:
			t.Fatalf("%s was told statuses %v, never %q", c.name, got, status)
		}
	}
}

// taskServer is a server of tasks with one task-required tool, "work":
// it runs until its release channel is closed (or its task cancelled),
// asks the client first (once ask is closed) if its arguments say
// {"ask": true}, reports
// progress, and answers with what it got.
type taskServer struct {
	srv     *mcp.Server
	tasks   *tasktest.Tasks
	release chan struct{}
	ask     chan struct{} // a run that asks waits for it before asking
	started chan string   // the task id (or "plain") of each run
	timing  Timing        // the pool's
}

func newTaskServer() *taskServer {
	s := &taskServer{srv: mcp.NewServer(&mcp.Implementation{Name: "tasks", Version: "1"}, nil), release: make(chan struct{}), ask: make(chan struct{}), started: make(chan string, 10)}
	s.tasks = tasktest.Install(s.srv)
	s.tasks.AddTool(s.srv, &mcp.Tool{Name: "work", InputSchema: map[string]any{"type": "object"}}, "required", func(ctx context.Context, c *tasktest.Call) (*mcp.CallToolResult, error) {
		id := c.TaskID
		if id == "" {
			id = "plain"
		}
		s.started <- id
		var args struct{ Ask bool }
		_ = json.Unmarshal(c.Args, &args)
		answer := "nobody"
		if args.Ask {
			<-s.ask
			res, err := c.Elicit(ctx, &mcp.ElicitParams{Message: "who?", RequestedSchema: map[string]any{"type": "object"}})
			if err != nil {
				return nil, err
			}
			answer = fmt.Sprint(res.Content["who"])
		}
		c.Progress(1, 2, "half")
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done for " + answer}}}, nil
	})
	return s
}

// pool serves the task server as "x", with the given YAML.
func (s *taskServer) pool(t *testing.T, yaml string) *Server {
	t.Helper()
	return s.poolWith(t, yaml, func(tr mcp.Transport) mcp.Transport { return tr })
}

// poolWith is pool with the server's side of each connection wrapped.
func (s *taskServer) poolWith(t *testing.T, yaml string, wrap func(mcp.Transport) mcp.Transport) *Server {
	t.Helper()
	pool := NewPool(&Options{Timing: s.timing, Transport: func(*config.Server) mcp.Transport {
		ct, st := mcp.NewInMemoryTransports()
		go func() {
			if ss, err := s.srv.Connect(context.Background(), wrap(tasktest.Wrap(s.srv, st)), nil); err == nil {
				_ = ss.Wait()
			}
		}()
		return ct
	}})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	// Tasks of MCP 2025-11-25, and a server that asks its client.
	cfg, ferr := config.ParseServer("x.yaml", []byte("name: x\ntool_command: mem\nprotocol: 2025-11-25\n"+yaml), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	return pool.Get("x")
}

// A task-augmented call creates the task and is answered with its
// CreateTaskResult; the task's requests reach the server; its status
// notifications and what it asks reach the caller that created it, on a
// shared connection where another client has a call running.
func TestTaskAugmentedCallPassesThrough(t *testing.T) {
	s := newTaskServer()
	s.timing.ProgressLinger = time.Millisecond // the task's progress comes later
	srv := s.pool(t, "")
	ctx := context.Background()
	owner, other := newTaskCaller("owner"), newTaskCaller("other")
	progress := make(chan string, 10)

	raw, err := srv.CallTool(ctx, CallParams{Request: Request{Caller: owner}, Params: &mcp.CallToolParams{Name: "work", Arguments: json.RawMessage(`{"ask":true}`)}, MCPTask: json.RawMessage(`{"ttl":60000}`),
		Progress: func(_ context.Context, p *mcp.ProgressNotificationParams) { progress <- p.Message }})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := CreatedTask(raw)
	if !ok || task.Status != "working" || task.TTL != time.Minute {
		t.Fatalf("result %s, want a CreateTaskResult of a working task with a ttl of a minute", raw)
	}
	if id := <-s.started; id != task.ID {
		t.Fatalf("the server ran %q, want task %q", id, task.ID)
	}

	// Another client's call keeps the shared connection busy: a request
	// without related-task _meta could not be routed.
	otherDone := make(chan error, 1)
	go func() {
		_, err := srv.CallTool(ctx, CallParams{Request: Request{Caller: other}, Params: &mcp.CallToolParams{Name: "work"}, RunTask: true})
		otherDone <- err
	}()
	<-s.started

	get, err := srv.TaskRequest(ctx, TaskParams{Request: Request{Caller: owner}, Method: "tasks/get", TaskID: task.ID})
	if err != nil || !strings.Contains(string(get), `"taskId":"`+task.ID+`"`) {
		t.Fatalf("tasks/get: %s, %v", get, err)
	}
	// The task asks; tasks/result delivers the question to its owner.
	close(s.ask)
	owner.waitStatus(t, "input_required")
	result := make(chan json.RawMessage, 1)
	go func() {
		raw, err := srv.TaskRequest(ctx, TaskParams{Request: Request{Caller: owner}, Method: "tasks/result", TaskID: task.ID})
		if err != nil {
			t.Errorf("tasks/result: %v", err)
		}
		result <- raw
	}()
	owner.waitStatus(t, "working")
	close(s.release)
	raw = <-result
	if got := testkit.RawText(raw); got != "done for owner" {
		t.Errorf("task result %q, want the owner's answer", got)
	}
	if !strings.Contains(string(raw), `"io.modelcontextprotocol/related-task":{"taskId":"`+task.ID+`"}`) {
		t.Errorf("task result %s lacks its related-task _meta", raw)
	}
	owner.waitStatus(t, "completed")
	select {
	case m := <-progress:
		if m != "half" {
			t.Errorf("progress %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Error("the task's progress, sent after its call ended, did not reach the caller")
	}
	if err := <-otherDone; err != nil {
		t.Errorf("the other client's call: %v", err)
	}
	owner.mu.Lock()
	defer owner.mu.Unlock()
	other.mu.Lock()
	defer other.mu.Unlock()
	if len(owner.elicits) != 1 || relatedTask(owner.elicits[0].Meta) != task.ID {
		t.Errorf("owner was asked %v, want once, about its task", owner.elicits)
	}
	if len(other.elicits) != 0 || len(other.statuses) != 0 {
		t.Errorf("the other client was asked %d times and told statuses %v of a task not its own", len(other.elicits), other.statuses)
	}
}

// A plain call of a task-required tool is run as a task by mcpmux: the
// caller gets the task's result, answers what it asks, gets its progress
// under the call's token, and is told no status of a task it does not
// know.
func TestRunTaskForPlainCall(t *testing.T) {
	s := newTaskServer()
	srv := s.pool(t, "")
	caller := newTaskCaller("plain")
	var progress []string
	var mu sync.Mutex
	close(s.release)
	close(s.ask)
	raw, err := srv.CallTool(context.Background(), CallParams{
		Request: Request{Caller: caller}, Params: &mcp.CallToolParams{Name: "work", Arguments: json.RawMessage(`{"ask":true}`)}, RunTask: true,
		Progress: func(_ context.Context, p *mcp.ProgressNotificationParams) {
			mu.Lock()
			progress = append(progress, p.Message)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := testkit.RawText(raw); got != "done for plain" {
		t.Errorf("result %q (%s), want the task's result with the caller's answer", got, raw)
	}
	if id := <-s.started; !strings.HasPrefix(id, "task-") {
		t.Errorf("the server ran %q, want a task", id)
	}
	mu.Lock()
	if len(progress) != 1 || progress[0] != "half" {
		t.Errorf("progress %v, want the task's", progress)
	}
	mu.Unlock()
	caller.mu.Lock()
	defer caller.mu.Unlock()
	if len(caller.elicits) != 1 || len(caller.statuses) != 0 {
		t.Errorf("caller asked %d times, told statuses %v; want asked once, told none", len(caller.elicits), caller.statuses)
	}
}

// A task mcpmux runs for a call that ends first (its timeout) is
// cancelled on the server: notifications/cancelled would end the
// tasks/result request, not the task. Time is the bubble's: the deadline
// passes only once the task runs and the call waits for its result.
func TestRunTaskCancelledWithItsCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTaskServer()
		srv := s.pool(t, "")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := srv.CallTool(ctx, CallParams{Request: Request{Caller: newTaskCaller("c")}, Params: &mcp.CallToolParams{Name: "work"}, RunTask: true})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call: %v, want its deadline", err)
		}
		id := <-s.started
		wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
		defer wcancel()
		if got, err := s.tasks.Await(wctx, id, "cancelled"); err != nil {
			t.Fatalf("task %s is %q, want cancelled", id, got)
		}
	})
}

// A task whose CreateTaskResult comes only after the call that runs it
// has ended is cancelled too: the call's end does not drop the task's
// id on the floor.
func TestRunTaskCreatedAsItsCallEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTaskServer()
		held := make(chan struct{})
		srv := s.poolWith(t, "", func(tr mcp.Transport) mcp.Transport {
			return &holdingTransport{Transport: tr, hold: func(m jsonrpc.Message) bool {
				r, ok := m.(*jsonrpc.Response)
				return ok && strings.Contains(string(r.Result), `"task":{`)
			}, release: held}
		})
		ctx, cancel := context.WithCancel(context.Background())
		called := make(chan error, 1)
		go func() {
			_, err := srv.CallTool(ctx, CallParams{Request: Request{Caller: newTaskCaller("c")}, Params: &mcp.CallToolParams{Name: "work"}, RunTask: true})
			called <- err
		}()
		id := <-s.started // the task runs; its CreateTaskResult is held
		cancel()
		if err := <-called; !errors.Is(err, context.Canceled) {
			t.Fatalf("call: %v, want it cancelled", err)
		}
		close(held)
		wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
		defer wcancel()
		if got, err := s.tasks.Await(wctx, id, "cancelled"); err != nil {
			t.Fatalf("task %s is %q once its CreateTaskResult came late, want cancelled", id, got)
		}
	})
}

// holdingTransport holds what the server writes that hold matches until
// release is closed.
type holdingTransport struct {
	mcp.Transport
	hold    func(jsonrpc.Message) bool
	release chan struct{}
}

func (h *holdingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := h.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &holdingConn{Connection: c, h: h}, nil
}

type holdingConn struct {
	mcp.Connection
	h *holdingTransport
}

func (c *holdingConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if c.h.hold(m) {
		select {
		case <-c.h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.Connection.Write(ctx, m)
}

// A per-client connection that holds a task of its client is not closed
// for being idle while the task may run.
func TestPerClientConnectionKeptForItsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTaskServer()
		srv := s.pool(t, "session: per-client\nidle_timeout: 200ms\n")
		c := newTaskCaller("c")
		r := Request{Client: "c", Caller: c}
		raw, err := srv.CallTool(context.Background(), CallParams{Request: r, Params: &mcp.CallToolParams{Name: "work"}, MCPTask: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		task, _ := CreatedTask(raw)
		before := srv.Status().Connections
		// Three idle timeouts of the bubble's time, and whatever they set
		// off done.
		time.Sleep(600 * time.Millisecond)
		synctest.Wait()
		if after := srv.Status().Connections; len(before) != 1 || len(after) != 1 || !after[0].Since.Equal(before[0].Since) {
			t.Fatalf("connections %v, then %v: want the same one kept", before, after)
		}
		close(s.release)
		res, err := srv.TaskRequest(context.Background(), TaskParams{Request: r, Method: "tasks/result", TaskID: task.ID})
		if err != nil || testkit.RawText(res) != "done for nobody" {
			t.Fatalf("tasks/result after idling: %s, %v (the connection, and the task with it, must be kept)", res, err)
		}
	})
}

// A status notification read before the CreateTaskResult of its task (it
// may come on another stream) waits for it.
func TestTaskStatusBeforeItsTask(t *testing.T) {
	c := &conn{srv: newServer(&config.Server{Name: "x"}, &Options{}, &listeners{})}
	c.tasks = connTasks(c)
	caller := newTaskCaller("c")
	defer c.begin("tok", &inflight{caller: caller})()
	c.tasks.taskStatus(json.RawMessage(`{"taskId":"t1","status":"working"}`))
	if len(caller.statuses) != 0 {
		t.Fatal("a status of an unknown task was delivered")
	}
	c.tasks.own(TaskInfo{ID: "t1"}, "tok")
	c.tasks.taskStatus(json.RawMessage(`{"taskId":"t1","status":"completed"}`))
	if got := strings.Join(caller.statuses, ","); got != "working,completed" {
		t.Errorf("statuses %q, want working,completed", got)
	}
	if c.holdsTasks() {
		t.Error("a completed task is still held")
	}
}

// scriptedServer is a server of the tests that speaks JSON-RPC by hand, to
// send what a go-sdk server cannot: requests augmented with a task, and
// tasks/* to its client.
type scriptedServer struct {
	t    *testing.T
	conn mcp.Connection
	in   chan *jsonrpc.Request  // requests and notifications from mcpmux
	out  chan *jsonrpc.Response // answers to the server's requests
	init chan json.RawMessage   // the initialize params mcpmux sent
}

func newScriptedServer(t *testing.T, st mcp.Transport) *scriptedServer {
	s := &scriptedServer{t: t, in: make(chan *jsonrpc.Request, 100), out: make(chan *jsonrpc.Response, 100), init: make(chan json.RawMessage, 1)}
	conn, err := st.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.conn = conn
	go func() {
		for {
			msg, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			switch m := msg.(type) {
			case *jsonrpc.Response:
				s.out <- m
			case *jsonrpc.Request:
				switch m.Method {
				case "initialize":
					s.init <- m.Params
					s.reply(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}`)
				case "tools/list":
					s.reply(m.ID, `{"tools":[{"name":"async","inputSchema":{"type":"object"}}]}`)
				case "ping":
					s.reply(m.ID, `{}`)
				case "server/discover":
					// A 2025-11-25 server: the method is unknown.
					_ = s.conn.Write(context.Background(), &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}})
				default:
					s.in <- m
				}
			}
		}
	}()
	return s
}

func (s *scriptedServer) reply(id jsonrpc.ID, result string) {
	_ = s.conn.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(result)})
}

// ask sends a request to mcpmux and returns its answer.
func (s *scriptedServer) ask(id, method, params string) *jsonrpc.Response {
	s.t.Helper()
	jid, _ := jsonrpc.MakeID(id)
	if err := s.conn.Write(context.Background(), &jsonrpc.Request{ID: jid, Method: method, Params: json.RawMessage(params)}); err != nil {
		s.t.Fatal(err)
	}
	select {
	case r := <-s.out:
		if r.ID != jid {
			s.t.Fatalf("%s: answer to %v", method, r.ID.Raw())
		}
		return r
	case <-time.After(10 * time.Second):
		s.t.Fatalf("%s: no answer", method)
	}
	return nil
}

// sampler is a caller that samples: it records what it was asked.
type sampler struct {
	*taskCaller
	asked chan *mcp.CreateMessageWithToolsParams
}

func (s *sampler) CreateMessage(_ context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	s.asked <- p
	return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m", Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil
}

// A server that asks its client to sample as a task gets a task of
// mcpmux's: its client is asked plainly, and the server's tasks/get,
// tasks/result, tasks/list and tasks/cancel are answered from it. The
// connection declares the capability as its client did.
func TestServerAskedTaskRunByMcpmux(t *testing.T) {
	scripted := make(chan *scriptedServer, 1)
	pool := NewPool(&Options{Transport: func(*config.Server) mcp.Transport {
		ct, st := mcp.NewInMemoryTransports()
		scripted <- newScriptedServer(t, st)
		return ct
	}})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	cfg, ferr := config.ParseServer("x.yaml", []byte("name: x\ntool_command: mem\nsession: per-client\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	<-scripted // the probe connection that lists the tools
	srv := pool.Get("x")

	caller := &sampler{taskCaller: newTaskCaller("c"), asked: make(chan *mcp.CreateMessageWithToolsParams, 1)}
	features := ClientFeatures{Sampling: true, SamplingTasks: true}
	result := make(chan json.RawMessage, 1)
	go func() {
		raw, err := srv.CallTool(context.Background(), CallParams{Request: Request{Client: "c", Caller: caller, Features: features}, Params: &mcp.CallToolParams{Name: "async"}})
		if err != nil {
			t.Errorf("call: %v", err)
		}
		result <- raw
	}()
	s := <-scripted
	if init := string(<-s.init); !strings.Contains(init, `"tasks":{"cancel":{},"list":{},"requests":{"sampling":{"createMessage":{}}}}`) {
		t.Errorf("initialize %s, want the client's tasks capability declared", init)
	}
	call := <-s.in
	for call.Method != "tools/call" {
		call = <-s.in
	}

	created := s.ask("s1", "sampling/createMessage", `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5,"task":{"ttl":60000}}`)
	task, ok := CreatedTask(created.Result)
	if created.Error != nil || !ok || task.TTL != time.Minute || task.Status != "working" {
		t.Fatalf("sampling with a task: %s, %v; want a CreateTaskResult of a working task", created.Result, created.Error)
	}
	if p := <-caller.asked; p.MaxTokens != 5 || len(p.Messages) != 1 {
		t.Errorf("the client was asked %+v", p)
	}
	res := s.ask("r1", "tasks/result", fmt.Sprintf(`{"taskId":%q}`, task.ID))
	if res.Error != nil || !strings.Contains(string(res.Result), `"text":"sampled"`) || !strings.Contains(string(res.Result), `"io.modelcontextprotocol/related-task":{"taskId":"`+task.ID+`"}`) {
		t.Errorf("tasks/result: %s, %v", res.Result, res.Error)
	}
	if got := s.ask("g1", "tasks/get", fmt.Sprintf(`{"taskId":%q}`, task.ID)); !strings.Contains(string(got.Result), `"status":"completed"`) {
		t.Errorf("tasks/get: %s, %v", got.Result, got.Error)
	}
	if l := s.ask("l1", "tasks/list", `{}`); !strings.Contains(string(l.Result), task.ID) {
		t.Errorf("tasks/list: %s, %v", l.Result, l.Error)
	}
	if c := s.ask("c1", "tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, task.ID)); c.Error == nil {
		t.Errorf("tasks/cancel of a completed task: %s, want an error", c.Result)
	}
	if u := s.ask("u1", "tasks/get", `{"taskId":"nope"}`); u.Error == nil {
		t.Errorf("tasks/get of an unknown task: %s, want an error", u.Result)
	}
	// A plain sampling request is the SDK's, as ever.
	if plain := s.ask("p1", "sampling/createMessage", `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":7}`); plain.Error != nil || !strings.Contains(string(plain.Result), "sampled") {
		t.Errorf("plain sampling: %s, %v", plain.Result, plain.Error)
	}
	<-caller.asked
	s.reply(call.ID, `{"content":[{"type":"text","text":"ok"}]}`)
	if raw := <-result; testkit.RawText(raw) != "ok" {
		t.Errorf("call result %s", raw)
	}
}

// A connection whose client does not run tasks declares none, and leaves
// the server's tasks/* to the go-sdk, which refuses them.
func TestServerAskedTaskNotDeclared(t *testing.T) {
	scripted := make(chan *scriptedServer, 2)
	pool := NewPool(&Options{Transport: func(*config.Server) mcp.Transport {
		ct, st := mcp.NewInMemoryTransports()
		scripted <- newScriptedServer(t, st)
		return ct
	}})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	cfg, _ := config.ParseServer("x.yaml", []byte("name: x\ntool_command: mem\nsession: per-client\n"), nil)
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	<-scripted
	go func() {
		_, _ = pool.Get("x").CallTool(context.Background(), CallParams{Request: Request{Client: "c", Caller: newTaskCaller("c"), Features: ClientFeatures{Sampling: true}}, Params: &mcp.CallToolParams{Name: "async"}})
	}()
	s := <-scripted
	if init := string(<-s.init); strings.Contains(init, `"tasks"`) {
		t.Errorf("initialize %s declares tasks", init)
	}
	if r := s.ask("g1", "tasks/get", `{"taskId":"x"}`); r.Error == nil || !strings.Contains(r.Error.Error(), "not") {
		t.Errorf("tasks/get: %s, %v; want the SDK's refusal", r.Result, r.Error)
	}
}

// A client's tasks capability adds the task features of what it does.
func TestFeaturesWithTasks(t *testing.T) {
	both := json.RawMessage(`{"list":{},"requests":{"sampling":{"createMessage":{}},"elicitation":{"create":{}}}}`)
	if f := (ClientFeatures{Sampling: true}).WithTasks(both); !f.SamplingTasks || f.ElicitationTasks {
		t.Errorf("a sampling client: %s, want tasks.sampling only (it does not elicit)", f)
	}
	decoded := map[string]any{"requests": map[string]any{"elicitation": map[string]any{"create": map[string]any{}}}}
	if f := (ClientFeatures{FormElicitation: true, Sampling: true}).WithTasks(decoded); f.SamplingTasks || !f.ElicitationTasks {
		t.Errorf("decoded capability: %s, want tasks.elicitation only", f)
	}
	if f := (ClientFeatures{Sampling: true}).WithTasks(nil); f.SamplingTasks || f.tasksCapability() != nil {
		t.Errorf("no tasks capability: %s", f)
	}
	if got := string(AllFeatures.tasksCapability()); got != `{"cancel":{},"list":{},"requests":{"elicitation":{"create":{}},"sampling":{"createMessage":{}}}}` {
		t.Errorf("declared: %s", got)
	}
}

// A task's last status is taken as it is read, ahead of the progress the
// server sent before it, which still waits for its handler: the task's
// progress token stays routed until that progress has been handled.
func TestTaskForgottenAfterTheProgressBeforeItsLastStatus(t *testing.T) {
	owner := newTaskCaller("owner")
	c := &conn{gate: newProgressGate(), requests: map[string]*inflight{}}
	c.tasks = &callTasks{mu: &c.mu, requests: func() map[string]*inflight { return c.requests }, gate: c.gate}
	c.requests["tok"] = &inflight{caller: owner, progress: func(context.Context, *mcp.ProgressNotificationParams) {}}
	c.tasks.own(TaskInfo{ID: "t1"}, "tok")
	c.requests["tok"].done = true // the creating call has ended

	c.gate.sawRead() // the task's progress, read but not yet handled
	c.tasks.deliverStatus("t1", owner, json.RawMessage(`{"taskId":"t1","status":"completed"}`))
	c.mu.Lock()
	routed := c.requests["tok"] != nil
	c.mu.Unlock()
	if !routed {
		t.Fatal("the task's progress token was forgotten before its progress was handled")
	}
	c.gate.sawHandled()
	testkit.Eventually(t, "the task is forgotten once its progress has been handled", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.requests["tok"] == nil && c.tasks.owned["t1"] == nil
	})
}
