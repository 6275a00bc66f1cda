package aggregator

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/upstream"
)

// soleClient is the one client of an mcpmux serving stdio. A server on its
// shared connection asks its client for roots as it initializes
// (server-everything does, 350 ms after notifications/initialized), before
// any call: directly its one client answers; through mcpmux over stdio,
// mcpmux's one client does, once it has initialized (see
// upstream.Events.SoleClient). Over HTTP there are many clients, or none
// yet: such a request is refused there (docs/protocol.md).
type soleClient struct {
	expected atomic.Bool // this instance serves stdio (ExpectStdioClient)
	// newCaller is the aggregator's (caller.go): what answers a server's
	// request as a call's client would, given in New.
	newCaller func(context.Context, *mcp.ServerSession) upstream.Caller

	mu    sync.Mutex
	ss    *mcp.ServerSession // the stdio session, once it sent notifications/initialized
	ended bool               // the stdio session ended
	wake  chan struct{}      // closed and replaced when ss or ended change
}

// soleClientWait bounds how long a server's request outside any call waits
// for the stdio client to initialize: it starts mcpmux to talk to it, and
// initializes at once (mcpmux's initialize answer waits up to 10 s for the
// servers).
const soleClientWait = 30 * time.Second

// ExpectStdioClient says this instance is about to serve its one client on
// stdio (before it starts the servers, whose first requests may come
// before that client has initialized): what they ask outside any call
// goes to that client. It stays on Aggregator for package app.
func (a *Aggregator) ExpectStdioClient() { a.sole.expect() }

// expect says this instance serves its one client on stdio.
func (s *soleClient) expect() { s.expected.Store(true) }

// changed records a change and wakes the waiters; under s.mu.
func (s *soleClient) changedLocked() {
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}

// initialized records that ss, a session of an instance serving stdio,
// has initialized.
func (s *soleClient) initialized(ss *mcp.ServerSession) {
	if !s.expected.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ss == nil && !s.ended {
		s.ss = ss
		s.changedLocked()
	}
}

// end records that the stdio session ss has ended: what servers ask from
// then on is refused.
func (s *soleClient) end(ss *mcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ss == nil || s.ss == ss {
		s.ss, s.ended = nil, true
		s.changedLocked()
	}
}

// session returns the stdio client's session, waiting for it to initialize
// until ctx ends or soleClientWait; nil if the instance does not serve
// stdio, or its client left or never initialized.
func (s *soleClient) session(ctx context.Context) *mcp.ServerSession {
	if !s.expected.Load() {
		return nil
	}
	timer := time.NewTimer(soleClientWait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		ss, ended := s.ss, s.ended
		if s.wake == nil {
			s.wake = make(chan struct{})
		}
		wake := s.wake
		s.mu.Unlock()
		switch {
		case ss != nil:
			return ss
		case ended:
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil
		case <-timer.C:
			return nil
		}
	}
}

// is reports whether ss is the stdio client's initialized session.
func (s *soleClient) is(ss *mcp.ServerSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ss != nil && s.ss == ss
}

// caller is upstream.Events.SoleClient: the stdio client, as the Caller
// of a server's request outside any call.
func (s *soleClient) caller(ctx context.Context) upstream.Caller {
	ss := s.session(ctx)
	if ss == nil {
		return nil
	}
	return s.newCaller(ctx, ss)
}
