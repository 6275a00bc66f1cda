package aggregator

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rpcErrorBody decodes a JSON-RPC error response.
func rpcErrorBody(t *testing.T, body string) (id any, code int, msg string) {
	t.Helper()
	var rpc struct {
		ID    any
		Error struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal([]byte(body), &rpc); err != nil {
		t.Fatalf("not a JSON-RPC response: %q", body)
	}
	return rpc.ID, rpc.Error.Code, rpc.Error.Message
}

// A draining replica says so on /healthz with 503, to HAProxy's HTTP/1.0
// probe without a Host too; refuses new sessions with 503 and a JSON-RPC
// error carrying the request's id; and goes on serving its open sessions.
func TestDrain(t *testing.T) {
	h, ts := securityServer(t, "", nil)
	open, err := httpClient(t, ts.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	h.agg.Drain()

	resp, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	var health Health
	_ = json.Unmarshal([]byte(body), &health)
	if resp.StatusCode != http.StatusServiceUnavailable || health.Status != StatusDraining || len(health.Servers) != 1 {
		t.Errorf("/healthz while draining: %d %s, want 503 with status draining and the servers", resp.StatusCode, body)
	}
	if resp, err := getHTTP10(t, ts, "/healthz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("HTTP/1.0 /healthz without a Host while draining: %v %v, want 503", resp, err)
	}

	resp, body = post(t, ts.URL+"/mcp", strings.Replace(initBody, `"id":1`, `"id":"late"`, 1), nil)
	id, code, msg := rpcErrorBody(t, body)
	if resp.StatusCode != http.StatusServiceUnavailable || id != "late" || code != -32000 || !strings.Contains(msg, "shutting down") {
		t.Errorf("initialize while draining: %d %s, want 503 with a JSON-RPC error for id late", resp.StatusCode, body)
	}
	if _, err := httpClient(t, ts.URL+"/mcp/nope"); err == nil {
		t.Error("a client connected to a draining replica")
	}
	if res := call(t, open, "alpha__echo", map[string]any{"text": "still here"}); res.IsError || text(res) != "alpha:still here" {
		t.Errorf("a call of an open session while draining: %+v", res)
	}
	if h.front.OpenSessions() != 1 {
		t.Errorf("sessions while draining: %d, want the open one", h.front.OpenSessions())
	}
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
