package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's life: the supervisor that connects, lists, waits for the
// connection to end and reconnects with backoff, until Stop.

// start runs the supervisor.
func (s *Server) start() { go s.supervise() }

// supervise keeps the server connected until Stop: connect, list tools,
// wait for the connection to end, back off, repeat. For per-client servers
// it only probes the tool list; connections are made per client on demand.
func (s *Server) supervise() {
	defer close(s.done)
	bo := backoff{unit: s.opts.Timing.backoff()}
	first := true
	finishFirst := func() {
		if first {
			first = false
			close(s.firstTry)
		}
	}
	defer finishFirst()
	for {
		c, features, err := s.connectAndList()
		if s.ctx.Err() != nil {
			if c != nil {
				c.close()
			}
			return
		}
		if nl := asNeedsLogin(err); nl != nil {
			// The state first: whoever the first attempt's end wakes (Apply,
			// then check or login) reads it.
			s.needLogin(nl)
			finishFirst()
			if !s.awaitLogin(nl) {
				return
			}
			continue
		}
		if err != nil {
			withdrawn := s.failed(err)
			delay := bo.next()
			s.log.Error("server failed to start", "error", err, "attempts_failed", s.Status().Failures, "retry_in", delay.Round(time.Millisecond))
			if withdrawn {
				s.log.Warn("server is down; its tools are withdrawn until it is back", "attempts_failed", withdrawAfter)
				s.notifyChanged()
			}
			finishFirst()
			if !s.sleep(delay) {
				return
			}
			s.mu.Lock()
			s.restarts++
			s.setState(StateRestarting, err)
			s.mu.Unlock()
			continue
		}

		if features.Subscribe {
			s.session.keepsState("it declares resource subscriptions")
		}
		if s.PerClient() {
			// The probe only served to learn the tools; each client gets
			// its own connection. Closed once the lists are published:
			// its process may take a while to exit.
			s.setUp(nil, features)
			finishFirst()
			c.close()
			<-s.ctx.Done()
			return
		}

		if !s.setUp(c, features) {
			c.close()
			return
		}
		s.log.Info("server connected", "protocol", c.era, "tools", len(features.Tools), "prompts", len(features.Prompts), "resources", len(features.Resources)+len(features.Templates), "pid", c.pid, "startup", time.Since(c.started).Round(time.Millisecond))
		finishFirst()
		c.lists.start()
		go s.refreshLoop(c)
		if !c.stateless() || c.cmd != nil {
			// A 2026 HTTP server has no session to keep alive, and
			// each call's own POST shows whether it answers; a 2026
			// child's answer to ping, an error included, still shows
			// it is not hung.
			go c.watchLiveness(s.bounds.liveness())
		}

		var lost error
		select {
		case <-c.done:
			lost = c.waitErr
		case <-s.ctx.Done():
			return // Stop drains and closes c
		}
		c.mu.Lock()
		unresponsive := c.unresponsive
		c.mu.Unlock()
		s.mu.Lock()
		if s.cur == c {
			s.cur = nil
		}
		if s.state == StateNeedsLogin {
			// A call found the authorization gone (see loginLost).
			err := s.lastErr
			s.mu.Unlock()
			c.close()
			if !s.awaitLogin(err) {
				return
			}
			continue
		}
		s.restarts++
		reason := connLostError(lost)
		if unresponsive != nil {
			reason = unresponsive
		}
		s.setState(StateRestarting, reason)
		s.mu.Unlock()
		c.close()
		if time.Since(c.started) > stableAfter {
			bo.reset()
		}
		delay := bo.next()
		s.log.Warn("server connection lost; restarting", "error", reason, "retry_in", delay.Round(time.Millisecond))
		if !s.sleep(delay) {
			return
		}
	}
}

// withdrawAfter is how many connection attempts in a row may fail before
// a server counts as down: its tools leave the catalog (clients are told
// with list_changed) until an attempt succeeds again. Until then they stay
// listed, so that a server that restarts after a crash does not make its
// tools flicker.
const withdrawAfter = 3

// failed records a failed connection attempt. It reports whether the
// server has just become down and its lists were withdrawn.
func (s *Server) failed(err error) (withdrawn bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures++
	s.setState(StateFailed, err)
	if s.failures == withdrawAfter && !s.features.same(Features{}) {
		s.features = Features{}
		s.probes.reset()
		return true
	}
	return false
}

// connLostError describes why a connection ended.
func connLostError(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return errors.New("the server exited or closed the connection")
	}
	return fmt.Errorf("connection lost: %w", err)
}

// sharedKey marks, in the context of a dial, the server's shared
// connection (see conn.shared).
type sharedKey struct{}

// connectAndList dials and fetches the lists.
func (s *Server) connectAndList() (*conn, Features, error) {
	c, err := s.dialer.dial(context.WithValue(s.ctx, sharedKey{}, true), "", AllFeatures)
	if err != nil {
		return nil, Features{}, err
	}
	c.watch()
	ctx, cancel := context.WithTimeout(s.ctx, s.bounds.connectTimeout())
	defer cancel()
	s.logLevel.apply(ctx, c)
	f, err := listFeatures(ctx, c)
	if err != nil {
		c.close()
		return nil, Features{}, err
	}
	return c, f, nil
}

// setUp publishes a working connection and its lists. It reports false if
// the server was stopped meanwhile.
func (s *Server) setUp(c *conn, f Features) bool {
	s.mu.Lock()
	if s.state == StateStopped {
		s.mu.Unlock()
		return false
	}
	s.cur = c
	changed := !s.features.same(f)
	s.features = f
	// A new connection may list differently to a probe than the last one.
	s.probes.reset()
	s.failures = 0
	s.setState(StateUp, nil)
	s.mu.Unlock()
	if changed {
		s.notifyChanged()
	}
	return true
}

func (s *Server) notifyChanged() { s.events.changed(s.cfg.Name) }

// refreshLoop re-lists everything whenever the server says a list changed.
func (s *Server) refreshLoop(c *conn) {
	c.armTTL()
	defer c.stopTTL()
	for {
		select {
		case <-c.done:
			return
		case <-s.ctx.Done():
			return
		case <-c.refresh:
		}
		asked := c.lists.asked()
		ctx, cancel := context.WithTimeout(s.ctx, refreshListTimeout)
		f, err := listFeatures(ctx, c)
		cancel()
		c.armTTL()
		if err != nil {
			s.log.Warn("refreshing the server's lists failed", "error", err)
			c.lists.done(asked)
			continue
		}
		s.mu.Lock()
		changed := s.cur == c && !s.features.same(f)
		if changed {
			s.features = f
			s.probes.reset()
		}
		s.mu.Unlock()
		if changed {
			s.log.Info("server's lists changed", "tools", len(f.Tools), "prompts", len(f.Prompts), "resources", len(f.Resources)+len(f.Templates))
			s.notifyChanged()
		}
		c.lists.done(asked)
	}
}

// sleep waits d or until Stop; it reports whether to go on.
func (s *Server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// Stop closes the server: no new calls, running calls get up to drain to
// finish, then every connection and child is closed. It returns when all
// are gone.
func (s *Server) Stop(ctx context.Context, drain time.Duration) {
	s.stop(ctx, drain, ErrStopped)
}

// stop is Stop; reason says why, to the calls it cuts short.
func (s *Server) stop(ctx context.Context, drain time.Duration, reason error) {
	s.cancel()
	s.mu.Lock()
	var conns []*conn
	if s.cur != nil {
		conns = append(conns, s.cur)
	}
	for _, c := range s.clients.conns {
		conns = append(conns, c)
	}
	s.cur = nil
	s.clients.conns = map[ClientID]*conn{}
	s.setState(StateStopped, nil)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			if !c.drain(ctx, drain) {
				// Cut the calls short with an answer that says why,
				// before the connection goes.
				c.abort(&StoppedError{Server: s.cfg.Name, Reason: reason, Grace: drain})
				c.drain(context.Background(), abortWait)
			}
			c.close()
		})
	}
	wg.Wait()
	<-s.done
	// Probes end with s.ctx; wait for their sessions to be closed.
	s.probes.running.Wait()
	s.auth.close()
}

// stableAfter is how long a connection must stay up to reset the backoff.
const stableAfter = 30 * time.Second

// abortWait is how long cancelled calls may take to return their answers.
const abortWait = 2 * time.Second

// backoff yields exponentially growing delays with jitter.
type backoff struct {
	unit time.Duration // the first delay
	n    int
}

func (b *backoff) next() time.Duration {
	d := b.unit << min(b.n, 6) // up to 64 times the first

	b.n++
	// ±25% jitter, so that servers failing together do not retry together.
	return d*3/4 + rand.N(d/2)
}

func (b *backoff) reset() { b.n = 0 }
