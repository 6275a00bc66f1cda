package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// closingServer serves, over Streamable HTTP with an event store, tools
// that close their call's stream before answering: "replayed" answers
// after closing (the answer is stored and replayed on resumption),
// "silent" never answers and records its cancellation.
func closingServer(t *testing.T, cancelled chan<- struct{}) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "closing", Version: "1"}, nil)
	closeStream := func(req *mcp.CallToolRequest) {
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
		}
	}
	s.AddTool(&mcp.Tool{Name: "replayed", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		closeStream(req)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "replayed answer"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "silent", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		closeStream(req)
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestResumedStreamThatStaysSilentEndsTheCall(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	url := closingServer(t, cancelled)
	cfg, ferr := config.ParseServer("closing.yaml", []byte(fmt.Sprintf("name: closing\nurl: %s\nresume_timeout: 50ms\n", url)), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool := NewPool(nil)
	defer pool.Close(context.Background(), time.Second)
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	srv := pool.Get("closing")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var closedWith atomic.Int64
	var closedCount atomic.Int32
	params := func(tool string) CallParams {
		return CallParams{
			Params: &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}},
			StreamClosed: func(retry time.Duration) bool {
				closedCount.Add(1)
				closedWith.Store(int64(retry))
				return false
			},
		}
	}

	raw, err := srv.CallTool(ctx, params("replayed"))
	if res := testkit.RawText(raw); err != nil || res != "replayed answer" {
		t.Fatalf("replayed: %s, %v; want the answer the server replayed", raw, err)
	}
	if closedCount.Load() != 1 || time.Duration(closedWith.Load()) != 20*time.Millisecond {
		t.Errorf("StreamClosed was called %d times with %v, want once with the server's retry (20ms)", closedCount.Load(), time.Duration(closedWith.Load()))
	}

	_, err = srv.CallTool(ctx, params("silent"))
	var lost *ResultLostError
	if !errors.As(err, &lost) || ctx.Err() != nil {
		t.Fatalf("silent: %v, want a *ResultLostError before the call's own deadline", err)
	}
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the server was not told the call is cancelled")
	}
}

func TestStreamWatchDisarmsOnData(t *testing.T) {
	lost := make(chan error, 2)
	_, w := watchCall(context.Background(), "s", time.Millisecond, nil, func(err error) { lost <- err })

	w.resuming()
	w.sawData(true) // the resumed stream delivers: no timer any more
	w.mu.Lock()
	armed := w.timer != nil
	w.mu.Unlock()
	if armed {
		t.Fatal("a message on the resumed stream left the timer running")
	}
	w.resuming() // the stream ended and is resumed again: silent this time
	if err := <-lost; !errors.As(err, new(*ResultLostError)) {
		t.Fatalf("lost with %v, want a *ResultLostError", err)
	}
	w.finish()
}
