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
)

// waitUntil polls cond, bounded by the test timeout of an e2e wait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// A session with a request open is not idle, however long the request
// takes; it idles from the end of its last request.
func TestSessionIdleOnlyWithoutRequests(t *testing.T) {
	var cur atomic.Pointer[config.Settings]
	cur.Store(config.DefaultSettings())
	tr := newSessionTracker(cur.Load)
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
	ss := <-initialized
	ended := tr.add(ss)
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
	waitUntil(t, "the idle session is closed", func() bool { return tr.count() == 0 })
}
