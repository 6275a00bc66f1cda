package upstream

//lint:file-ignore SA1019 the test checks that server-wide log messages of MCP 2025-11-25, which mcpmux forwards, reach the pool's listeners.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// A pool's listeners hear its servers' changed lists and server-wide log
// messages from when they listen: one that listens later hears what comes
// after, and nothing is told to a listener that does not exist yet.
func TestPoolEventsReachEveryListenerFromWhenItListens(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "a"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{}},
	})
	tool := func(name string) {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	tool("first")
	pool := memoryPool(t, srv)

	type heard struct{ changed, logs chan string }
	listen := func() heard {
		h := heard{make(chan string, 10), make(chan string, 10)}
		pool.Listen(Events{
			Changed: func(server string) { h.changed <- server },
			Log:     func(server string, p *mcp.LoggingMessageParams) { h.logs <- server + ": " + p.Data.(string) },
		})
		return h
	}
	want := func(what string, ch chan string, v string) {
		t.Helper()
		select {
		case got := <-ch:
			if got != v {
				t.Errorf("%s: heard %q, want %q", what, got, v)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: heard nothing, want %q", what, v)
		}
	}
	early := listen()
	// A log message outside any request: MCP 2025-11-25's session.
	a := server(t, "a", "1")
	a.Protocol = config.Protocol2025
	pool.Apply(context.Background(), []*config.Server{a}, time.Minute)
	want("the early listener, as a starts", early.changed, "a")

	late := listen()
	tool("second") // tools/list_changed: a is listed again
	want("the early listener, as a lists another tool", early.changed, "a")
	want("the late listener, as a lists another tool", late.changed, "a")

	pool.Get("a").SetLoggingLevel(context.Background(), "info")
	for ss := range srv.Sessions() {
		if err := ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Data: "hello"}); err != nil {
			t.Fatal(err)
		}
	}
	want("the early listener's log", early.logs, "a: hello")
	want("the late listener's log", late.logs, "a: hello")
	select {
	case v := <-late.changed:
		t.Errorf("the late listener heard of a change before it listened: %q", v)
	default:
	}
}

// rootsCaller is a client of the tests with one root.
type rootsCaller struct {
	*taskCaller
	root string
}

func (c rootsCaller) ListRoots(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: c.root}}}, nil
}

// What a server asks on its shared connection outside any call (its roots
// as it initializes, as server-everything does) goes to the pool's sole
// client when a listener names one (mcpmux over stdio), as it would
// directly; with none, the server gets an error saying why.
func TestSharedConnectionAsksTheSoleClientOutsideCalls(t *testing.T) {
	for _, sole := range []bool{true, false} {
		t.Run(fmt.Sprintf("sole=%v", sole), func(t *testing.T) {
			asked := make(chan string, 1)
			srv := mcp.NewServer(&mcp.Implementation{Name: "a"}, &mcp.ServerOptions{
				InitializedHandler: func(ctx context.Context, req *mcp.InitializedRequest) {
					go func() {
						res, err := req.Session.ListRoots(context.Background(), nil)
						switch {
						case err != nil:
							asked <- "error: " + err.Error()
						case len(res.Roots) == 1:
							asked <- res.Roots[0].URI
						default:
							asked <- fmt.Sprintf("%d roots", len(res.Roots))
						}
					}()
				},
			})
			pool := memoryPool(t, srv)
			if sole {
				pool.Listen(Events{SoleClient: func(context.Context) Caller {
					return rootsCaller{newTaskCaller("sole"), "file:///sole"}
				}})
			}
			a := server(t, "a", "1")
			a.Protocol = config.Protocol2025
			pool.Apply(context.Background(), []*config.Server{a}, time.Minute)
			select {
			case got := <-asked:
				want := "file:///sole"
				if !sole {
					want = forwardError("roots/list", errNoCaller).Error()
				}
				if !strings.Contains(got, want) {
					t.Errorf("the server's roots/list at its start got %q, want %q", got, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the server's roots/list got no answer")
			}
		})
	}
}

// A client's roots/list_changed reaches a shared connection only for the
// pool's sole client (over stdio), whose roots the server asked for.
func TestRootsChangedReachesTheSharedConnectionOfTheSoleClient(t *testing.T) {
	changed := make(chan struct{}, 10)
	srv := mcp.NewServer(&mcp.Implementation{Name: "a"}, &mcp.ServerOptions{
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { changed <- struct{}{} },
	})
	pool := memoryPool(t, srv)
	a := server(t, "a", "1")
	a.Protocol = config.Protocol2025
	pool.Apply(context.Background(), []*config.Server{a}, time.Minute)

	pool.Get("a").RootsChanged(context.Background(), "", false)
	pool.Get("a").RootsChanged(context.Background(), "", true)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the sole client's roots/list_changed did not reach the server")
	}
	// The first, of a client that is not the sole one, reached nothing:
	// the server handles a ping sent after both once it has handled them.
	if err := pool.Get("a").current().cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Error("a roots/list_changed of a client that is not the sole one reached the shared connection")
	default:
	}
}

// memoryPool is a pool whose every server is a connection to srv in
// memory; it is closed when the test ends.
func memoryPool(t *testing.T, srv *mcp.Server) *Pool {
	pool := NewPool(&Options{Transport: func(*config.Server) mcp.Transport {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			t.Error(err)
		}
		return ct
	}})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	return pool
}
