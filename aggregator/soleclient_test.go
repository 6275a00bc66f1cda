package aggregator

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio client is the sole client of what servers ask outside calls:
// from when it has initialized (a request before that waits for it), until
// it leaves; an instance that does not serve stdio has none.
func TestSoleClientIsTheInitializedStdioClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s soleClient
		if ss := s.session(t.Context()); ss != nil {
			t.Fatalf("without stdio: %p, want none", ss)
		}
		s.expected.Store(true)
		ss := &mcp.ServerSession{}
		got := make(chan *mcp.ServerSession)
		go func() { got <- s.session(t.Context()) }()
		synctest.Wait()
		select {
		case g := <-got:
			t.Fatalf("before the client initialized: %p, want a wait", g)
		default:
		}
		s.initialized(ss)
		if g := <-got; g != ss {
			t.Fatalf("once initialized: %p, want the stdio session %p", g, ss)
		}
		s.initialized(&mcp.ServerSession{}) // a later session is not it
		if g := s.session(t.Context()); g != ss {
			t.Fatalf("after another session initialized: %p, want %p", g, ss)
		}
		s.end(ss)
		if g := s.session(t.Context()); g != nil {
			t.Fatalf("after the client left: %p, want none", g)
		}

		// A client that never initializes is waited for soleClientWait.
		var never soleClient
		never.expected.Store(true)
		start := time.Now()
		if g := never.session(context.Background()); g != nil || time.Since(start) != soleClientWait {
			t.Fatalf("a client that never initialized: %p after %v, want none after %v", g, time.Since(start), soleClientWait)
		}
	})
}
