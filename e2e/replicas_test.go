package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/internal/testkit"
	replicaset "github.com/mcpmux/mcpmux/replica"
)

// Clients of MCP 2026-07-28 behind haproxy's round robin (the shipped
// deploy/haproxy/haproxy.cfg): a call whose 2025-11-25 server asks its
// client mid-call is parked on one replica, and the retry that brings the
// answer reaches the other, which forwards it (docs/scaling.md).

// rpc2026 is the answer to a 2026-07-28 request: its result or error.
type rpc2026 struct {
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// callTool2026 sends tools/call of tool with params (name and _meta added) as a
// 2026-07-28 request, as a client of that protocol does: no session, the
// version, method and name in headers and in _meta.
func callTool2026(t *testing.T, url, tool string, params map[string]any) rpc2026 {
	t.Helper()
	params["name"] = tool
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e-replicas", "version": "1"},
	}
	resp := testkit.Open2026(testContext(t), t, url, nil, "tools/call", tool, params)
	defer resp.Body.Close()
	// 2026-07-28 answers an invalid-params error with 400 (SEP-2575),
	// and its JSON-RPC error in the body.
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("HTTP %s: %s", resp.Status, readAll(t, resp.Body))
	}
	// The answer: the body (JSON), or the event of the stream that
	// carries it (progress and log messages may come before it).
	var msg []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"id":1`) {
				msg = []byte(data)
				break
			}
		}
	} else {
		msg = []byte(readAll(t, resp.Body))
	}
	var out rpc2026
	if err := json.Unmarshal(msg, &out); err != nil {
		t.Fatalf("answer %q: %v", msg, err)
	}
	return out
}

// TestParkedCallRetriedOnAnotherReplica runs two replicas sharing a state
// key and naming each other as peers, behind haproxy. A 2026-07-28 client
// calls server-everything's elicitation tool: the call parks on one
// replica; haproxy's round robin sends the retry, with the answer, to the
// other, which forwards it; the server gets the answer and the client the
// result. A tampered state, and a signed one naming an address that is no
// peer, are refused without reaching any call. The client names no task
// and sends no token: its call gets a connection of its own (the server
// is per-client), which lasts while the call is parked.
func TestParkedCallRetriedOnAnotherReplica(t *testing.T) {
	dir := everythingDir(t)
	key := rand.Text() + rand.Text()
	keyFile := filepath.Join(t.TempDir(), "state-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addrs := []string{fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	var replicas []*replica
	for i, addr := range addrs {
		name := fmt.Sprintf("r%d", i+1)
		p := runHTTP(t, "replica "+name, exec.Command(mcpmuxBin, "--config", dir, "--http", addr, "--log-level", "debug",
			"--state-key-file", keyFile, "--peers", strings.Join(addrs, ",")))
		replicas = append(replicas, &replica{process: p, name: name, addr: addr})
	}
	for _, r := range replicas {
		r.logs.waitFor(t, regexp.MustCompile(`servers started`))
	}
	url, _ := startHAProxy(t, replicas)

	first := callTool2026(t, url, "ev__trigger-elicitation-request", map[string]any{"arguments": map[string]any{}})
	if first.Error != nil || first.Result["resultType"] != "input_required" {
		t.Fatalf("first call: %+v, want an input_required result", first)
	}
	state, _ := first.Result["requestState"].(string)
	var parkedOn, other *replica
	for i, r := range replicas {
		if strings.Contains(state, "@"+r.addr+".") {
			parkedOn, other = r, replicas[1-i]
		}
	}
	if parkedOn == nil {
		t.Fatalf("requestState %q names neither replica %v", state, addrs)
	}
	if strings.Contains(state, key) {
		t.Fatal("the state holds the key")
	}
	var keys []string
	for k := range first.Result["inputRequests"].(map[string]any) {
		keys = append(keys, k)
	}
	if len(keys) != 1 {
		t.Fatalf("inputRequests: %v, want the server's one question", first.Result["inputRequests"])
	}

	// A tampered state: refused, whichever replica gets it.
	tampered := "A" + state[1:]
	if state[0] == 'A' {
		tampered = "B" + state[1:]
	}
	bad := callTool2026(t, url, "ev__trigger-elicitation-request", map[string]any{
		"arguments": map[string]any{}, "requestState": tampered,
		"inputResponses": map[string]any{keys[0]: map[string]any{"action": "accept", "content": map[string]any{"name": "Mallory"}}},
	})
	if bad.Error == nil || !strings.Contains(bad.Error.Message, "invalid requestState") {
		t.Errorf("tampered state: %+v, want an invalid requestState error", bad)
	}
	// A state signed with the key but naming an address no replica has:
	// not forwarded there.
	outsider, err := replicaset.New(replicaset.Options{Key: []byte(key), Self: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	foreign := callTool2026(t, url, "ev__trigger-elicitation-request", map[string]any{
		"arguments": map[string]any{}, "requestState": outsider.Sign("X"),
		"inputResponses": map[string]any{keys[0]: map[string]any{"action": "accept", "content": map[string]any{"name": "Mallory"}}},
	})
	if foreign.Error == nil || !strings.Contains(foreign.Error.Message, "127.0.0.1:1 is not among its peers") {
		t.Errorf("state naming a non-peer: %+v, want an error saying it is not among the peers", foreign)
	}

	// The retry: haproxy's round robin has sent three requests since the
	// call (odd), so this one reaches the replica the call did not.
	done := callTool2026(t, url, "ev__trigger-elicitation-request", map[string]any{
		"arguments": map[string]any{}, "requestState": state,
		"inputResponses": map[string]any{keys[0]: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
	})
	if done.Error != nil || done.Result["resultType"] != "complete" {
		t.Fatalf("retry: %+v, want the call's result", done)
	}
	text, _ := json.Marshal(done.Result["content"])
	if !strings.Contains(string(text), "Ada") || strings.Contains(string(text), "Mallory") {
		t.Errorf("result %s, want the server's answer with the client's name, Ada", text)
	}
	forwarded := regexp.MustCompile(`forwarding a retry to the replica of its parked call.*replica=` + regexp.QuoteMeta(parkedOn.addr))
	if !forwarded.MatchString(other.logs.String()) {
		t.Errorf("replica %s did not forward the retry to %s (haproxy sent it elsewhere?)", other.name, parkedOn.name)
	}
	if forwarded.MatchString(parkedOn.logs.String()) {
		t.Errorf("replica %s forwarded a retry to itself", parkedOn.name)
	}
	// Its state is spent: a second retry with it finds no call.
	again := callTool2026(t, url, "ev__trigger-elicitation-request", map[string]any{
		"arguments": map[string]any{}, "requestState": state,
		"inputResponses": map[string]any{keys[0]: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
	})
	if again.Error == nil || !strings.Contains(again.Error.Message, "names no call waiting") {
		t.Errorf("second retry: %+v, want an error: no call waits", again)
	}
	// server-everything gets a connection per client (session: auto): the
	// call's, kept while it was parked, not closed with the request that
	// parked it.
	if m := regexp.MustCompile(`client left; closing its connection.* client=session-`).FindString(parkedOn.logs.String()); m != "" {
		t.Errorf("the parked call's connection was closed with the request that parked it: %s", m)
	}
	if strings.Contains(parkedOn.logs.String()+other.logs.String(), key) {
		t.Error("the state key appears in a replica's log")
	}
}
