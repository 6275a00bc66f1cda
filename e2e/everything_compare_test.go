package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestServerEverythingAnswersMatch compares every answer of
// server-everything directly and through mcpmux, as JSON, field by field
// and in order: the same requests from the same client, which declares
// sampling, elicitation and roots, those and tasks, or nothing. Through
// mcpmux the server runs with a shared connection and with a per-client
// one.
//
// Left out are the tools whose answers cannot match between two runs
// (get-env shows each process's environment, gzip-file-as-resource fetches
// from the network, the toggle-* tools start timers). The task tool,
// simulate-research-query, is called as a task by the client that declares
// tasks (with and without a question to the client during tasks/result),
// and plainly by the others, for whom mcpmux runs it as a task (directly,
// they get an error). The *-async tools are listed only to the client
// that declares it runs the server's sampling and elicitation requests as
// tasks (tasks.requests): directly it runs them, through mcpmux mcpmux
// does and asks it plainly, and the server sees the same.
func TestServerEverythingAnswersMatch(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(nodeBin, "mcp-server-everything")
	for _, caps := range []rawCaps{{host: true}, {}, {host: true, tasks: true}} {
		for _, session := range []string{"shared", "per-client"} {
			t.Run(fmt.Sprintf("capabilities=%v/%s", caps, session), func(t *testing.T) {
				t.Parallel()
				direct, directInit := startRawClient(t, exec.Command(bin, "stdio"), caps, nil)
				dir := writeConfig(t, map[string]string{"tool/x.yaml": npmServer(t, "x", "mcp-server-everything", "stdio") + "session: " + session + "\n"})
				cmd := exec.Command(mcpmuxBin, "--config", dir)
				logs := newLogBuffer()
				cmd.Stderr = logs
				// On a busy machine the server may take longer to start
				// than initialize waits; the instructions are compared.
				ready := func() { logs.waitFor(t, regexp.MustCompile(`msg="servers started"`)) }
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("mcpmux log:\n%s", logs.String())
					}
				})
				via, viaInit := startRawClient(t, cmd, caps, ready)

				// The server's instructions reach the client, under its name.
				var di, vi struct{ Instructions string }
				_ = json.Unmarshal(directInit, &di)
				_ = json.Unmarshal(viaInit, &vi)
				if di.Instructions == "" || !strings.Contains(vi.Instructions, "## x\n\n"+strings.TrimSpace(di.Instructions)) {
					t.Errorf("instructions through mcpmux:\n%s\nwant them to hold the server's:\n%s", vi.Instructions, di.Instructions)
				}

				d := everythingAnswers(t, direct, "")
				v := everythingAnswers(t, via, "x__")
				compareAnswers(t, d, v)
				if !caps.tasks {
					// Through mcpmux the plain call works (directly it is refused).
					for _, a := range v {
						if a.key == plainResearch && !strings.Contains(string(a.json), "# Research Report: python") {
							t.Errorf("%s through mcpmux: %s, want the research report", a.key, a.json)
						}
					}
				}
			})
		}
	}
}

// What differs through mcpmux today, each with the reason, in one place;
// part B of issue 15 (tasks, elicitation answers and the raw JSON seam
// they bring) shrinks these lists.
var (
	// expectedAnswerDiffs are whole answers that differ.
	expectedAnswerDiffs = map[string]string{
		plainResearch: "for a client without tasks, mcpmux runs a task-required tool as a task: directly the call is refused",
	}
	// droppedFields are fields mcpmux does not pass on yet; they are left
	// out of both sides before comparing.
	droppedFields = map[string]string{}
	// droppedFalseFields are fields that are lost when they are false: the
	// go-sdk's types have them as bools with omitempty. They are left out
	// of both sides when false.
	droppedFalseFields = map[string]string{}
)

// answer is one request's answer, named by the request.
type answer struct {
	key  string
	json json.RawMessage
}

// plainResearch is the answer key of a plain call of the task-required
// simulate-research-query.
const plainResearch = "tools/call simulate-research-query (plain)"

// everythingAnswers makes the same requests of server-everything on c,
// with names prefixed by prefix (direct: none), and returns the answers in
// order.
func everythingAnswers(t *testing.T, c *rawClient, prefix string) []answer {
	t.Helper()
	var out []answer
	add := func(key string, raw json.RawMessage) {
		out = append(out, answer{key, normalizeAnswer(raw, prefix)})
	}
	list := func(method, field string) []json.RawMessage {
		var all []json.RawMessage
		params := map[string]any{}
		for range 100 {
			raw := c.call(method, params)
			var page map[string]json.RawMessage
			if err := json.Unmarshal(raw, &page); err != nil {
				t.Fatalf("%s: %s", method, raw)
			}
			var items []json.RawMessage
			_ = json.Unmarshal(page[field], &items)
			all = append(all, items...)
			var next string
			_ = json.Unmarshal(page["nextCursor"], &next)
			if next == "" {
				break
			}
			params = map[string]any{"cursor": next}
		}
		b, _ := json.Marshal(all)
		add(method, b)
		return all
	}
	names := map[string]bool{}
	tools := list("tools/list", "tools")
	for i, tool := range tools {
		var def struct {
			Name      string
			Execution struct{ TaskSupport string }
		}
		_ = json.Unmarshal(tool, &def)
		names[strings.TrimPrefix(def.Name, prefix)] = true
		if def.Execution.TaskSupport == "required" && !c.caps.tasks {
			// To a client without tasks, mcpmux lists a task-required tool
			// without its execution (it runs the tool as a task for it).
			if prefix != "" {
				t.Errorf("%s is listed to a client without tasks with its execution", def.Name)
			}
			var m map[string]json.RawMessage
			_ = json.Unmarshal(tool, &m)
			delete(m, "execution")
			tools[i], _ = json.Marshal(m)
		}
	}
	b, _ := json.Marshal(tools)
	out[len(out)-1] = answer{"tools/list", normalizeAnswer(b, prefix)}
	list("prompts/list", "prompts")
	resources := list("resources/list", "resources")
	list("resources/templates/list", "resourceTemplates")

	call := func(tool string, args map[string]any) {
		if !names[tool] {
			return // not listed to this client: the tools/list answers show it
		}
		key := "tools/call " + tool
		if tool == "get-sum" && args["a"] == "x" {
			key += " (bad arguments)"
		}
		add(key, c.call("tools/call", map[string]any{"name": prefix + tool, "arguments": args}))
	}
	call("echo", map[string]any{"message": "transparent"})
	call("get-annotated-message", map[string]any{"messageType": "error", "includeImage": true})
	call("get-resource-links", map[string]any{"count": 3})
	call("get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2})
	call("get-structured-content", map[string]any{"location": "Chicago"})
	call("get-sum", map[string]any{"a": 19, "b": 23})
	call("get-sum", map[string]any{"a": "x"})
	call("get-tiny-image", map[string]any{})
	call("get-roots-list", map[string]any{})
	call("trigger-sampling-request", map[string]any{"prompt": "tell a joke", "maxTokens": 20})
	call("trigger-elicitation-request", map[string]any{})
	call("trigger-url-elicitation", map[string]any{"url": "https://example.com/login"})
	// Listed only to a client that runs the server's sampling or
	// elicitation requests as tasks; through mcpmux, mcpmux runs them.
	call("trigger-sampling-request-async", map[string]any{"prompt": "tell a joke", "maxTokens": 20})
	call("trigger-elicitation-request-async", map[string]any{})
	if names["trigger-long-running-operation"] {
		c.notifications()
		res := c.call("tools/call", map[string]any{"name": prefix + "trigger-long-running-operation", "arguments": map[string]any{"duration": 0.3, "steps": 3}, "_meta": map[string]any{"progressToken": "client-token-7"}})
		add("tools/call trigger-long-running-operation", res)
		var progress []json.RawMessage
		for _, n := range c.notifications() {
			var m struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(n, &m) == nil && m.Method == "notifications/progress" {
				progress = append(progress, m.Params)
			}
		}
		b, _ := json.Marshal(progress)
		add("progress of trigger-long-running-operation", b)
	}

	if names["simulate-research-query"] {
		if c.caps.tasks {
			out = append(out, researchTaskAnswers(t, c, prefix)...)
		} else {
			add(plainResearch, c.call("tools/call", map[string]any{"name": prefix + "simulate-research-query", "arguments": map[string]any{"topic": "python", "ambiguous": true}}))
			for _, n := range c.notifications() {
				if strings.Contains(string(n), "notifications/tasks/status") {
					t.Errorf("a client without tasks was sent %s", n)
				}
			}
			c.requests()
		}
	}

	for _, p := range []struct {
		name string
		args map[string]string
	}{
		{"simple-prompt", nil},
		{"args-prompt", map[string]string{"city": "Lyon", "state": "ARA"}},
		{"args-prompt", map[string]string{"city": "Lyon"}},
		{"completable-prompt", map[string]string{"department": "Sales", "name": "Eve"}},
		{"resource-prompt", map[string]string{"resourceType": "Text", "resourceId": "3"}},
		{"no-such-prompt", nil},
	} {
		params := map[string]any{"name": prefix + p.name}
		if p.args != nil {
			params["arguments"] = p.args
		}
		add(fmt.Sprintf("prompts/get %s %v", p.name, p.args), c.call("prompts/get", params))
	}
	add("completion/complete prompt", c.call("completion/complete", map[string]any{
		"ref":      map[string]any{"type": "ref/prompt", "name": prefix + "completable-prompt"},
		"argument": map[string]any{"name": "department", "value": "S"},
	}))
	add("completion/complete resource template", c.call("completion/complete", map[string]any{
		"ref":      map[string]any{"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"},
		"argument": map[string]any{"name": "resourceId", "value": "1"},
	}))

	uris := []string{"demo://resource/dynamic/text/1", "demo://resource/dynamic/blob/2", "demo://resource/no-such-thing"}
	for _, r := range resources {
		var res struct{ URI string }
		_ = json.Unmarshal(r, &res)
		uris = append(uris, res.URI)
	}
	for _, uri := range uris {
		add("resources/read "+uri, c.call("resources/read", map[string]any{"uri": uri}))
	}
	add("resources/subscribe", c.call("resources/subscribe", map[string]any{"uri": "demo://resource/static/document/architecture.md"}))
	add("resources/unsubscribe", c.call("resources/unsubscribe", map[string]any{"uri": "demo://resource/static/document/architecture.md"}))
	add("logging/setLevel", c.call("logging/setLevel", map[string]any{"level": "info"}))
	add("ping", c.call("ping", nil))
	return out
}

// researchTaskAnswers runs simulate-research-query as a task twice, as a
// client with tasks does: without and with a question to the client
// (ambiguous), which the server asks during tasks/result. Answers that
// depend on timing (a running task's status message) are cut to what does
// not.
func researchTaskAnswers(t *testing.T, c *rawClient, prefix string) []answer {
	t.Helper()
	var out []answer
	add := func(key string, raw json.RawMessage) {
		out = append(out, answer{key, normalizeAnswer(raw, prefix)})
	}
	running := func(raw json.RawMessage) json.RawMessage {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		delete(m, "statusMessage")
		delete(m, "lastUpdatedAt")
		b, _ := json.Marshal(m)
		return b
	}
	c.notifications()
	c.requests()
	for _, ambiguous := range []bool{false, true} {
		key := fmt.Sprintf("simulate-research-query task (ambiguous=%v)", ambiguous)
		created := c.call("tools/call", map[string]any{"name": prefix + "simulate-research-query", "arguments": map[string]any{"topic": "python", "ambiguous": ambiguous}, "task": map[string]any{"ttl": 60000}})
		var cr struct {
			Task map[string]json.RawMessage `json:"task"`
		}
		if err := json.Unmarshal(created, &cr); err != nil || cr.Task == nil {
			t.Fatalf("%s: %s, want a CreateTaskResult", key, created)
		}
		var id string
		_ = json.Unmarshal(cr.Task["taskId"], &id)
		b, _ := json.Marshal(map[string]json.RawMessage{"task": running(mustMarshal(cr.Task))})
		add(key+": tools/call", b)
		if !ambiguous {
			add(key+": tasks/get while running", running(c.call("tasks/get", map[string]any{"taskId": id})))
		}
		add(key+": tasks/result", c.call("tasks/result", map[string]any{"taskId": id}))
		var asked []map[string]json.RawMessage
		for _, r := range c.requests() {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(r, &m)
			delete(m, "id") // each hop numbers its own
			asked = append(asked, m)
		}
		add(key+": requests of the server during tasks/result", mustMarshal(asked))
		add(key+": tasks/get when over", c.call("tasks/get", map[string]any{"taskId": id}))
		add(key+": tasks/cancel when over", c.call("tasks/cancel", map[string]any{"taskId": id}))
		var statuses []json.RawMessage
		for _, n := range c.notifications() {
			var m struct {
				Method string
				Params json.RawMessage
			}
			if json.Unmarshal(n, &m) == nil && m.Method == "notifications/tasks/status" {
				statuses = append(statuses, m.Params)
			}
		}
		b, _ = json.Marshal(statuses)
		add(key+": notifications/tasks/status", b)
	}
	add("tasks/list", c.call("tasks/list", map[string]any{}))
	// A task id the session does not have: mcpmux answers, with the code a
	// server answers with and a message of its own.
	var unknown struct {
		Error struct{ Code int }
	}
	_ = json.Unmarshal(c.call("tasks/get", map[string]any{"taskId": "no-such-task"}), &unknown)
	add("tasks/get of an unknown task: error code", mustMarshal(unknown.Error.Code))
	return out
}

func mustMarshal(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// normalizeAnswer makes an answer comparable: names through mcpmux lose
// their prefix, clocks and random ids are masked (in blobs too), the cache
// fields the go-sdk writes out with the spec's defaults (ttlMs 0,
// cacheScope public: the same as absent) are left out, and so are the
// fields of droppedFields and droppedFalseFields.
func normalizeAnswer(raw json.RawMessage, prefix string) json.RawMessage {
	if prefix != "" {
		raw = bytes.ReplaceAll(raw, []byte(`"`+prefix), []byte(`"`))
		raw = bytes.ReplaceAll(raw, []byte(`'`+prefix), []byte(`'`))
		raw = bytes.ReplaceAll(raw, []byte(` `+prefix), []byte(` `))
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	v = normalizeValue(v)
	b, _ := json.Marshal(v)
	b = uuidRE.ReplaceAll(b, []byte("UUID"))
	b = taskIDRE.ReplaceAll(b, []byte("TASKID"))
	b = isoTimeRE.ReplaceAll(b, []byte("TIMESTAMP"))
	return clockRE.ReplaceAll(b, []byte("HH:MM:SS"))
}

// uuidRE matches the random ids a server makes up per call (elicitation
// ids), which differ between two runs; taskIDRE, server-everything's task
// ids; isoTimeRE, the times of a task.
var (
	uuidRE    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	taskIDRE  = regexp.MustCompile(`\b([0-9a-f]{32}|[A-Z2-7]{26})\b`)
	isoTimeRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
)

func normalizeValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k := range droppedFields {
			delete(x, k)
		}
		for k := range droppedFalseFields {
			if x[k] == false {
				delete(x, k)
			}
		}
		if ttl, ok := x["ttlMs"].(float64); ok && ttl == 0 {
			delete(x, "ttlMs")
		}
		if x["cacheScope"] == "public" {
			delete(x, "cacheScope")
		}
		if blob, ok := x["blob"].(string); ok {
			if b, err := base64.StdEncoding.DecodeString(blob); err == nil {
				x["blob"] = string(clockRE.ReplaceAll(b, []byte("HH:MM:SS")))
			}
		}
		for k, e := range x {
			x[k] = normalizeValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeValue(e)
		}
	}
	return v
}

// compareAnswers fails for every answer that differs, and for answers
// listed as expected to differ that no longer do.
func compareAnswers(t *testing.T, direct, via []answer) {
	t.Helper()
	keys := func(as []answer) []string {
		var k []string
		for _, a := range as {
			k = append(k, a.key)
		}
		return k
	}
	if !slices.Equal(keys(direct), keys(via)) {
		t.Errorf("different requests were made:\n  direct %v\n     via %v", keys(direct), keys(via))
		return
	}
	for i, d := range direct {
		v := via[i]
		var dv, vv any
		_ = json.Unmarshal(d.json, &dv)
		_ = json.Unmarshal(v.json, &vv)
		same := reflect.DeepEqual(dv, vv)
		why, expected := expectedAnswerDiffs[d.key]
		switch {
		case !same && expected:
			t.Logf("%s differs, as expected (%s)", d.key, why)
		case !same:
			t.Errorf("%s differs through mcpmux:\n  direct %s\n     via %s", d.key, d.json, v.json)
		case expected:
			t.Logf("%s is listed in expectedAnswerDiffs (%s) but no longer differs: take it off the list", d.key, why)
		}
	}
}
