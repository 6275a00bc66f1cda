package aggregator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/tasktest"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// taskFixture is a server of tasks: "work" requires a task, runs until
// release is closed, first asks the client (once ask is closed) if its
// arguments say {"ask": true}, and answers with the answer and a link;
// "maybe" may run as a task and answers at once.
type taskFixture struct {
	srv     *mcp.Server
	tasks   *tasktest.Tasks
	release chan struct{}
	ask     chan struct{}

	releaseOnce, askOnce sync.Once
}

// Release lets the runs of "work" finish; Ask lets them ask.
func (f *taskFixture) Release() { f.releaseOnce.Do(func() { close(f.release) }) }
func (f *taskFixture) Ask()     { f.askOnce.Do(func() { close(f.ask) }) }

// newTaskFixture makes the fixture; its runs are released when the test
// ends, so that a failing test does not wait for them.
func newTaskFixture(t *testing.T) *taskFixture {
	f := &taskFixture{srv: mcp.NewServer(&mcp.Implementation{Name: "tasks", Version: "1"}, nil), release: make(chan struct{}), ask: make(chan struct{})}
	t.Cleanup(func() { f.Ask(); f.Release() })
	f.tasks = tasktest.Install(f.srv)
	schema := map[string]any{"type": "object", "properties": map[string]any{"ask": map[string]any{"type": "boolean"}}}
	f.tasks.AddTool(f.srv, &mcp.Tool{Name: "work", Description: "works as a task", InputSchema: schema}, "required", func(ctx context.Context, c *tasktest.Call) (*mcp.CallToolResult, error) {
		var args struct{ Ask bool }
		_ = json.Unmarshal(c.Args, &args)
		answer := "nobody"
		if args.Ask {
			select {
			case <-f.ask:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			res, err := c.Elicit(ctx, &mcp.ElicitParams{Message: "who?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			answer = fmt.Sprint(res.Content["name"])
		}
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done for " + answer + ", see https://hf.co/datasets/gaia"}}}, nil
	})
	f.tasks.AddTool(f.srv, &mcp.Tool{Name: "maybe", Description: "may work as a task", InputSchema: schema}, "optional", func(context.Context, *tasktest.Call) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "maybe done"}}}, nil
	})
	return f
}

// taskRules redact links to benchmark datasets in results.
const taskRules = `
rewrite:
  - name: no-benchmark-links
    tools: ["*"]
    block_urls: ["huggingface.co/datasets/**"]
    message: "Refused: benchmark answers."
    redact: true
`

// lineClient is a client of mcpmux over stdio (serveStdio on pipes) that
// works on the JSON of the messages: it can send what the go-sdk's client
// cannot (a task-augmented call, tasks/*). It answers elicitations with
// {"name": "Ada"}.
type lineClient struct {
	t *testing.T
	w io.WriteCloser

	pending testkit.Pending

	mu      sync.Mutex
	notes   []json.RawMessage // notifications, in order
	asked   []json.RawMessage // the params of the server's requests
	changed chan struct{}     // signalled on every notification or request
}

// stdioClient connects a client declaring caps (JSON) to a's profile
// over serveStdio, and initializes it; it returns the initialize result.
func stdioClient(t *testing.T, a *Aggregator, profile, caps string) (*lineClient, json.RawMessage) {
	t.Helper()
	c := stdioLines(t, a, profile)
	res, errj := c.call("initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"line","version":"1"}}`))
	if errj != nil {
		t.Fatalf("initialize: %s", errj)
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return c, res
}

// stdioLines connects a lineClient to a's profile over serveStdio, and
// sends nothing.
func stdioLines(t *testing.T, a *Aggregator, profile string) *lineClient {
	t.Helper()
	_, inW, outR := servePipes(t, a, profile)
	c := &lineClient{t: t, w: inW, changed: make(chan struct{}, 1000)}
	go c.read(outR)
	return c
}

// servePipes serves a's profile over serveStdio on pipes until the test
// ends, and returns the client's ends: what it writes, what it reads, and
// the context of the serving.
func servePipes(t *testing.T, a *Aggregator, profile string) (context.Context, io.WriteCloser, io.ReadCloser) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = a.out.serveStdio(ctx, a.Server(profile), inR, outW)
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		<-served
	})
	return ctx, inW, outR
}

func (c *lineClient) send(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		c.t.Error(err)
		return
	}
	_, _ = c.w.Write(append(b, '\n'))
}

func (c *lineClient) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var msg testkit.Message
		line := append([]byte(nil), sc.Bytes()...)
		if json.Unmarshal(line, &msg) != nil {
			continue
		}
		switch {
		case msg.Method != "" && msg.ID != nil:
			c.mu.Lock()
			c.asked = append(c.asked, msg.Params)
			c.mu.Unlock()
			c.changed <- struct{}{}
			reply := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
			if msg.Method == "elicitation/create" {
				reply["result"] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
			} else {
				reply["error"] = map[string]any{"code": -32601, "message": "no " + msg.Method}
			}
			c.send(reply)
		case msg.Method != "":
			c.mu.Lock()
			c.notes = append(c.notes, line)
			c.mu.Unlock()
			c.changed <- struct{}{}
		default:
			c.pending.Answer(msg)
		}
	}
}

// call sends a request and returns its result or its error.
func (c *lineClient) call(method string, params any) (result, rpcErr json.RawMessage) {
	c.t.Helper()
	id, ch := c.pending.Start()
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	select {
	case r := <-ch:
		return r.Result, r.Error
	case <-time.After(20 * time.Second):
		c.t.Fatalf("%s: no answer", method)
	}
	return nil, nil
}

// mustCall is call for a request that must succeed.
func (c *lineClient) mustCall(method string, params any) json.RawMessage {
	c.t.Helper()
	res, errj := c.call(method, params)
	if errj != nil {
		c.t.Fatalf("%s: error %s", method, errj)
	}
	return res
}

// waitFor waits until cond holds of the notifications and requests seen.
func (c *lineClient) waitFor(what string, cond func(notes, asked []json.RawMessage) bool) {
	c.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		c.mu.Lock()
		ok := cond(c.notes, c.asked)
		notes := len(c.notes)
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.changed:
		case <-deadline:
			c.t.Fatalf("no %s (%d notifications)", what, notes)
		}
	}
}

// statusNote matches a notifications/tasks/status of task id in status.
func hasStatus(notes []json.RawMessage, id, status string) bool {
	for _, n := range notes {
		s := string(n)
		if strings.Contains(s, `"notifications/tasks/status"`) && strings.Contains(s, `"taskId":"`+id+`"`) && strings.Contains(s, `"status":"`+status+`"`) {
			return true
		}
	}
	return false
}

// toolDef returns the definition of tool name in a tools/list result.
func toolDef(t *testing.T, list json.RawMessage, name string) map[string]any {
	t.Helper()
	var r struct{ Tools []map[string]any }
	if err := json.Unmarshal(list, &r); err != nil {
		t.Fatal(err)
	}
	for _, d := range r.Tools {
		if d["name"] == name {
			return d
		}
	}
	t.Fatalf("no tool %s in %s", name, list)
	return nil
}

func taskIDOf(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var r struct {
		Task struct{ TaskID string }
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Task.TaskID == "" {
		t.Fatalf("result %s, want a CreateTaskResult", res)
	}
	return r.Task.TaskID
}

const clientWithTasks = `{"elicitation":{},"tasks":{"list":{},"cancel":{}}}`

// A client that declares tasks gets them passed through: the capability,
// the definitions with their execution, a task-augmented call answered
// with the server's CreateTaskResult, tasks/get, tasks/list and
// tasks/result routed to the server, what the task asks and its status
// notifications delivered, and the task's result under the rules that act
// on results.
func TestTasksPassThroughToClientsWithTasks(t *testing.T) {
	f := newTaskFixture(t)
	h := newHarness(t, map[string]*mcp.Server{"t": f.srv, "e": fixtureServer("e", map[string]mcp.ToolHandler{"echo": echo("")})}, taskRules, pinned2025("t"))
	c, init := stdioClient(t, h.agg, DefaultProfile, clientWithTasks)

	var ir struct {
		Capabilities map[string]json.RawMessage
	}
	_ = json.Unmarshal(init, &ir)
	if got := string(ir.Capabilities["tasks"]); got != string(tasksCapability) {
		t.Errorf("initialize: tasks capability %q, want %s", got, tasksCapability)
	}
	list := c.mustCall("tools/list", map[string]any{})
	if ex := fmt.Sprint(toolDef(t, list, "t__work")["execution"]); ex != "map[taskSupport:required]" {
		t.Errorf("t__work's execution: %s", ex)
	}
	if ex := fmt.Sprint(toolDef(t, list, "t__maybe")["execution"]); ex != "map[taskSupport:optional]" {
		t.Errorf("t__maybe's execution: %s", ex)
	}

	created := c.mustCall("tools/call", map[string]any{"name": "t__work", "arguments": map[string]any{"ask": true}, "task": map[string]any{"ttl": 60000}})
	id := taskIDOf(t, created)
	if got := f.tasks.IDs(); len(got) != 1 || got[0] != id {
		t.Fatalf("the server has tasks %v, want the client's %s", got, id)
	}
	if st := c.mustCall("tasks/get", map[string]any{"taskId": id}); !strings.Contains(string(st), `"status":"working"`) {
		t.Errorf("tasks/get: %s", st)
	}
	if l := c.mustCall("tasks/list", map[string]any{}); !strings.Contains(string(l), `"taskId":"`+id+`"`) {
		t.Errorf("tasks/list: %s, want the task", l)
	}

	f.Ask()
	c.waitFor("input_required status", func(notes, _ []json.RawMessage) bool { return hasStatus(notes, id, "input_required") })
	result := make(chan json.RawMessage, 1)
	go func() {
		res, errj := c.call("tasks/result", map[string]any{"taskId": id})
		if errj != nil {
			t.Errorf("tasks/result: %s", errj)
		}
		result <- res
	}()
	c.waitFor("elicitation", func(_, asked []json.RawMessage) bool { return len(asked) == 1 })
	c.mu.Lock()
	if !strings.Contains(string(c.asked[0]), `"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}`) {
		t.Errorf("elicitation %s, want it tied to the task", c.asked[0])
	}
	c.mu.Unlock()
	f.Release()
	res := <-result
	if !strings.Contains(string(res), "done for Ada") || !strings.Contains(string(res), `"io.modelcontextprotocol/related-task"`) {
		t.Errorf("task result %s, want the server's, with the client's answer", res)
	}
	if strings.Contains(string(res), "hf.co/datasets") {
		t.Errorf("task result %s: the redaction rule did not apply", res)
	}
	c.waitFor("completed status", func(notes, _ []json.RawMessage) bool { return hasStatus(notes, id, "completed") })
	if _, errj := c.call("tasks/cancel", map[string]any{"taskId": id}); !strings.Contains(string(errj), "-32602") {
		t.Errorf("tasks/cancel of a completed task: error %s, want the server's -32602", errj)
	}

	// An optional tool called as a task runs as one too.
	maybe := c.mustCall("tools/call", map[string]any{"name": "t__maybe", "arguments": map[string]any{}, "task": map[string]any{}})
	mid := taskIDOf(t, maybe)
	if res := c.mustCall("tasks/result", map[string]any{"taskId": mid}); !strings.Contains(string(res), "maybe done") {
		t.Errorf("t__maybe's task result: %s", res)
	}
}

// A session sees and addresses its own tasks only: on a shared
// connection, another client's task is not listed, nor found.
func TestTasksAreTheSessionsOwn(t *testing.T) {
	for _, mode := range []string{"shared", "per-client"} {
		t.Run(mode, func(t *testing.T) {
			f := newTaskFixture(t)
			h := newHarness(t, map[string]*mcp.Server{"t": f.srv}, "", map[string]string{"t": "session: " + mode + "\nprotocol: 2025-11-25\n"})
			a, _ := stdioClient(t, h.agg, DefaultProfile, clientWithTasks)
			b, _ := stdioClient(t, h.agg, DefaultProfile, clientWithTasks)
			id := taskIDOf(t, a.mustCall("tools/call", map[string]any{"name": "t__work", "arguments": map[string]any{}, "task": map[string]any{}}))

			if l := b.mustCall("tasks/list", map[string]any{}); string(l) != `{"tasks":[]}` {
				t.Errorf("another session's tasks/list: %s, want none", l)
			}
			// The server lists both sessions' tasks; each session gets its own.
			bid := taskIDOf(t, b.mustCall("tools/call", map[string]any{"name": "t__maybe", "arguments": map[string]any{}, "task": map[string]any{}}))
			if l := b.mustCall("tasks/list", map[string]any{}); !strings.Contains(string(l), bid) || strings.Contains(string(l), id) {
				t.Errorf("another session's tasks/list: %s, want its task %s only", l, bid)
			}
			for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
				if _, errj := b.call(m, map[string]any{"taskId": id}); !strings.Contains(string(errj), "not a task of this session") {
					t.Errorf("another session's %s: error %s, want task not found", m, errj)
				}
			}
			if got := f.tasks.Task(id); got != "working" {
				t.Errorf("the task is %q after another session tried it, want working", got)
			}
			if l := a.mustCall("tasks/list", map[string]any{}); !strings.Contains(string(l), id) {
				t.Errorf("its session's tasks/list: %s", l)
			}
			if res := a.mustCall("tasks/cancel", map[string]any{"taskId": id}); !strings.Contains(string(res), `"status":"cancelled"`) {
				t.Errorf("tasks/cancel: %s", res)
			}
			a.waitFor("cancelled status", func(notes, _ []json.RawMessage) bool { return hasStatus(notes, id, "cancelled") })
			b.mu.Lock()
			defer b.mu.Unlock()
			for _, n := range b.notes {
				if strings.Contains(string(n), id) {
					t.Errorf("another session got a notification about the task: %s", n)
				}
			}
		})
	}
}

// For a client that does not declare tasks, mcpmux lists a task-required
// tool without its execution and runs it as a task when called plainly:
// the client answers what the task asks and gets its result.
func TestTaskRequiredToolForClientsWithoutTasks(t *testing.T) {
	f := newTaskFixture(t)
	h := newHarness(t, map[string]*mcp.Server{"t": f.srv}, taskRules, pinned2025("t"))
	c, _ := stdioClient(t, h.agg, DefaultProfile, `{"elicitation":{}}`)
	list := c.mustCall("tools/list", map[string]any{})
	if d := toolDef(t, list, "t__work"); d["execution"] != nil || d["description"] != "works as a task" {
		t.Errorf("t__work listed as %v, want it without execution", d)
	}
	if ex := fmt.Sprint(toolDef(t, list, "t__maybe")["execution"]); ex != "map[taskSupport:optional]" {
		t.Errorf("t__maybe's execution: %s (a plain call works: it stays)", ex)
	}
	f.Ask()
	f.Release()
	res := c.mustCall("tools/call", map[string]any{"name": "t__work", "arguments": map[string]any{"ask": true}})
	if !strings.Contains(string(res), "done for Ada") || strings.Contains(string(res), "hf.co/datasets") {
		t.Errorf("plain call: %s, want the task's result with the answer, redacted", res)
	}
	if ids := f.tasks.IDs(); len(ids) != 1 || f.tasks.Task(ids[0]) != "completed" {
		t.Errorf("server tasks %v: want one, completed", ids)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.asked) != 1 || len(c.notes) != 0 {
		t.Errorf("asked %d times, notified %s; want asked once, no task notifications", len(c.asked), c.notes)
	}

	// The go-sdk's own client, which knows no tasks, calls it too.
	cs := h.client(DefaultProfile)
	if got := text(call(t, cs, "t__work", map[string]any{})); !strings.Contains(got, "done for nobody") {
		t.Errorf("go-sdk client's call: %q", got)
	}
}

// Without sessions (--stateless) no client can own a task: mcpmux offers
// no tasks capability and runs a task-required tool itself, also when a
// client asks for a task.
func TestStatelessRunsTasksItself(t *testing.T) {
	f := newTaskFixture(t)
	h := newHarness(t, map[string]*mcp.Server{"t": f.srv}, "", pinned2025("t"))
	// As New would have with Options.Stateless, which mcpTasks is given
	// at construction.
	h.agg.stateless, h.agg.mcpTasks.stateless = true, true
	c, init := stdioClient(t, h.agg, DefaultProfile, clientWithTasks)
	if strings.Contains(string(init), `"tasks"`) {
		t.Errorf("initialize: %s, want no tasks capability", init)
	}
	if d := toolDef(t, c.mustCall("tools/list", map[string]any{}), "t__work"); d["execution"] != nil {
		t.Errorf("t__work listed with execution %v", d["execution"])
	}
	f.Release()
	if res := c.mustCall("tools/call", map[string]any{"name": "t__work", "arguments": map[string]any{}, "task": map[string]any{}}); !strings.Contains(string(res), "done for nobody") {
		t.Errorf("task-augmented call: %s, want the task's result", res)
	}
}

func TestLiftPayload(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1},"task":{"ttl":5}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"mcpmux/task":{"ttl":5}},"arguments":{"a":1},"name":"x"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7},"task":{}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"mcpmux/task":{},"progressToken":7},"name":"x"}}`},
		{`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"capabilities":{"tasks":{"list":{}}}}}]`,
			`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"id":"a","jsonrpc":"2.0","method":"initialize","params":{"_meta":{"mcpmux/client-tasks":{"list":{}}},"capabilities":{"tasks":{"list":{}}}}}]`},
		// Nothing to lift: the bytes stay.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task","arguments":{"task":1}}}`, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":null}}`, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{},"_meta":[1]}}`, ``},
		{`{"method":"initialize","params":`, ``},
	} {
		out, changed := liftPayload([]byte(tc.in))
		if tc.want == "" {
			if changed || string(out) != tc.in {
				t.Errorf("liftPayload(%s) = %s, want it unchanged", tc.in, out)
			}
			continue
		}
		if !changed || string(out) != tc.want {
			t.Errorf("liftPayload(%s)\n = %s\nwant %s", tc.in, out, tc.want)
		}
	}
}

func TestWithoutField(t *testing.T) {
	for _, tc := range []struct{ in, key, want string }{
		{`{"name":"a","execution":{"taskSupport":"required"},"x":1}`, "execution", `{"name":"a","x":1}`},
		{`{"execution":{"taskSupport":"required"}, "name":"a"}`, "execution", `{"name":"a"}`},
		{`{"name":"a", "execution" : {"t":[1,2]} }`, "execution", `{"name":"a" }`},
		{`{"execution":{}}`, "execution", `{}`},
		{`{"name":"a"}`, "execution", `{"name":"a"}`},
	} {
		out, err := withoutField(json.RawMessage(tc.in), tc.key)
		if err != nil || string(out) != tc.want {
			t.Errorf("withoutField(%s) = %s, %v; want %s", tc.in, out, err, tc.want)
		}
		if err == nil && !json.Valid(out) {
			t.Errorf("withoutField(%s) = %s: not JSON", tc.in, out)
		}
	}
}

// events returns the JSON-RPC messages of an event stream, as they come.
func events(t *testing.T, body io.ReadCloser) <-chan string {
	t.Cleanup(func() { body.Close() })
	out := make(chan string, 100)
	go func() {
		defer close(out)
		defer body.Close()
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" {
				out <- data
			}
		}
	}()
	return out
}

// next returns the next message of a stream that satisfies ok.
func next(t *testing.T, msgs <-chan string, what string, ok func(string) bool) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, open := <-msgs:
			if !open {
				t.Fatalf("the stream ended before %s", what)
			}
			if ok(m) {
				return m
			}
		case <-timeout:
			t.Fatalf("no %s", what)
		}
	}
}

// Over HTTP, a task-augmented call's task survives the go-sdk (lifted from
// the POST's body), its status notifications come on the session's GET
// stream, and what it asks comes on the stream of tasks/result.
func TestTasksOverHTTP(t *testing.T) {
	f := newTaskFixture(t)
	h := newHarness(t, map[string]*mcp.Server{"t": f.srv}, "", pinned2025("t"))
	ts := httptest.NewServer(h.serveHTTP(nil))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { f.Ask(); f.Release() }) // before ts.Close, which waits for the calls
	s := &testkit.Session{T: t, URL: ts.URL + "/mcp", Ctx: context.Background()}
	resp := s.Post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + clientWithTasks + `,"clientInfo":{"name":"h","version":"1"}}}`)
	s.ID = resp.Header.Get("Mcp-Session-Id")
	if init := next(t, events(t, resp.Body), "initialize result", func(string) bool { return true }); !strings.Contains(init, `"tasks":`+string(tasksCapability)) {
		t.Errorf("initialize: %s", init)
	}
	s.Post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before ts.Close, which waits for the stream
	get := s.Request(http.MethodGet, "").WithContext(ctx)
	get.Header.Set("Accept", "text/event-stream")
	gresp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	standalone := events(t, gresp.Body)

	created := next(t, events(t, s.Post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t__work","arguments":{"ask":true},"task":{"ttl":60000}}}`).Body), "CreateTaskResult", func(string) bool { return true })
	var cr struct {
		Result json.RawMessage
	}
	_ = json.Unmarshal([]byte(created), &cr)
	id := taskIDOf(t, cr.Result)
	// The GET stream may be open before the SDK has written on it: the
	// status of a change after it is certain to come.
	f.Ask()
	next(t, standalone, "input_required status on the GET stream", func(m string) bool {
		return strings.Contains(m, `"notifications/tasks/status"`) && strings.Contains(m, `"input_required"`) && strings.Contains(m, id)
	})

	result := events(t, s.Post(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"`+id+`"}}`).Body)
	ask := next(t, result, "elicitation on the tasks/result stream", func(m string) bool { return strings.Contains(m, `"elicitation/create"`) })
	var req struct{ ID json.RawMessage }
	_ = json.Unmarshal([]byte(ask), &req)
	s.Post(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"accept","content":{"name":"Ada"}}}`).Body.Close()
	f.Release()
	if res := next(t, result, "task result", func(m string) bool { return strings.Contains(m, `"id":3`) }); !strings.Contains(res, "done for Ada") {
		t.Errorf("tasks/result: %s", res)
	}
}

// An elicitation reaches the client as the server asked it: the go-sdk
// fills in a mode the server left out, which mcpmux takes away again.
func TestElicitationKeepsItsMode(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{"e": fixtureServer("e", map[string]mcp.ToolHandler{"echo": echo("")})}, "", nil)
	c, _ := stdioClient(t, h.agg, DefaultProfile, `{"elicitation":{"form":{},"url":{}}}`)
	var ss *mcp.ServerSession
	for s := range h.agg.Server(DefaultProfile).Sessions() {
		ss = s
	}
	caller := h.agg.newCaller(context.Background(), ss)
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	for _, tc := range []struct {
		params *mcp.ElicitParams
		want   string
	}{
		{&mcp.ElicitParams{Message: "as sent", RequestedSchema: schema}, `{"message":"as sent","requestedSchema":`},
		{&mcp.ElicitParams{Mode: "form", Message: "with its mode", RequestedSchema: schema}, `"mode":"form"`},
	} {
		if _, err := caller.Elicit(context.Background(), tc.params); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		got := string(c.asked[len(c.asked)-1])
		c.mu.Unlock()
		if !strings.HasPrefix(got, tc.want) && !strings.Contains(got, tc.want) || (tc.params.Mode == "" && strings.Contains(got, `"mode"`)) {
			t.Errorf("elicitation params %s, want %s", got, tc.want)
		}
	}
}

// A call mcpmux makes itself (mcpmux__call_tool, a fallback) is plain,
// also when the client's own call was task-augmented: it gets a result,
// and mcpmux runs a task-required tool as a task for it.
func TestDerivedCallsArePlain(t *testing.T) {
	f := newTaskFixture(t)
	h := newHarness(t, map[string]*mcp.Server{"t": f.srv}, allMetaTools, nil)
	c, _ := stdioClient(t, h.agg, DefaultProfile, clientWithTasks)
	f.Release()
	res := c.mustCall("tools/call", map[string]any{"name": "mcpmux__call_tool", "arguments": map[string]any{"name": "t__work", "arguments": map[string]any{}}, "task": map[string]any{}})
	if !strings.Contains(string(res), "done for nobody") {
		t.Errorf("task-augmented mcpmux__call_tool: %s, want the tool's result", res)
	}
}

// A session's tasks are kept by mcpTasks alone, with no aggregator: each
// session addresses only its own, a reused id names the latest task, a
// dropped task is forgotten, and all of a session's go when it ends, also
// those it was given after it ended.
func TestMCPTasksKeepEachSessionsOwn(t *testing.T) {
	var ended []func() // the session-end funcs, as clientSession keeps them
	endedAlready := false
	m := &mcpTasks{log: slog.New(slog.DiscardHandler), whenEnded: func(_ *mcp.ServerSession, f func()) {
		if endedAlready {
			f()
			return
		}
		ended = append(ended, f)
	}}
	ss, other := &mcp.ServerSession{}, &mcp.ServerSession{}
	a := &clientTask{id: "a", entry: &Entry{Server: "s1"}}
	b := &clientTask{id: "b", entry: &Entry{Server: "s1"}}
	b2 := &clientTask{id: "b", entry: &Entry{Server: "s2"}}
	m.addTask(ss, a)
	m.addTask(ss, b)
	m.addTask(ss, b2)
	if got := m.task(ss, "b"); got != b2 {
		t.Errorf("task b = %+v, want the latest (of s2)", got)
	}
	if got := m.liveTasks(ss); len(got) != 2 || got[0] != a || got[1] != b2 {
		t.Errorf("live tasks = %v, want a, then the latest b", got)
	}
	if m.task(other, "a") != nil || m.liveTasks(other) != nil {
		t.Error("another session addresses the session's task")
	}
	m.dropTask(ss, a)
	if m.task(ss, "a") != nil {
		t.Error("a dropped task is still addressed")
	}
	if len(ended) != 1 {
		t.Fatalf("%d session-end funcs registered, want one per session", len(ended))
	}
	ended[0]()
	if m.task(ss, "b") != nil || len(m.sessions) != 0 {
		t.Errorf("tasks kept after the session ended: %v", m.sessions)
	}
	endedAlready = true
	m.addTask(ss, a)
	if m.task(ss, "a") != nil || len(m.sessions) != 0 {
		t.Errorf("a task given after the session ended is kept: %v", m.sessions)
	}
}
