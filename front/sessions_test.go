package front

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// initializedSession connects a client to a plain go-sdk server over
// Streamable HTTP and returns the server's side of the session.
func initializedSession(t *testing.T) *mcp.ServerSession {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	initialized := make(chan *mcp.ServerSession, 1)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, m string, r mcp.Request) (mcp.Result, error) {
			if m == "initialize" {
				initialized <- r.GetSession().(*mcp.ServerSession)
			}
			return next(ctx, m, r)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return <-initialized
}

// A session with a request open is not idle, however long the request
// takes; it idles from the end of its last request.
func TestSessionIdleOnlyWithoutRequests(t *testing.T) {
	var cur atomic.Pointer[config.Settings]
	cur.Store(config.DefaultSettings())
	tr := newSessionTracker(cur.Load)
	ss := initializedSession(t)
	ended := tr.add(context.Background(), ss)
	go func() { _ = ss.Wait(); ended() }()
	tr.mu.Lock()
	tracked := tr.sessions[ss.ID()]
	tr.mu.Unlock()
	end := tr.begin(ss.ID())
	cur.Store(&config.Settings{SessionTimeout: time.Nanosecond})
	tr.expire(ss.ID(), tracked) // what its timer does, while a request is open
	if tr.count() != 1 {
		t.Fatal("a session with a request open was closed")
	}
	end()
	testkit.Eventually(t, "the idle session is closed", func() bool { return tr.count() == 0 })
}

// The place admit holds for an initialize becomes its session's when the
// session is tracked, before the client has the answer: a client that
// opens sessions back to back finds them counted once each. A request
// that opens none gives its place back when answered.
func TestAdmissionBecomesTheSession(t *testing.T) {
	settings := config.DefaultSettings()
	settings.MaxSessions = 2
	tr := newSessionTracker(func() *config.Settings { return settings })
	a, _, ok := tr.admit()
	if !ok || tr.count() != 1 {
		t.Fatalf("admitted %v, %d counted; want the place held", ok, tr.count())
	}
	ss := initializedSession(t)
	tr.add(context.WithValue(context.Background(), admissionKey{}, a), ss)
	if n := tr.count(); n != 1 {
		t.Errorf("%d counted once the session is tracked, before its request is answered; want 1", n)
	}
	if _, _, ok := tr.admit(); !ok {
		t.Error("the next initialize was refused at max_sessions 2 with one session open")
	}
	a.done()
	if n := tr.count(); n != 2 {
		t.Errorf("%d counted after the first request was answered; want its session and the second place", n)
	}
}

// Only an initialize without a session id opens a session, and takes a
// place of max_sessions: the go-sdk answers any other request without one
// (server/discover, which go-sdk clients send first) on a session that
// ends with it.
func TestOpensSession(t *testing.T) {
	for _, c := range []struct {
		method, session, body string
		stateless, want       bool
	}{
		{"POST", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, false, true},
		{"POST", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, false, false},
		{"POST", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false, false},
		{"POST", "", ` [{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, false, true},
		{"POST", "S1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, false, false},
		{"POST", "S1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, true, true},
		{"GET", "", ``, false, false},
	} {
		r := httptest.NewRequest(c.method, "/mcp", nil)
		if c.session != "" {
			r.Header.Set(sessionIDHeader, c.session)
		}
		if got := opensSession(r, []byte(c.body), c.stateless); got != c.want {
			t.Errorf("%s session %q stateless %v %s: %v, want %v", c.method, c.session, c.stateless, c.body, got, c.want)
		}
	}
}
