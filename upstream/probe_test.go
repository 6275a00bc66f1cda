package upstream

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmux/mcpmux/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitingServer is a 2025-11-25 server that lists its tool "ask" only
// to a client that declared elicitation at initialization, as
// server-everything does with its elicitation tools.
func elicitingServer() *mcp.Server {
	srv := newEraServer([]string{config.Protocol2025})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			lt, ok := res.(*mcp.ListToolsResult)
			if !ok || err != nil {
				return res, err
			}
			ss, _ := req.GetSession().(*mcp.ServerSession)
			if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil {
				return res, err
			}
			out := *lt
			out.Tools = nil
			for _, t := range lt.Tools {
				if t.Name != "ask" {
					out.Tools = append(out.Tools, t)
				}
			}
			return &out, nil
		}
	})
	return srv
}

// A server starts once: what it lists to a client with fewer capabilities
// than the shared connection declares is asked when such a client comes,
// once per feature set, and not at all for a client that declares at
// least what one that was listed everything declared.
func TestProbesOnlyWhenAClientNeedsThem(t *testing.T) {
	s, dials := startEra(t, elicitingServer(), "protocol: 2025-11-25\n")
	waitState(t, s, "up", func(st Status) bool { return st.State == StateUp && st.Tools == 3 })
	if *dials != 1 {
		t.Fatalf("%d sessions at start, want 1 (no probe ahead of a client)", *dials)
	}
	for _, step := range []struct {
		f     ClientFeatures
		want  string // the tools listed, sorted; "all" for nil
		dials int
	}{
		{AllFeatures, "all", 1},
		{ClientFeatures{Roots: true}, "fail meta", 2},
		{ClientFeatures{Roots: true}, "fail meta", 2}, // asked once
		{ClientFeatures{FormElicitation: true}, "all", 3},
		{ClientFeatures{FormElicitation: true, Roots: true}, "all", 3}, // more than a client listed everything
		{ClientFeatures{}, "fail meta", 4},
	} {
		names, err := s.ToolsFor(context.Background(), step.f)
		if err != nil {
			t.Fatalf("%s: %v", step.f, err)
		}
		got := "all"
		if names != nil {
			got = strings.Join(slices.Sorted(maps.Keys(names)), " ")
		}
		if got != step.want || *dials != step.dials {
			t.Errorf("client with %s: listed %q after %d sessions, want %q after %d", step.f, got, *dials, step.want, step.dials)
		}
	}
}

// closeGate is a transport whose connection never answers and, when
// closed, says so on closing and waits for release.
type closeGate struct {
	closing chan struct{}
	release chan struct{}
}

func (g *closeGate) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := silentTransport().Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Connection: c, g: g}, nil
}

type gatedConn struct {
	mcp.Connection
	g    *closeGate
	once sync.Once
}

func (c *gatedConn) Close() error {
	c.once.Do(func() {
		close(c.g.closing)
		<-c.g.release
	})
	return c.Connection.Close()
}

// Stop returns only once a probe cut short by it has closed its session
// (for a child, once its process is gone: nothing is left to the reaper),
// and a probe cut short is no failure of the server's to log.
func TestStopWaitsForProbes(t *testing.T) {
	var logged strings.Builder
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logged, mu: &logMu}, nil))
	gate := &closeGate{closing: make(chan struct{}), release: make(chan struct{})}
	dialed := make(chan struct{}, 1)
	first := true
	var mu sync.Mutex
	transport := func(cfg *config.Server) mcp.Transport {
		mu.Lock()
		defer mu.Unlock()
		if first {
			first = false
			return (&memServers{dials: map[string]int{}}).transport(cfg)
		}
		dialed <- struct{}{}
		return gate
	}
	pool := NewPool(&Options{Transport: transport, Logger: log})
	cfg, ferr := config.ParseServer("p.yaml", []byte("name: p\ntool_command: mem\nprotocol: 2025-11-25\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	s := pool.Get("p")
	if st := s.Status(); st.State != StateUp {
		t.Fatalf("server did not start: %+v", st)
	}
	asked := make(chan error, 1)
	go func() {
		_, err := s.ToolsFor(context.Background(), ClientFeatures{})
		asked <- err
	}()
	<-dialed // the probe's session is being opened, and will never be answered

	stopped := make(chan struct{})
	go func() {
		s.Stop(context.Background(), time.Second)
		close(stopped)
	}()
	<-gate.closing // Stop ended the probe's attempt
	// Give an early return the chance to show: Stop must not return
	// while the probe's session is still being closed.
	select {
	case <-stopped:
		t.Error("Stop returned before the probe's session was closed")
	case <-time.After(100 * time.Millisecond):
	}
	close(gate.release)
	<-stopped
	if err := <-asked; err == nil {
		t.Error("a probe cut short by Stop answered without an error")
	}
	logMu.Lock()
	defer logMu.Unlock()
	for _, bad := range []string{"capability probe failed", "no answer to initialize"} {
		if strings.Contains(logged.String(), bad) {
			t.Errorf("a probe cut short by Stop logged %q:\n%s", bad, logged.String())
		}
	}
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
