package aggregator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

func settings(t *testing.T, yaml string) *config.Settings {
	t.Helper()
	s, ferr := config.ParseSettings("mcpmux.yaml", []byte(yaml), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	return s
}

// httpClient connects a client of sessions (2025-11-25) over HTTP.
func httpClient(t *testing.T, url string) (*mcp.ClientSession, error) {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// Past max_sessions, an initialize gets 503 with a JSON-RPC error that
// says why, carrying the request's id; a session that ends makes room,
// and a reload raising the limit applies at once.
func TestMaxSessions(t *testing.T) {
	h, ts := securityServer(t, "max_sessions: 2\n", nil)
	a, err := httpClient(t, ts.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpClient(t, ts.URL+"/mcp"); err != nil {
		t.Fatal(err)
	}
	resp, body := post(t, ts.URL+"/mcp", strings.Replace(initBody, `"id":1`, `"id":"third"`, 1), nil)
	var rpc struct {
		ID    string
		Error struct {
			Code    int
			Message string
		}
	}
	_ = json.Unmarshal([]byte(body), &rpc)
	if resp.StatusCode != http.StatusServiceUnavailable || rpc.ID != "third" || rpc.Error.Code != -32000 || !strings.Contains(rpc.Error.Message, "max_sessions") {
		t.Errorf("third session: %d %s, want 503 with a JSON-RPC error naming max_sessions", resp.StatusCode, body)
	}
	// A session's own requests are not refused.
	if res := call(t, a, "alpha__echo", map[string]any{"text": "hi"}); text(res) != "alpha:hi" {
		t.Errorf("call of an admitted session: %q", text(res))
	}

	a.Close()
	testkit.Eventually(t, "the closed session is forgotten", func() bool { return h.front.OpenSessions() == 1 })
	if _, err := httpClient(t, ts.URL+"/mcp"); err != nil {
		t.Errorf("a session after one ended: %v", err)
	}
	h.agg.SetSettings(settings(t, "max_sessions: 3\n"))
	if _, err := httpClient(t, ts.URL+"/mcp"); err != nil {
		t.Errorf("a session after max_sessions was raised: %v", err)
	}
}

// session_timeout closes a session with no request open for that long (a
// client that went away without ending it); a reload shortening it
// applies to the sessions already idle.
func TestSessionTimeoutFollowsReloads(t *testing.T) {
	h, ts := securityServer(t, "session_timeout: 1h\n", nil)
	resp, body := post(t, ts.URL+"/mcp", initBody, nil)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" || h.front.OpenSessions() != 1 {
		t.Fatalf("initialize: %d %q, session %q, %d open", resp.StatusCode, body, id, h.front.OpenSessions())
	}
	shorter := settings(t, "session_timeout: 10ms\n")
	h.agg.SetSettings(shorter)
	h.front.Reload(shorter)
	testkit.Eventually(t, "the idle session is closed", func() bool { return h.front.OpenSessions() == 0 })
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if resp, body := post(t, ts.URL+"/mcp", ping, map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request of the closed session: %d %q, want 404", resp.StatusCode, body)
	}
}

// A client that stops sending mid-body is cut off after
// request_body_timeout; a response that streams for longer than that is
// not. Time is the bubble's, and HTTP runs on in-memory connections.
func TestRequestBodyTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := newHarness(t, map[string]*mcp.Server{
			"alpha": fixtureServer("alpha", map[string]mcp.ToolHandler{
				"slow": func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					select {
					case <-release:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
				},
			}),
		}, "request_body_timeout: 100ms\n", nil)
		h.front = h.serveHTTP(nil)
		l := newPipeListener()
		srv := &http.Server{Handler: h.front}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })

		conn, err := l.DialContext(context.Background(), "tcp", "")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		go fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		answer, err := io.ReadAll(bufio.NewReader(conn))
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("a stalled request body was never cut off")
		}
		if !strings.Contains(string(answer), "400") {
			t.Errorf("stalled body: %q, want a 400 before the connection closes", answer)
		}

		hc := &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}
		t.Cleanup(hc.CloseIdleConnections)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://mcpmux/mcp", HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha__slow", Arguments: map[string]any{}})
			if err != nil {
				res = toolError("protocol error: %v", err)
			}
			done <- res
		}()
		// Four times request_body_timeout, with the call's response open,
		// and whatever its end would set off done.
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()
		select {
		case res := <-done:
			t.Fatalf("the call ended before it was released: %q", text(res))
		default:
		}
		close(release)
		if res := <-done; res.IsError || text(res) != "done" {
			t.Errorf("a call answered after request_body_timeout: %q", text(res))
		}
	})
}

// pipeListener serves HTTP on in-memory connections (net.Pipe), which
// live in a synctest bubble as a real socket cannot.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// DialContext connects to the listener.
func (l *pipeListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// A call of one more client than a per-client server's max_clients is an
// isError result saying so; once a client leaves, another gets its place.
func TestMaxClients(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"browser": fixtureServer("browser", map[string]mcp.ToolHandler{"open": echo("opened:")}),
	}, "", map[string]string{"browser": "session: per-client\nmax_clients: 1\n"})
	first, second := h.client(DefaultProfile), h.client(DefaultProfile)
	if res := call(t, first, "browser__open", map[string]any{"text": "a"}); res.IsError {
		t.Fatalf("first client: %q", text(res))
	}
	res := call(t, second, "browser__open", map[string]any{"text": "b"})
	if !res.IsError || !strings.Contains(text(res), "at its limit of 1 client connections (max_clients)") {
		t.Errorf("second client: isError=%v %q", res.IsError, text(res))
	}
	if res := call(t, first, "browser__open", map[string]any{"text": "again"}); res.IsError {
		t.Errorf("first client again: %q", text(res))
	}
	first.Close()
	testkit.Eventually(t, "the first client's connection is closed", func() bool {
		return h.pool.Get("browser").Status().Clients == 0
	})
	if res := call(t, second, "browser__open", map[string]any{"text": "b"}); res.IsError {
		t.Errorf("second client after the first left: %q", text(res))
	}
}
