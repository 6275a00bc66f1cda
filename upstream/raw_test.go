package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// exactResult is a tool result a server encodes itself: fields and number
// forms the go-sdk's types would not keep.
type exactResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *exactResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

// A tool's result reaches the caller as the server sent it: not decoded
// into the go-sdk's types and encoded again, which would drop what they
// do not know.
func TestCallToolResultAsSent(t *testing.T) {
	const sent = `{"content":[{"type":"text","text":"x","x-item":1}],"isError":false,"x-unknown":{"n":2.50,"big":12345678901234567890}}`
	var cancelled = make(chan string, 1)
	transport := func(cfg *config.Server) mcp.Transport {
		s := mcp.NewServer(&mcp.Implementation{Name: cfg.Name}, nil)
		s.AddTool(&mcp.Tool{Name: "exact", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("the middleware answers")
		})
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if r, ok := req.(*mcp.CallToolRequest); ok {
					switch r.Params.Name {
					case "exact":
						return &exactResult{raw: json.RawMessage(sent)}, nil
					case "slow":
						<-ctx.Done()
						return nil, ctx.Err()
					case "bad":
						return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such thing"}
					}
				}
				if method == "notifications/cancelled" {
					p, _ := req.GetParams().(*mcp.CancelledParams)
					if id, ok := p.RequestID.(string); ok { // not the go-sdk's own (its subscriptions/listen, at close)
						cancelled <- id
					}
				}
				return next(ctx, method, req)
			}
		})
		ct, st := mcp.NewInMemoryTransports()
		go func() {
			ss, err := s.Connect(context.Background(), st, nil)
			if err == nil {
				_ = ss.Wait()
			}
		}()
		return ct
	}
	pool := NewPool(&Options{Transport: transport})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	cfg, ferr := config.ParseServer("x.yaml", []byte("name: x\ntool_command: mem\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	srv := pool.Get("x")

	got, err := srv.CallTool(context.Background(), CallParams{Params: &mcp.CallToolParams{Name: "exact"}})
	if err != nil || string(got) != sent {
		t.Errorf("result: %s, %v\nwant the server's bytes: %s", got, err, sent)
	}

	_, err = srv.CallTool(context.Background(), CallParams{Params: &mcp.CallToolParams{Name: "bad"}})
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || rpc.Message != "no such thing" {
		t.Errorf("JSON-RPC error answer: %v, want an *RPCError with the server's code and message", err)
	}

	// A call that ends early is cancelled on the server, by its own id.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := srv.CallTool(ctx, CallParams{Params: &mcp.CallToolParams{Name: "slow"}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timed-out call: %v", err)
	}
	select {
	case id := <-cancelled:
		if len(id) <= len(rawIDPrefix) || id[:len(rawIDPrefix)] != rawIDPrefix {
			t.Errorf("cancelled request %q, want one of mcpmux's raw ids", id)
		}
	case <-time.After(10 * time.Second):
		t.Error("the server was not told the call was cancelled")
	}
}

// Over Streamable HTTP a server may send the headers of a call's answer
// only with the answer, so a call cancelled before it is still writing its
// request: the server must be told all the same.
func TestCallCancelledBeforeHeadersOverHTTP(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	release := make(chan struct{})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
			cancelled <- struct{}{}
		case <-release: // the test is over
		}
		return nil, ctx.Err()
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) }) // before ts.Close, which waits for the handler
	cfg, ferr := config.ParseServer("slow.yaml", []byte("name: slow\nurl: "+ts.URL+"\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool := NewPool(nil)
	defer pool.Close(context.Background(), time.Second)
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := pool.Get("slow").CallTool(ctx, CallParams{Params: &mcp.CallToolParams{Name: "slow"}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("call: %v, want its deadline", err)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Error("the server was not told the call was cancelled")
	}
}

// A request whose POST never reached the server (its connection broke, as
// when a server restarts) is sent again, once: nothing ran.
func TestCallResentWhenItsPostBrokeOff(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "flaky", Version: "1"}, nil)
	var calls atomic.Int32
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var broke atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && broke.CompareAndSwap(false, true) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close() // the POST breaks off before the server has it
			}
			return
		}
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	cfg, ferr := config.ParseServer("flaky.yaml", []byte("name: flaky\nurl: "+ts.URL+"\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool := NewPool(nil)
	defer pool.Close(context.Background(), time.Second)
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	res, err := pool.Get("flaky").CallTool(context.Background(), CallParams{Params: &mcp.CallToolParams{Name: "echo"}})
	if err != nil || testkit.RawText(res) != "ran" || !broke.Load() || calls.Load() != 1 {
		t.Errorf("call = %s, %v (broke %v, ran %d times); want it sent again and run once", res, err, broke.Load(), calls.Load())
	}
}

// A server that restarts while a call's POST is on its way breaks that
// POST off, and then refuses the request sent again on the old session as
// unknown: the call goes once more, on a new session, and runs once.
func TestCallResentWhenItsPostBrokeOffAndTheServerRestarted(t *testing.T) {
	var calls atomic.Int32
	newHandler := func() *mcp.StreamableHTTPHandler {
		s := mcp.NewServer(&mcp.Implementation{Name: "restarting", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}
	var current atomic.Pointer[mcp.StreamableHTTPHandler]
	current.Store(newHandler())
	var broke atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && broke.CompareAndSwap(false, true) {
			current.Store(newHandler()) // the server restarts, forgetting every session
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close() // and the POST in flight breaks off
			}
			return
		}
		current.Load().ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	cfg, ferr := config.ParseServer("restarting.yaml", []byte("name: restarting\nurl: "+ts.URL+"\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool := NewPool(nil)
	defer pool.Close(context.Background(), time.Second)
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	res, err := pool.Get("restarting").CallTool(context.Background(), CallParams{Params: &mcp.CallToolParams{Name: "echo"}})
	if err != nil || testkit.RawText(res) != "ran" || !broke.Load() || calls.Load() != 1 {
		t.Errorf("call = %s, %v (broke %v, ran %d times); want it sent again on a new session and run once", res, err, broke.Load(), calls.Load())
	}
}
