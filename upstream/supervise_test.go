package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// flaky is an in-memory tool server that tests can crash and keep down.
// Its tool "block" waits until release is closed (or the call ends); its
// tool "echo" answers at once.
type flaky struct {
	mu    sync.Mutex
	pipes []net.Conn // server ends of the connections
	down  bool       // new connections fail
	hang  bool       // new connections never complete
	dials int

	frozenBelow   atomic.Int32 // connections numbered below it drop every message
	running, peak atomic.Int32
	started       chan struct{} // one value per block call that began
	release       chan struct{}

	timing Timing // the pool's (startFlaky)
}

func newFlaky() *flaky {
	return &flaky{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (f *flaky) transport(cfg *config.Server) mcp.Transport {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dials++
	if f.down {
		return failingTransport{}
	}
	if f.hang {
		return hangingTransport{}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: cfg.Name}, nil)
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := f.running.Add(1)
			defer f.running.Add(-1)
			for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
			}
			f.started <- struct{}{}
			select {
			case <-f.release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil
		})
	// Pipes the test can cut, as a dying child cuts its stdio, or freeze,
	// as a hung child stops answering.
	client, relayA := net.Pipe()
	relayB, srv := net.Pipe()
	n := int32(f.dials)
	go f.relay(n, relayA, relayB)
	go f.relay(n, relayB, relayA)
	if _, err := s.Connect(context.Background(), &mcp.IOTransport{Reader: srv, Writer: srv}, nil); err != nil {
		panic(err)
	}
	f.pipes = append(f.pipes, srv)
	return &mcp.IOTransport{Reader: client, Writer: client}
}

// crash ends the current session, as a dying child would; down keeps
// the next connection attempts failing.
func (f *flaky) crash(down bool) {
	f.mu.Lock()
	f.down = down
	pipe := f.pipes[len(f.pipes)-1]
	f.mu.Unlock()
	_ = pipe.Close()
}

func (f *flaky) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

// freeze makes the connections made so far drop every message, as a
// hung child stops answering; later connections work.
func (f *flaky) freeze() {
	f.mu.Lock()
	f.frozenBelow.Store(int32(f.dials) + 1)
	f.mu.Unlock()
}

// relay copies src to dst of connection conn, dropping everything once frozen.
func (f *flaky) relay(conn int32, src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		if conn < f.frozenBelow.Load() {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

type hangingTransport struct{}

func (hangingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

type failingTransport struct{}

func (failingTransport) Connect(context.Context) (mcp.Connection, error) {
	return nil, errors.New("connection refused")
}

func flakyServer(t *testing.T, extra string) *config.Server {
	t.Helper()
	cfg, ferr := config.ParseServer("f.yaml", []byte("name: f\ntool_command: mem\n"+extra), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	return cfg
}

func startFlaky(t *testing.T, f *flaky, extra string, onChanged func(string)) *Server {
	t.Helper()
	pool := NewPool(&Options{Transport: f.transport, Timing: f.timing})
	pool.Listen(Events{Changed: onChanged})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	pool.Apply(context.Background(), []*config.Server{flakyServer(t, extra)}, time.Minute)
	s := pool.Get("f")
	if st := s.Status(); st.State != StateUp {
		t.Fatalf("server did not start: %+v", st)
	}
	return s
}

func callParams(tool string) CallParams {
	return CallParams{Params: &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}}
}

// waitState polls the server's status until ok, within a deadline.
func waitState(t *testing.T, s *Server, what string, ok func(Status) bool) Status {
	t.Helper()
	return testkit.Await(t, what, s.Status, ok)
}

func TestMaxConcurrencyQueuesCalls(t *testing.T) {
	f := newFlaky()
	s := startFlaky(t, f, "max_concurrency: 2\n", nil)
	ctx := context.Background()

	results := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := s.CallTool(ctx, callParams("block"))
			results <- err
		}()
	}
	<-f.started
	<-f.started
	// Two calls hold the slots: one more, with a deadline, times out in
	// the queue and says why.
	qctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := s.CallTool(qctx, callParams("echo"))
	cancel()
	if err == nil || !strings.Contains(err.Error(), "max_concurrency") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("queued call past its deadline: %v", err)
	}
	close(f.release)
	for range 5 {
		if err := <-results; err != nil {
			t.Errorf("queued call: %v", err)
		}
	}
	if p := f.peak.Load(); p != 2 {
		t.Errorf("%d calls ran at once, want max_concurrency 2", p)
	}
}

func TestUnlimitedByDefault(t *testing.T) {
	f := newFlaky()
	s := startFlaky(t, f, "", nil)
	results := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := s.CallTool(context.Background(), callParams("block"))
			results <- err
		}()
	}
	for range 4 {
		<-f.started // all four run at once
	}
	close(f.release)
	for range 4 {
		if err := <-results; err != nil {
			t.Error(err)
		}
	}
}

func TestCrashAnswersInflightAndReconnects(t *testing.T) {
	f := newFlaky()
	f.timing.Backoff = 5 * time.Millisecond
	s := startFlaky(t, f, "", nil)
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(context.Background(), callParams("block"))
		errc <- err
	}()
	<-f.started
	f.crash(false)
	var lost *LostError
	if err := <-errc; !errors.As(err, &lost) {
		t.Fatalf("call cut off by a crash: %v, want a LostError", err)
	}
	// The next call waits for the reconnect instead of failing.
	if _, err := s.CallTool(context.Background(), callParams("echo")); err != nil {
		t.Fatalf("call after the crash: %v", err)
	}
	if st := s.Status(); st.State != StateUp || st.Restarts != 1 || st.Tools != 2 {
		t.Errorf("after the restart: %+v", st)
	}
}

func TestDownServerWithdrawsToolsUntilBack(t *testing.T) {
	f := newFlaky()
	f.timing.Backoff = 5 * time.Millisecond
	changed := make(chan struct{}, 10)
	s := startFlaky(t, f, "", func(string) { changed <- struct{}{} })
	<-changed // the initial lists

	f.crash(true)
	st := waitState(t, s, "withdrawn tools", func(st Status) bool { return st.Tools == 0 })
	<-changed
	if st.State != StateFailed && st.State != StateRestarting || st.Failures < withdrawAfter {
		t.Errorf("down server: %+v", st)
	}
	// A call while it is failed fails fast with the last error.
	waitState(t, s, "failed", func(st Status) bool { return st.State == StateFailed })
	_, err := s.CallTool(context.Background(), callParams("echo"))
	var un *UnavailableError
	if !errors.As(err, &un) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("call to a down server: %v", err)
	}

	f.setDown(false)
	waitState(t, s, "back up", func(st Status) bool { return st.State == StateUp })
	<-changed
	if st := s.Status(); st.Tools != 2 || st.Failures != 0 || st.Restarts < withdrawAfter {
		t.Errorf("back up: %+v", st)
	}
}

func TestStopCancelsCallsPastGrace(t *testing.T) {
	f := newFlaky()
	pool := NewPool(&Options{Transport: f.transport})
	pool.Apply(context.Background(), []*config.Server{flakyServer(t, "")}, time.Minute)
	s := pool.Get("f")
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(context.Background(), callParams("block"))
		errc <- err
	}()
	<-f.started
	pool.Close(context.Background(), 20*time.Millisecond)
	err := <-errc
	var stopped *StoppedError
	if !errors.As(err, &stopped) || !errors.Is(err, ErrShuttingDown) || !strings.Contains(err.Error(), "grace period of 20ms") {
		t.Errorf("call past the grace: %v, want a StoppedError", err)
	}
	// New calls are refused.
	if _, err := s.CallTool(context.Background(), callParams("echo")); !errors.As(err, new(*UnavailableError)) {
		t.Errorf("call after Close: %v", err)
	}
}

func TestStopLetsCallsFinishWithinGrace(t *testing.T) {
	f := newFlaky()
	pool := NewPool(&Options{Transport: f.transport})
	pool.Apply(context.Background(), []*config.Server{flakyServer(t, "")}, time.Minute)
	s := pool.Get("f")
	errc := make(chan error, 1)
	go func() {
		res, err := s.CallTool(context.Background(), callParams("block"))
		if err == nil && testkit.RawText(res) != "released" {
			err = fmt.Errorf("answer %s", res)
		}
		errc <- err
	}()
	<-f.started
	closed := make(chan struct{})
	go func() {
		pool.Close(context.Background(), time.Minute)
		close(closed)
	}()
	waitState(t, s, "stopped", func(st Status) bool { return st.State == StateStopped })
	close(f.release)
	if err := <-errc; err != nil {
		t.Errorf("call within the grace: %v", err)
	}
	<-closed
}

func TestUnansweredPingsReconnect(t *testing.T) {
	f := newFlaky()
	f.timing = Timing{Backoff: 5 * time.Millisecond, KeepAlive: 50 * time.Millisecond}
	s := startFlaky(t, f, "protocol: 2025-11-25\n", nil) // keepalive pings: MCP 2026-07-28 has none
	// The server hangs: pings go unanswered. Only this connection is
	// frozen, so the reconnect finds a working server.
	f.freeze()
	waitState(t, s, "the frozen session given up", func(st Status) bool { return st.Restarts >= 1 })
	waitState(t, s, "reconnected", func(st Status) bool { return st.State == StateUp })
	if _, err := s.CallTool(context.Background(), callParams("echo")); err != nil {
		t.Errorf("call after the reconnect: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dials < 2 {
		t.Errorf("%d connections, want a new one after the failed pings", f.dials)
	}
}

func TestCallGivesUpOnASlowRestart(t *testing.T) {
	f := newFlaky()
	f.timing = Timing{Backoff: 5 * time.Millisecond, RestartWait: 100 * time.Millisecond}
	s := startFlaky(t, f, "connect_timeout: 5s\n", nil)
	f.mu.Lock()
	f.hang = true // the restart will not finish
	f.mu.Unlock()
	f.crash(false)
	waitState(t, s, "restarting", func(st Status) bool { return st.State == StateRestarting })
	_, err := s.CallTool(context.Background(), callParams("echo"))
	var un *UnavailableError
	if !errors.As(err, &un) || !strings.Contains(err.Error(), "restarting") || !strings.Contains(err.Error(), "not back within 100ms") {
		t.Errorf("call during a restart that does not finish: %v", err)
	}
}
