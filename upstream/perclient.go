package upstream

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// Per-client connections (session: per-client): each client session gets
// its own connection, opened on first use and closed when it leaves or
// idles.

// clientConns are a server's per-client connections: each client's own,
// and those being opened. Their maps are guarded by the server's lock
// (mu), with the server's state, which acquire reads and sets under it;
// the rest it needs of the server is given at construction (newServer).
type clientConns struct {
	mu    *sync.Mutex // the server's
	cfg   *config.Server
	log   *slog.Logger
	ctx   context.Context // the server's: cancelled by Stop
	dial  func(ctx context.Context, runID string, f ClientFeatures) (*conn, error)
	apply func(ctx context.Context, c *conn) // sets the kept log level
	// state and setState read and change the server's state; mu held.
	state    func() State
	setState func(State, error)
	// features are the server's lists on its shared session.
	features func() Features

	conns   map[ClientID]*conn
	dialing map[ClientID]chan struct{}
}

// OpenClient opens the own connection of a client whose session has just
// initialized, as the server would be started for the client directly:
// what it asks its client while it initializes (roots/list, which
// server-everything asks for then) reaches r.Caller at once, not during
// its first call. A connection already open is kept. ctx bounds the
// opening.
func (s *Server) OpenClient(ctx context.Context, r Request) error {
	c, err := s.clients.acquire(ctx, r.Client, r.RunID, r.Features, r.Caller)
	if err != nil {
		return err
	}
	c.release()
	return nil
}

// ownerKey carries, in the context of a per-client dial, the client the
// connection is for (see openSession).
type ownerKey struct{}

// acquire returns the caller's own connection, opening it on first
// use with the caller's features; owner is its client.
func (p *clientConns) acquire(ctx context.Context, id ClientID, runID string, f ClientFeatures, owner Caller) (*conn, error) {
	for {
		p.mu.Lock()
		if p.state() == StateStopped {
			p.mu.Unlock()
			return nil, &UnavailableError{Server: p.cfg.Name, Err: ErrStopped}
		}
		if c := p.conns[id]; c != nil {
			if c.acquire() {
				p.mu.Unlock()
				return c, nil
			}
			delete(p.conns, id)
		}
		if wait := p.dialing[id]; wait != nil {
			p.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, &DialEndedError{Cause: ctx.Err()}
			}
		}
		if max := p.cfg.MaxClients; max > 0 && len(p.conns)+len(p.dialing) >= max {
			p.mu.Unlock()
			return nil, &LimitError{Server: p.cfg.Name, Max: max}
		}
		wait := make(chan struct{})
		p.dialing[id] = wait
		p.mu.Unlock()

		c, err := p.dialFor(ctx, runID, f, owner)
		if err == nil {
			p.apply(ctx, c)
		}

		p.mu.Lock()
		delete(p.dialing, id)
		close(wait)
		if nl := asNeedsLogin(err); nl != nil {
			p.setState(StateNeedsLogin, nl)
		} else if err == nil && p.state() == StateNeedsLogin {
			p.setState(StateUp, nil) // logged in again
		}
		if err != nil {
			p.mu.Unlock()
			return nil, &UnavailableError{Server: p.cfg.Name, Err: err}
		}
		if p.state() == StateStopped {
			p.mu.Unlock()
			c.close()
			return nil, &UnavailableError{Server: p.cfg.Name, Err: ErrStopped}
		}
		c.watch()
		c.ofClient.Store(true)
		c.lists.start() // its list_changed: refreshOwn
		// What the server announced while the connection was made went to
		// the shared refresh, which a client's connection has not: listed
		// now, so that no answer waits for it.
		go c.refreshOwn()
		c.idle = time.AfterFunc(p.cfg.IdleTimeout, func() { p.closeIdle(id, c) })
		c.acquire()
		p.conns[id] = c
		p.mu.Unlock()
		p.log.Info("opened per-client connection", "client", string(id), "task", runID, "pid", c.pid)
		go func() {
			<-c.done
			p.forgetClient(id, c)
		}()
		return c, nil
	}
}

// dialFor opens a per-client connection for a call: the attempt ends
// when the call does (its timeout, its client gone), not only at the
// connect timeout, which may be far longer; the connection, once open,
// lives on the server's context.
func (p *clientConns) dialFor(call context.Context, runID string, f ClientFeatures, owner Caller) (*conn, error) {
	ctx, cancel := context.WithCancel(p.ctx)
	if owner != nil {
		ctx = context.WithValue(ctx, ownerKey{}, owner)
	}
	stop := context.AfterFunc(call, cancel)
	c, err := p.dial(ctx, runID, f)
	if !stop() {
		if c != nil {
			c.close()
		}
		cancel()
		return nil, &DialEndedError{Cause: call.Err()}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	dialCancel := c.cancel
	c.cancel = func() { dialCancel(); cancel() }
	return c, nil
}

// DialEndedError is a call whose context ended while its per-client
// connection was being opened: the server had not finished initialize,
// and the call was never sent.
type DialEndedError struct{ Cause error }

func (e *DialEndedError) Error() string {
	return "the server had not answered initialize for this client's connection; the call was not sent"
}
func (e *DialEndedError) Unwrap() error { return e.Cause }

// closeIdle closes a per-client connection that has not been used for the
// idle timeout.
func (p *clientConns) closeIdle(id ClientID, c *conn) {
	c.mu.Lock()
	idle := c.inflight == 0 && time.Since(c.lastUse) >= p.cfg.IdleTimeout-time.Millisecond
	c.mu.Unlock()
	if idle && c.holdsTasks() {
		// Its client's tasks may still run on it: idle once they are over.
		c.idle.Reset(p.cfg.IdleTimeout)
		return
	}
	if !idle {
		return
	}
	if p.forgetClient(id, c) {
		p.log.Info("closing idle per-client connection", "client", string(id), "idle", p.cfg.IdleTimeout)
	}
	c.close()
}

// forgetClient removes c from the client map; it reports whether it was there.
func (p *clientConns) forgetClient(id ClientID, c *conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[id] == c {
		delete(p.conns, id)
		return true
	}
	return false
}

// ReleaseClient closes the connection of a client session that ended.
// Calls still running on it are given a short time to finish.
func (s *Server) ReleaseClient(id ClientID) {
	s.mu.Lock()
	c := s.clients.conns[id]
	delete(s.clients.conns, id)
	s.mu.Unlock()
	if c == nil {
		return
	}
	s.log.Info("client left; closing its connection", "client", string(id), "pid", c.pid)
	c.drain(context.Background(), clientLeftDrain)
	c.close()
}

// clientLeftDrain is how long the calls of a client that left may take to
// finish before its connection closes.
const clientLeftDrain = 5 * time.Second

// refreshOwn lists the resources of a client's own connection after the
// server said they changed, keeps them as what its client was told of, and
// tells the client; the answers of its calls wait for it (refreshes).
func (c *conn) refreshOwn() {
	asked := c.lists.asked()
	defer c.lists.done(asked)
	ctx, cancel := context.WithTimeout(c.srv.ctx, refreshListTimeout)
	defer cancel()
	res, err := c.listOwn(ctx)
	if err != nil {
		c.srv.log.Warn("listing the resources of a client's connection failed", "error", err)
		return
	}
	listed := c.srv.clients.listedURIs()
	c.mu.Lock()
	before := c.ownResources
	c.ownResources = res
	owner := c.owner
	c.mu.Unlock()
	// Only a change of what its client sees of it is news: a connection
	// just opened, whose resources are the shared list's, is none (a
	// client opened at its start would hear of a change it never saw).
	if owner != nil && !slices.Equal(ownURIs(before, listed), ownURIs(res, listed)) {
		owner.ResourcesChanged()
	}
}

// listOwn asks the server for the resources of a client's own connection.
func (c *conn) listOwn(ctx context.Context) ([]*mcp.Resource, error) {
	return listAll(ctx, "resources", func(cursor string) ([]*mcp.Resource, string, error) {
		r, err := c.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Resources, r.NextCursor, nil
	})
}

// listedURIs are the URIs of the resources the server lists on its shared
// session.
func (p *clientConns) listedURIs() map[string]bool {
	listed := map[string]bool{}
	for _, r := range p.features().Resources {
		listed[r.URI] = true
	}
	return listed
}

// ownURIs are the URIs of rs not in listed, in order.
func ownURIs(rs []*mcp.Resource, listed map[string]bool) []string {
	var out []string
	for _, r := range rs {
		if !listed[r.URI] {
			out = append(out, r.URI)
		}
	}
	return out
}

// ClientResources are the resources the server lists on the own
// connection of client id and not on its shared session (resources made
// for the client's session); nil for none, or no such connection. They
// are asked for now, as a client's resources/list directly would: a
// server (server-everything's gzip-file-as-resource) may send the
// list_changed that refreshOwn follows on its GET stream after the answer
// of the call that made the resource, so what refreshOwn kept can lag the
// answer the client already has. What refreshOwn kept is the answer only
// when asking fails (ctx ended, the connection closing).
func (s *Server) ClientResources(ctx context.Context, id ClientID) []*mcp.Resource {
	listed := s.clients.listedURIs()
	s.mu.Lock()
	c := s.clients.conns[id]
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	res, err := c.listOwn(ctx)
	if err != nil {
		s.log.Debug("listing a client's resources failed; answering with those last listed", "error", err)
		c.mu.Lock()
		res = c.ownResources
		c.mu.Unlock()
	}
	var out []*mcp.Resource
	for _, r := range res {
		if !listed[r.URI] {
			out = append(out, r)
		}
	}
	return out
}

// RootsChanged passes a client's notifications/roots/list_changed on to
// the connection whose roots are that client's, as the client would tell
// the server directly: its own connection (for a per-client server), or
// the shared one when sole says the client is the pool's one client
// (mcpmux over stdio; see Events.SoleClient). A connection that declared
// no roots, or of MCP 2026-07-28 (which has no such notification), is not
// told; nor is a shared connection of many clients, whose roots are no
// one client's.
func (s *Server) RootsChanged(ctx context.Context, client ClientID, sole bool) {
	var c *conn
	s.mu.Lock()
	switch {
	case s.PerClient():
		c = s.clients.conns[client]
	case sole:
		c = s.cur
	}
	s.mu.Unlock()
	if c == nil || !c.features.Roots || c.stateless() || c.wire == nil {
		return
	}
	if err := c.wire.Write(ctx, &jsonrpc.Request{Method: "notifications/roots/list_changed", Params: json.RawMessage(`{}`)}); err != nil {
		s.log.Debug("passing on a client's roots/list_changed failed", "error", err)
	}
}
