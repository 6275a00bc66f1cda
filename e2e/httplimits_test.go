package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Clients that open connections and stall mid-body hold at most
// max_connections (others wait to be accepted), and each only for
// request_body_timeout: then mcpmux cuts it off and serves the client
// that waited.
func TestStalledBodiesAreCutOff(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":    "max_connections: 4\nrequest_body_timeout: 1s\n",
		"tool/echo.yaml": fixture("echo", "echo"),
	})
	p := startHTTP(t, dir)
	p.logs.waitFor(t, regexp.MustCompile(`max_connections=4`))
	addr := strings.TrimPrefix(p.url, "http://")
	// Before the first stall: mcpmux starts a body's clock after this, so
	// no stalled connection can be cut off, and no place freed, within
	// request_body_timeout of it.
	stallsBegan := time.Now()
	var stalled []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", addr)
		stalled = append(stalled, c)
	}

	// A fifth client waits for a place, which a cut-off body frees.
	type answer struct {
		status string
		after  time.Duration // since the stalls began
	}
	answered := make(chan answer, 1)
	go func() {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: testTimeout}
		resp, err := c.Get(p.url + "/healthz")
		if err != nil {
			answered <- answer{err.Error(), time.Since(stallsBegan)}
			return
		}
		resp.Body.Close()
		answered <- answer{resp.Status, time.Since(stallsBegan)}
	}()
	for i, c := range stalled {
		_ = c.SetReadDeadline(time.Now().Add(testTimeout))
		got, err := io.ReadAll(bufio.NewReader(c))
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("stalled connection %d was never cut off", i)
		}
		if !strings.HasPrefix(string(got), "HTTP/1.1 400") {
			t.Errorf("stalled connection %d got %q, want a 400", i, got)
		}
	}
	select {
	case got := <-answered:
		if got.status != "200 OK" {
			t.Errorf("the waiting client: %s", got.status)
		}
		// A lower bound, which a slow machine only makes easier to meet:
		// without max_connections the client is served at once.
		if got.after < time.Second {
			t.Errorf("the waiting client was served %v after the stalls began, before request_body_timeout (1s) could cut one off: max_connections did not hold it back", got.after)
		}

	case <-time.After(testTimeout):
		t.Fatal("the waiting client was never served")
	}
}

// Through the binary: a foreign Host (DNS rebinding) gets 403 on
// /metrics and on an unknown profile, without the profile names; an
// HTTP/1.0 probe without any Host (HAProxy's default health check) gets
// /healthz.
func TestHostCheckOnEveryPath(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":    "profiles:\n  secret-profile: {tool_config: [echo]}\n",
		"tool/echo.yaml": fixture("echo", "echo"),
	})
	p := startHTTP(t, dir)
	for _, path := range []string{"/metrics", "/mcp/nope", "/healthz"} {
		req, _ := http.NewRequest("GET", p.url+path, nil)
		req.Host = "rebound.example:80"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "secret-profile") {
			t.Errorf("GET %s under a foreign Host: %d %.200q, want 403", path, resp.StatusCode, body)
		}
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /healthz HTTP/1.0\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"status"`) {
		t.Errorf("HTTP/1.0 /healthz without a Host: %d %q", resp.StatusCode, body)
	}
}
