package front

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// watchingEngine is an engine whose sessions the front tracks, as
// mcpmux's aggregator has them tracked.
type watchingEngine struct {
	engine
	started func(context.Context, *mcp.ServerSession) func()
}

func (e *watchingEngine) WatchSessions(started func(context.Context, *mcp.ServerSession) func()) {
	e.started = started
}

// A call its client cancels with notifications/cancelled gets no answer:
// the go-sdk answers it all the same, and the front drops that answer and
// holds the call's stream open without it (a stream ended without its
// answer would have the client reconnect for it again and again), until
// the session ends, or the instance drains.
func TestCancelledCallGetsNoAnswer(t *testing.T) {
	for _, end := range []string{"session deleted", "drain"} {
		t.Run(end, func(t *testing.T) {
			e := &watchingEngine{engine: engine{settings: config.DefaultSettings()}}
			running := make(chan struct{}, 1)
			srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, &mcp.ServerOptions{
				InitializedHandler: func(ctx context.Context, req *mcp.InitializedRequest) {
					ended := e.started(ctx, req.Session)
					go func() { _ = req.Session.Wait(); ended() }()
				},
			})
			mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				running <- struct{}{}
				<-ctx.Done()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "cancelled, answered anyway"}}}, nil, nil
			})
			e.servers = map[string]*mcp.Server{"": srv}
			f := New(&Options{Engine: e})
			ts := httptest.NewServer(f)
			t.Cleanup(ts.Close)

			post := func(session, body string) *http.Response {
				t.Helper()
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if session != "" {
					req.Header.Set("Mcp-Session-Id", session)
					req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			resp.Body.Close()
			session := resp.Header.Get("Mcp-Session-Id")
			post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
			testkit.Eventually(t, "the session is tracked", func() bool { return f.sessions.count() == 1 })

			call := post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
			defer call.Body.Close()
			<-running
			post(session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`).Body.Close()

			// The stream stays open without the answer until it is ended.
			events := make(chan string, 16)
			go func() {
				defer close(events)
				sc := bufio.NewScanner(call.Body)
				for sc.Scan() {
					if line := sc.Text(); strings.HasPrefix(line, "data:") && strings.Contains(line, `"id":2`) {
						events <- line
					}
				}
			}()
			// The go-sdk has answered (its answer was dropped) once the
			// tool's handler returned; a ping after the cancellation is
			// answered after it on the same session.
			post(session, `{"jsonrpc":"2.0","id":3,"method":"ping"}`).Body.Close()
			select {
			case line, open := <-events:
				if open {
					t.Fatalf("the cancelled call was answered: %s", line)
				}
				t.Fatal("the cancelled call's stream ended before its session (its client would reconnect for the answer)")
			case <-time.After(200 * time.Millisecond):
				// Still open, and silent: what the client sees directly.
			}
			switch end {
			case "session deleted":
				req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
				req.Header.Set("Mcp-Session-Id", session)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			case "drain":
				f.Drain()
			}
			for line := range events {
				t.Fatalf("the cancelled call was answered: %s", line)
			}
		})
	}
}
