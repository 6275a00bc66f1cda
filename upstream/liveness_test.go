package upstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// helperEnv makes the test binary a stdio MCP server (TestHelperStdioServer)
// when run as a child by a test.
const helperEnv = "MCPMUX_UPSTREAM_HELPER_SERVER"

// helperBannerEnv makes the helper print its value to stdout first.
const helperBannerEnv = "MCPMUX_UPSTREAM_HELPER_BANNER"

// TestHelperStdioServer is not a test: run by a test as a child with
// helperEnv set, it serves the tool wait, which answers when cancelled,
// and big (see bigServer), on stdio.
func TestHelperStdioServer(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("a child process of other tests")
	}
	if banner := os.Getenv(helperBannerEnv); banner != "" {
		fmt.Println(banner) // a server that prints to stdout before speaking MCP
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "helper"}, nil)
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	bigServerTool(srv)
	_ = srv.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// A stdio child stopped with SIGSTOP is found unresponsive while a call
// waits on it: the call fails long before its timeout saying so, and the
// server is restarted (a new process).
func TestStoppedChildIsRestarted(t *testing.T) {
	doc := fmt.Sprintf("name: h\ntool_command: %q\nargs: [\"-test.run=^TestHelperStdioServer$\"]\nenv: {%s: \"1\"}\ntimeout: 10m\n", os.Args[0], helperEnv)
	cfg, ferr := config.ParseServer("h.yaml", []byte(doc), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool := NewPool(&Options{Liveness: 300 * time.Millisecond})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	s := pool.Get("h")
	st := s.Status()
	if st.State != StateUp || st.PID == 0 {
		t.Fatalf("server did not start: %+v", st)
	}
	stopped := st.PID
	t.Cleanup(func() { _ = syscall.Kill(stopped, syscall.SIGKILL) })

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		_, err := s.CallTool(ctx, callParams("wait"))
		done <- err
	}()
	// Stopped once the call is in flight (it is pinged only while one is).
	waitState(t, s, "the call in flight", func(Status) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.cur == nil {
			return false
		}
		s.cur.mu.Lock()
		defer s.cur.mu.Unlock()
		return s.cur.inflight > 0
	})
	if err := syscall.Kill(stopped, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var unresponsive *UnresponsiveError
		var lost *LostError
		if !errors.As(err, &lost) || !errors.As(err, &unresponsive) || !strings.Contains(err.Error(), "did not answer a ping") {
			t.Errorf("call: %v, want a LostError of an unresponsive server", err)
		}
	case <-time.After(time.Minute): // far short of the call's 10 minutes
		t.Fatal("the call on a stopped server was not failed")
	}
	st = waitState(t, s, "a restart", func(st Status) bool { return st.State == StateUp && st.Restarts >= 1 && st.PID != stopped })
	if st.PID == stopped {
		t.Errorf("still the stopped process %d", stopped)
	}
}
