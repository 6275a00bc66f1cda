package upstream

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// silentTransport is a server that reads every message and answers none,
// not even initialize.
func silentTransport() mcp.Transport {
	ct, st := mcp.NewInMemoryTransports()
	go func() {
		conn, err := st.Connect(context.Background())
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			if _, err := conn.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	return ct
}

// A per-client connection whose server never answers initialize ends with
// the call's timeout, not the (far longer) connect timeout, and says that
// the call was never sent.
func TestPerClientDialEndsWithTheCall(t *testing.T) {
	m := &memServers{dials: map[string]int{}}
	var dials atomic.Int32
	transport := func(cfg *config.Server) mcp.Transport {
		if dials.Add(1) == 1 {
			return m.transport(cfg) // the probe that learns the tools
		}
		return silentTransport()
	}
	pool := NewPool(&Options{Transport: transport})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	cfg, ferr := config.ParseServer("f.yaml", []byte("name: f\ntool_command: mem\nsession: per-client\nconnect_timeout: 10m\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	s := pool.Get("f")
	if st := s.Status(); st.State != StateUp {
		t.Fatalf("server did not start: %+v", st)
	}

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		p := callParams("t_f")
		p.Client = "client-1"
		_, err := s.CallTool(ctx, p)
		done <- err
	}()
	select {
	case err := <-done:
		var ended *DialEndedError
		if !errors.As(err, &ended) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call: %v, want a DialEndedError of the call's deadline", err)
		}
	case <-time.After(time.Minute): // far beyond the call's 200ms, far short of connect_timeout
		t.Fatal("the call did not end with its timeout: the connection attempt ignores it")
	}
	// The next call tries again, and ends with its own timeout too.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	p := callParams("t_f")
	p.Client = "client-1"
	if _, err := s.CallTool(ctx, p); !errors.As(err, new(*DialEndedError)) {
		t.Errorf("second call: %v", err)
	}
}
