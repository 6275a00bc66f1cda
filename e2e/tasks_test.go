package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// mcpTaskClient is a client of a Streamable HTTP endpoint that calls tools as
// tasks (MCP 2025-11-25), driven by hand: the go-sdk's client has no
// tasks. It declares elicitation and tasks, and confirms what it is asked.
// Its requests are a rawSession's (streams_test.go).
type mcpTaskClient struct{ rawSession }

func newMCPTaskClient(t *testing.T, url string) *mcpTaskClient {
	t.Helper()
	return newMCPTaskClientWith(t, url, `{"elicitation":{},"tasks":{"list":{},"cancel":{}}}`)
}

// newMCPTaskClientWith initializes a client declaring caps.
func newMCPTaskClientWith(t *testing.T, url, caps string) *mcpTaskClient {
	t.Helper()
	c := &mcpTaskClient{rawSession{testkit.Session{T: t, URL: url, Ctx: testContext(t)}}}
	resp := c.Post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"tasks","version":"1"}}}`)
	c.ID = resp.Header.Get("Mcp-Session-Id")
	if c.ID == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	<-c.messages(resp)
	c.Post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	return c
}

// messages returns the JSON-RPC messages of a response, an event stream or
// one JSON message.
func (c *mcpTaskClient) messages(resp *http.Response) <-chan string {
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			out <- string(b)
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" {
				out <- data
			}
		}
	}()
	return out
}

// call sends a request and returns its answer (result or error), and the
// requests the server made on its stream meanwhile (without their ids),
// each confirmed.
func (c *mcpTaskClient) call(method string, params any) (answer json.RawMessage, asked []json.RawMessage) {
	c.T.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	msgs := c.messages(c.Post(string(b)))
	timeout := time.After(testTimeout)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				c.T.Fatalf("%s: the stream ended without an answer", method)
			}
			var msg map[string]json.RawMessage
			if json.Unmarshal([]byte(m), &msg) != nil {
				c.T.Fatalf("%s: %s", method, m)
			}
			switch {
			case msg["method"] != nil && msg["id"] != nil:
				var result any = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
				if string(msg["method"]) == `"sampling/createMessage"` {
					result = map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "sampled"}}
				}
				reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg["id"], "result": result})
				c.Post(string(reply)).Body.Close()
				delete(msg, "id")
				asked = append(asked, mustMarshal(msg))
			case msg["result"] != nil:
				return msg["result"], asked
			case msg["error"] != nil:
				return mustMarshal(map[string]json.RawMessage{"error": msg["error"]}), asked
			}
		case <-timeout:
			c.T.Fatalf("%s: no answer", method)
		}
	}
}

// taskAnswers calls the conformance fixture's test_task_required (named
// name) as a task, and returns every answer, normalized.
func taskAnswers(t *testing.T, c *mcpTaskClient, name string) []answer {
	t.Helper()
	var out []answer
	add := func(key string, raw json.RawMessage) {
		out = append(out, answer{key, normalizeAnswer(raw, "")})
	}
	created, _ := c.call("tools/call", map[string]any{"name": name, "arguments": map[string]any{"message": "hello"}, "task": map[string]any{"ttl": 60000}})
	add("tools/call with a task", created)
	var cr struct {
		Task struct{ TaskID string }
	}
	if json.Unmarshal(created, &cr) != nil || cr.Task.TaskID == "" {
		t.Fatalf("tools/call with a task: %s, want a CreateTaskResult", created)
	}
	id := cr.Task.TaskID
	res, asked := c.call("tasks/result", map[string]any{"taskId": id})
	add("tasks/result", res)
	add("requests of the server during tasks/result", mustMarshal(asked))
	got, _ := c.call("tasks/get", map[string]any{"taskId": id})
	add("tasks/get when over", got)
	list, _ := c.call("tasks/list", map[string]any{})
	add("tasks/list", list)
	cancel, _ := c.call("tasks/cancel", map[string]any{"taskId": id})
	add("tasks/cancel when over", cancel)
	return out
}

// tasktestIDRE matches internal/tasktest's task ids.
var tasktestIDRE = regexp.MustCompile(`task-\d+-[A-Z2-7]{8}`)

// normalizeTaskIDs masks the fixture's task ids, which differ between
// two runs.
func normalizeTaskIDs(as []answer) []answer {
	for i := range as {
		as[i].json = tasktestIDRE.ReplaceAll(as[i].json, []byte("TASKID"))
	}
	return as
}

// TestTaskRequiredToolThroughMcpmux calls the conformance fixture's
// test_task_required through mcpmux, with the fixture over Streamable HTTP
// (shared and per-client connection) and as a stdio child: a client that
// declares tasks gets every answer it gets directly, and one that does
// not (the go-sdk's) gets the task's result from a plain call, which
// directly is refused.
func TestTaskRequiredToolThroughMcpmux(t *testing.T) {
	t.Parallel()
	url := conformanceHTTP(t)
	direct := normalizeTaskIDs(taskAnswers(t, newMCPTaskClient(t, url), "test_task_required"))
	if got := string(direct[1].json); !strings.Contains(got, `Task completed: message=\"hello\", confirmation: action=accept, content={\"confirm\":true}`) {
		t.Fatalf("direct tasks/result: %s", got)
	}
	cs, err := connectURL(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "test_task_required", Arguments: map[string]any{"message": "plain"}}); err == nil {
		t.Fatalf("a plain call directly: %v, want it refused (-32601)", res)
	}

	for _, tc := range []struct{ name, cfg string }{
		{"http-shared", fmt.Sprintf("url: %s\n", url)},
		{"http-per-client", fmt.Sprintf("url: %s\nsession: per-client\n", url)},
		{"stdio", fmt.Sprintf("tool_command: %q\nenv:\n  %s: conformance\n", fixtureBin, fixtureEnv)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startHTTP(t, writeConfig(t, map[string]string{"tool/x.yaml": "name: x\nprefix: \"\"\n" + tc.cfg}))
			compareAnswers(t, direct, normalizeTaskIDs(taskAnswers(t, newMCPTaskClient(t, p.url+"/mcp"), "test_task_required")))

			// A client without tasks: mcpmux runs the task for its plain
			// call, and forwards the question the task asks.
			plain, err := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": false}}, nil
				},
			}).Connect(testContext(t), &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", MaxRetries: -1}, legacySession)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = plain.Close() })
			var listed *mcp.Tool
			for tool, err := range plain.Tools(testContext(t), nil) {
				if err != nil {
					t.Fatal(err)
				}
				if tool.Name == "test_task_required" {
					listed = tool
				}
			}
			if listed == nil {
				t.Fatal("test_task_required is not listed")
			}
			res := callTool(t, plain, "test_task_required", map[string]any{"message": "plain"})
			if got := resultText(res); got != `Task completed: message="plain", confirmation: action=accept, content={"confirm":false}` {
				t.Errorf("plain call through mcpmux: %q, want the task's result", got)
			}
		})
	}
}

// stream opens the session's GET event stream and returns its messages.
func (c *mcpTaskClient) stream() <-chan string {
	c.T.Helper()
	req := c.Request(http.MethodGet, "")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.T.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		c.T.Fatalf("GET stream: %s", resp.Status)
	}
	return c.messages(resp)
}

// statusesOf returns the notifications/tasks/status of task id on a
// stream, until (and with) the one that says it completed.
func statusesOf(t *testing.T, msgs <-chan string, id string) json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	timeout := time.After(testTimeout)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("the GET stream ended before the task completed; statuses so far %s", out)
			}
			var n struct {
				Method string
				Params json.RawMessage
			}
			if json.Unmarshal([]byte(m), &n) != nil || n.Method != "notifications/tasks/status" || !strings.Contains(string(n.Params), id) {
				continue
			}
			out = append(out, n.Params)
			if strings.Contains(string(n.Params), `"status":"completed"`) {
				return normalizeAnswer(mustMarshal(out), "")
			}
		case <-timeout:
			t.Fatalf("no completed status; statuses so far %s", out)
		}
	}
}

// Over Streamable HTTP on both sides, a server's notifications/tasks/status
// reach the client that owns the task on its GET stream, each one as the
// client gets it directly; another client of the same shared connection
// gets none of them.
func TestTaskStatusOverHTTP(t *testing.T) {
	t.Parallel()
	url := startEverythingHTTP(t, filepath.Join(nodeBin, "mcp-server-everything"))
	p := startHTTP(t, writeConfig(t, map[string]string{"tool/x.yaml": "name: x\nprefix: \"\"\nurl: " + url + "\n"}))
	run := func(endpoint string) (statuses json.RawMessage, other <-chan string) {
		c := newMCPTaskClient(t, endpoint)
		bystander := newMCPTaskClient(t, endpoint)
		events, other := c.stream(), bystander.stream()
		created, _ := c.call("tools/call", map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "go"}, "task": map[string]any{}})
		var cr struct {
			Task struct{ TaskID string }
		}
		if json.Unmarshal(created, &cr) != nil || cr.Task.TaskID == "" {
			t.Fatalf("%s: tools/call with a task: %s", endpoint, created)
		}
		return statusesOf(t, events, cr.Task.TaskID), other
	}
	direct, _ := run(url)
	via, bystander := run(p.url + "/mcp")
	if string(direct) != string(via) {
		t.Errorf("task statuses through mcpmux:\n%s\nwant, as directly:\n%s", via, direct)
	}
	for {
		select {
		case m := <-bystander:
			if strings.Contains(m, "notifications/tasks/status") {
				t.Errorf("another client of the shared connection got %s", m)
			}
			continue
		default:
		}
		break
	}
}

// A server that asks its client to sample as a task, over Streamable HTTP:
// mcpmux declares what its client declared, takes the server's
// task-augmented request and tasks/* off the event streams, runs the task
// and asks the client plainly; the server's async tool completes.
func TestServerAskedTaskOverHTTP(t *testing.T) {
	t.Parallel()
	url := startEverythingHTTP(t, filepath.Join(nodeBin, "mcp-server-everything"))
	for _, session := range []string{"shared", "per-client"} {
		t.Run(session, func(t *testing.T) {
			t.Parallel()
			p := startHTTP(t, writeConfig(t, map[string]string{"tool/x.yaml": "name: x\nprefix: \"\"\nurl: " + url + "\nsession: " + session + "\n"}))
			c := newMCPTaskClientWith(t, p.url+"/mcp", `{"sampling":{},"tasks":{"requests":{"sampling":{"createMessage":{}}}}}`)
			res, asked := c.call("tools/call", map[string]any{"name": "trigger-sampling-request-async", "arguments": map[string]any{"prompt": "hi", "maxTokens": 5}})
			if !strings.Contains(string(res), "[COMPLETED] Async sampling completed!") || !strings.Contains(string(res), "Poll 1: completed") || !strings.Contains(string(res), `\"text\": \"sampled\"`) {
				t.Errorf("async sampling through mcpmux: %s", res)
			}
			if len(asked) != 1 || strings.Contains(string(asked[0]), `"task"`) {
				t.Errorf("the client was asked %s, want one plain sampling request", asked)
			}
		})
	}
}
