package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// rawClient is an MCP client over stdio that works on the JSON of the
// messages, so that what an SDK would drop or fill in (an absent field, a
// field set to false) shows. It answers the server's requests like a host
// with the capabilities it declared: sampling, elicitation (form and URL)
// and roots, or none; and it may declare tasks.
type rawClient struct {
	t      *testing.T
	caps   rawCaps
	send   func([]byte) // writes one message to the server
	http   bool         // over Streamable HTTP; else stdio
	writeM sync.Mutex

	pending testkit.Pending

	mu    sync.Mutex
	notes []json.RawMessage // notifications, in order
	asked []json.RawMessage // the server's requests, in order
	tasks map[string]any    // the results of the tasks it ran for the server, by id
	root  string            // its root now, if changed (changeRoot)
	done  chan struct{}     // closed when stdout ends
}

// rawCaps are the capabilities a rawClient declares.
type rawCaps struct {
	host bool // sampling, elicitation and roots
	// tasks: it calls tools as tasks, and runs the server's sampling and
	// elicitation requests as tasks when asked (tasks.requests)
	tasks bool
	root  string // the root it answers roots/list with; file:///work/project if empty
}

func (c rawCaps) String() string {
	switch {
	case c.tasks:
		return "host+tasks"
	case c.host:
		return "host"
	}
	return "none"
}

// startRawClient starts cmd and initializes a session on protocol
// 2025-11-25, after before (if not nil) returns.
func startRawClient(t *testing.T, cmd *exec.Cmd, caps rawCaps, before func()) (*rawClient, json.RawMessage) {
	t.Helper()
	c := &rawClient{t: t, caps: caps, done: make(chan struct{})}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.send = func(b []byte) { _, _ = stdin.Write(append(b, '\n')) }
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Stderr == nil {
		cmd.Stderr = newLogBuffer()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	go c.read(stdout)
	if before != nil {
		before()
	}
	return c, c.initialize()
}

// initialize opens the session on protocol 2025-11-25 with c's
// capabilities, and returns the server's answer.
func (c *rawClient) initialize() json.RawMessage {
	caps := c.caps
	capabilities := `{}`
	switch {
	case caps.tasks:
		capabilities = `{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}},"tasks":{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}},"elicitation":{"create":{}}}}}`
	case caps.host:
		capabilities = `{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}}`
	}
	init := c.call("initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":`+capabilities+`,"clientInfo":{"name":"raw","version":"1"}}`))
	c.notify("notifications/initialized", nil)
	return init
}

func (c *rawClient) write(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.writeM.Lock()
	defer c.writeM.Unlock()
	c.send(b)
}

// read dispatches what the server sends: answers to their callers,
// requests to answer, notifications to the record.
func (c *rawClient) read(stdout io.Reader) {
	defer close(c.done)
	r := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 1 {
			c.dispatch(line)
		}
		if err != nil {
			return
		}
	}
}

func (c *rawClient) dispatch(line []byte) {
	var msg testkit.Message
	if err := json.Unmarshal(line, &msg); err != nil {
		return
	}
	switch {
	case msg.Method != "" && len(msg.ID) > 0:
		c.mu.Lock()
		c.asked = append(c.asked, append(json.RawMessage(nil), line...))
		c.mu.Unlock()
		c.answer(msg.ID, msg.Method, msg.Params)
	case msg.Method != "":
		c.mu.Lock()
		c.notes = append(c.notes, append(json.RawMessage(nil), line...))
		c.mu.Unlock()
	default:
		c.pending.Answer(msg)
	}
}

// answer replies to a request of the server as a host would.
func (c *rawClient) answer(id json.RawMessage, method string, params json.RawMessage) {
	reply := map[string]any{"jsonrpc": "2.0", "id": id}
	if !c.caps.tasks || !c.answerTask(reply, method, params) {
		c.reply(reply, method, params)
	}
	c.write(reply)
}

// reply sets reply's result or error for a request of the server.
func (c *rawClient) reply(reply map[string]any, method string, params json.RawMessage) {
	switch {
	case method == "ping":
		reply["result"] = map[string]any{}
	case !c.caps.host:
		reply["error"] = map[string]any{"code": -32601, "message": "Method not found: " + method}
	case method == "roots/list":
		c.mu.Lock()
		root := c.root
		c.mu.Unlock()
		if root == "" {
			root = c.caps.root
		}
		if root == "" {
			root = "file:///work/project"
		}
		reply["result"] = map[string]any{"roots": []any{map[string]any{"uri": root, "name": "project"}}}
	case method == "sampling/createMessage":
		// The content's fields in the order hosts write them (and the
		// go-sdk, which re-encodes a sampling result on its way through
		// mcpmux): the async sampling tool prints the result it got.
		reply["result"] = map[string]any{"role": "assistant", "model": "test-model", "content": json.RawMessage(`{"type":"text","text":"sampled"}`)}
	case method == "elicitation/create":
		var p struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(params, &p)
		if p.Mode == "url" {
			reply["result"] = map[string]any{"action": "decline"}
		} else {
			// Its keys out of order: the server must get the client's
			// bytes, not a re-encoding (server-everything prints them).
			reply["result"] = map[string]any{"action": "accept", "content": json.RawMessage(`{"name":"Ada","check":true,"integer":7}`)}
		}
	default:
		reply["error"] = map[string]any{"code": -32601, "message": "Method not found: " + method}
	}
}

// answerTask answers, for a client that runs them, the server's request
// augmented with a task and its tasks/* requests: the task is run at once,
// and reported completed from the first tasks/get. It reports whether the
// request was one of those.
func (c *rawClient) answerTask(reply map[string]any, method string, params json.RawMessage) bool {
	var p struct {
		Task   json.RawMessage `json:"task"`
		TaskID string          `json:"taskId"`
	}
	_ = json.Unmarshal(params, &p)
	state := func(id, status string) map[string]any {
		return map[string]any{"taskId": id, "status": status, "ttl": 60000, "pollInterval": 1000, "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch method {
	case "sampling/createMessage", "elicitation/create":
		if len(p.Task) == 0 {
			return false
		}
		id := rand.Text()
		var sub map[string]any
		c.mu.Unlock()
		c.answerPlain(&sub, method, params)
		c.mu.Lock()
		if c.tasks == nil {
			c.tasks = map[string]any{}
		}
		c.tasks[id] = sub
		reply["result"] = map[string]any{"task": state(id, "working")}
	case "tasks/get", "tasks/result", "tasks/cancel":
		res, ok := c.tasks[p.TaskID].(map[string]any)
		switch {
		case !ok:
			reply["error"] = map[string]any{"code": -32602, "message": "Failed to retrieve task: Task not found"}
		case method == "tasks/get":
			reply["result"] = state(p.TaskID, "completed")
		case method == "tasks/cancel":
			reply["error"] = map[string]any{"code": -32602, "message": "Cannot cancel task in terminal status: completed"}
		default:
			res["_meta"] = map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": p.TaskID}}
			reply["result"] = res
		}
	default:
		return false
	}
	return true
}

// answerPlain sets *result to the answer to a sampling or elicitation
// request (see answer).
func (c *rawClient) answerPlain(result *map[string]any, method string, params json.RawMessage) {
	reply := map[string]any{}
	c.reply(reply, method, params)
	*result, _ = reply["result"].(map[string]any)
}

// call sends a request and returns its result; a JSON-RPC error is
// returned as {"error": ...}, so that it can be compared like a result.
func (c *rawClient) call(method string, params any) json.RawMessage {
	c.t.Helper()
	_, ch := c.start(method, params)
	select {
	case r := <-ch:
		if r.Error != nil {
			return json.RawMessage(fmt.Sprintf(`{"error":%s}`, r.Error))
		}
		return r.Result
	case <-c.done:
		c.t.Fatalf("%s: the server closed its output", method)
	case <-time.After(testTimeout):
		c.t.Fatalf("%s: no answer", method)
	}
	return nil
}

// start sends a request and returns its id and where its answer will
// arrive.
func (c *rawClient) start(method string, params any) (int, <-chan testkit.Reply) {
	id, ch := c.pending.Start()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	c.write(msg)
	return id, ch
}

func (c *rawClient) notify(method string, params any) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	c.write(msg)
}

// changeRoot changes the client's root to uri, and tells the server with
// notifications/roots/list_changed.
func (c *rawClient) changeRoot(uri string) {
	c.mu.Lock()
	c.root = uri
	c.mu.Unlock()
	c.notify("notifications/roots/list_changed", map[string]any{})
}

// notifications returns and forgets the notifications received so far.
func (c *rawClient) notifications() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.notes
	c.notes = nil
	return out
}

// requests returns and forgets the server's requests received so far.
func (c *rawClient) requests() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.asked
	c.asked = nil
	return out
}
