package aggregator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/front"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// securityServer serves a harness over HTTP on loopback.
// Package front serves it; these tests are of the two together.
func securityServer(t *testing.T, settingsYAML string, opts *front.Options) (*harness, *httptest.Server) {
	t.Helper()
	h := newHarness(t, map[string]*mcp.Server{
		"alpha": fixtureServer("alpha", map[string]mcp.ToolHandler{"echo": echo("alpha:")}),
	}, settingsYAML, nil)
	h.front = h.serveHTTP(opts)
	ts := httptest.NewServer(h.front)
	t.Cleanup(ts.Close)
	return h, ts
}

const initBody = testkit.InitializeRequest

// post sends one JSON-RPC message the way a Streamable HTTP client does.
var post = testkit.Post

func TestHTTPOriginAllowList(t *testing.T) {
	_, ts := securityServer(t, "allowed_origins: [\"https://app.example.com\"]\n", &front.Options{AllowedOrigins: []string{"http://devbox:*"}})
	for _, c := range []struct {
		origin string
		want   int
	}{
		{"", http.StatusOK}, // non-browser clients send none
		{"http://localhost:5173", http.StatusOK},
		{"http://127.0.0.1:8080", http.StatusOK},
		{"http://[::1]:3000", http.StatusOK},
		{"https://app.example.com", http.StatusOK}, // from mcpmux.yaml
		{"http://devbox:9000", http.StatusOK},      // from --allowed-origin
		{"https://evil.example", http.StatusForbidden},
		{"http://localhost.evil.example", http.StatusForbidden},
		{"null", http.StatusForbidden},
	} {
		hdr := map[string]string{}
		if c.origin != "" {
			hdr["Origin"] = c.origin
		}
		resp, body := post(t, ts.URL+"/mcp", initBody, hdr)
		if resp.StatusCode != c.want {
			t.Errorf("Origin %q: status %d, want %d (%s)", c.origin, resp.StatusCode, c.want, body)
		}
		if c.want == http.StatusForbidden && !strings.Contains(body, "allowed_origins") {
			t.Errorf("Origin %q: 403 body %q does not say how to allow it", c.origin, body)
		}
	}
	// /healthz too: a foreign page must not read it.
	req, _ := http.NewRequest("GET", ts.URL+"/healthz", nil)
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("/healthz with a foreign Origin: %d, want 403", resp.StatusCode)
	}
}

// A loopback listener reached under a foreign Host name (DNS rebinding)
// answers 403 on every path, before the token and without naming a
// profile; loopback names pass; a request with no Host at all (an
// HTTP/1.0 probe) reaches /healthz.
func TestHTTPDNSRebindingHost(t *testing.T) {
	_, ts := securityServer(t, "profiles:\n  secret-profile: {tool_config: [alpha]}\n", nil)
	for _, path := range []string{"/healthz", "/metrics", "/mcp", "/mcp/secret-profile", "/mcp/nope", "/nope"} {
		for _, host := range []string{"evil.example:80", "evil.example", "127.0.0.1.nip.io"} {
			req, _ := http.NewRequest("GET", ts.URL+path, nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), "secret-profile") {
				t.Errorf("GET %s, Host %s: %d %.200q, want 403 without the profile names", path, host, resp.StatusCode, body)
			}
		}
	}
	for _, host := range []string{"localhost:1234", "127.0.0.1", "[::1]:80"} {
		req, _ := http.NewRequest("GET", ts.URL+"/metrics", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /metrics, Host %s: %d, want 200", host, resp.StatusCode)
		}
	}

	resp, err := getHTTP10(t, ts, "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status"`) {
		t.Errorf("HTTP/1.0 /healthz without a Host: %d %q, want 200 with the health", resp.StatusCode, body)
	}
}

// getHTTP10 sends GET path to ts as HTTP/1.0 without a Host header, as a
// plain health checker may, and returns the answer; the connection is
// closed when the test ends.
func getHTTP10(t *testing.T, ts *httptest.Server, path string) (*http.Response, error) {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return http.ReadResponse(bufio.NewReader(conn), nil)
}

func TestHTTPBearerToken(t *testing.T) {
	_, ts := securityServer(t, "", &front.Options{Tokens: front.NewTokens("s3cret-token")})
	for _, c := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Bearer s3cret-tokenX", http.StatusUnauthorized},
		{"Basic s3cret-token", http.StatusUnauthorized},
		{"s3cret-token", http.StatusUnauthorized},
		{"Bearer s3cret-token", http.StatusOK},
		{"bearer  s3cret-token ", http.StatusOK},
	} {
		hdr := map[string]string{}
		if c.auth != "" {
			hdr["Authorization"] = c.auth
		}
		resp, body := post(t, ts.URL+"/mcp", initBody, hdr)
		if resp.StatusCode != c.want {
			t.Errorf("Authorization %q: %d, want %d (%s)", c.auth, resp.StatusCode, c.want, body)
		}
		if c.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: 401 without WWW-Authenticate: Bearer", c.auth)
		}
	}
	// /healthz stays open for probes.
	resp, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "s3cret") {
		t.Errorf("/healthz: %d %s", resp.StatusCode, body)
	}
}

// A session belongs to the token that opened it: the holder of another
// valid token cannot use its session id.
func TestHTTPSessionBelongsToItsToken(t *testing.T) {
	_, ts := securityServer(t, "", &front.Options{Tokens: front.NewTokens("token-of-alice", "token-of-bob")})
	resp, body := post(t, ts.URL+"/mcp", initBody, map[string]string{"Authorization": "Bearer token-of-alice"})
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q, session %q", resp.StatusCode, body, id)
	}
	if len(id) < 26 {
		t.Errorf("session id %q is short: want at least 128 bits of randomness", id)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	resp, body = post(t, ts.URL+"/mcp", ping, map[string]string{"Authorization": "Bearer token-of-bob", "Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("Bob using Alice's session: %d %q, want 403", resp.StatusCode, body)
	}
	resp, body = post(t, ts.URL+"/mcp", ping, map[string]string{"Authorization": "Bearer token-of-alice", "Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("Alice using her session: %d %q", resp.StatusCode, body)
	}
}

func TestHTTPBodyLimit(t *testing.T) {
	_, ts := securityServer(t, "max_request_bytes: 2KiB\n", nil)
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}`
	resp, body := post(t, ts.URL+"/mcp", big, nil)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "max_request_bytes") {
		t.Errorf("announced oversized body: %d %q, want 413 naming max_request_bytes", resp.StatusCode, body)
	}
	// Chunked: no Content-Length, the limit applies while reading.
	req, _ := http.NewRequest("POST", ts.URL+"/mcp", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	if r2.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversized body: %d %q, want 413", r2.StatusCode, b2)
	}
	// Under the limit works, and a client's session works end to end.
	if resp, body := post(t, ts.URL+"/mcp", initBody, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("small body: %d %q", resp.StatusCode, body)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res := call(t, cs, "alpha__echo", map[string]any{"text": "hi"}); text(res) != "alpha:hi" {
		t.Errorf("call: %q", text(res))
	}
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": strings.Repeat("y", 4096)}})
	if err == nil || !strings.Contains(err.Error(), "Request Entity Too Large") {
		t.Errorf("oversized call through a client: err %v, want a 413", err)
	}
	// The 413 carries a JSON-RPC error, so the client keeps its session.
	if res := call(t, cs, "alpha__echo", map[string]any{"text": "again"}); text(res) != "alpha:again" {
		t.Errorf("call after a 413: %q", text(res))
	}
}

// Tokens.Set rotates the accepted tokens while serving: the removed token
// gets 401 from then on, for the session it opened too; an empty set is
// refused and changes nothing.
func TestHTTPTokensRotate(t *testing.T) {
	tokens := front.NewTokens("old-token")
	_, ts := securityServer(t, "", &front.Options{Tokens: tokens})
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	resp, body := post(t, ts.URL+"/mcp", initBody, bearer("old-token"))
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize with the old token: %d %q", resp.StatusCode, body)
	}
	if err := tokens.Set([]string{"new-token"}); err != nil {
		t.Fatal(err)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	withSession := bearer("old-token")
	withSession["Mcp-Session-Id"], withSession["Mcp-Protocol-Version"] = id, "2025-11-25"
	if resp, body := post(t, ts.URL+"/mcp", ping, withSession); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old token's session after the rotation: %d %q, want 401", resp.StatusCode, body)
	}
	if resp, body := post(t, ts.URL+"/mcp", initBody, bearer("old-token")); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old token after the rotation: %d %q, want 401", resp.StatusCode, body)
	}
	if resp, body := post(t, ts.URL+"/mcp", initBody, bearer("new-token")); resp.StatusCode != http.StatusOK {
		t.Errorf("the new token: %d %q", resp.StatusCode, body)
	}
	if err := tokens.Set([]string{"", ""}); err == nil {
		t.Error("Set accepted an empty set of tokens")
	}
	if resp, body := post(t, ts.URL+"/mcp", initBody, bearer("new-token")); resp.StatusCode != http.StatusOK {
		t.Errorf("the new token after a refused Set: %d %q", resp.StatusCode, body)
	}
}

// /healthz names the config files that could not be used, with their line
// and error, and forgets them once they are fixed.
func TestHealthNamesInvalidFiles(t *testing.T) {
	h, ts := securityServer(t, "", &front.Options{})
	health := func() Health {
		t.Helper()
		resp, err := http.Get(ts.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got Health
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := health(); got.InvalidFiles == nil || len(got.InvalidFiles) != 0 {
		t.Errorf("invalid_files = %#v, want []", got.InvalidFiles)
	}
	h.agg.SetInvalidFiles([]*config.FileError{{File: "/cfg/tool/bad.yaml", Line: 3, Err: errors.New(`url: "ftp://x" is not an http(s) URL`)}})
	got := health()
	want := []InvalidFile{{File: "/cfg/tool/bad.yaml", Line: 3, Error: `url: "ftp://x" is not an http(s) URL`}}
	if !reflect.DeepEqual(got.InvalidFiles, want) || got.Status != "ok" {
		t.Errorf("health = %+v, want status ok and invalid_files %+v", got, want)
	}
	h.agg.SetInvalidFiles(nil)
	if got := health(); len(got.InvalidFiles) != 0 {
		t.Errorf("invalid_files after the fix = %+v", got.InvalidFiles)
	}
}
