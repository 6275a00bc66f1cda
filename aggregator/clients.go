package aggregator

//lint:file-ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where it is not, and keeps each client session's log level to pass the lowest to the servers.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/upstream"
)

// clientSession is what mcpmux keeps of one client session: its log level,
// whether it has per-client connections, and what else ends with it (its
// count in the metrics, the HTTP front's tracking, its MCP tasks, which
// mcpTasks keeps). There is one per session, made by its first request
// that needs one; it goes as a whole when the session ends, which one
// goroutine waits for.
type clientSession struct {
	ss *mcp.ServerSession

	mu        sync.Mutex
	level     mcp.LoggingLevel // its logging/setLevel, "" if none
	perClient bool             // per-client connections may be open for it
	runID     string           // the task its initialize named (runIDOf)
	exposed   exposedTools     // tools find_tools exposed to it (lazy.go)
	// initialized: the client sent notifications/initialized; until then
	// it is sent no list_changed (see listNotes.middleware).
	initialized bool
	listsAt     uint64 // its profile's lists generation then (listNotes)
	onEnd       []func()
	ended       bool
}

// clientSessions is the registry of what mcpmux keeps per client: the
// state of each client session of all profiles, from its first request to
// its end, and the log levels of 2026-07-28 clients over HTTP, which have
// no session (removed2026.go). It passes on what is the clients' to the
// servers: their lowest log level (logging.go), their roots, and each
// session's own connections. It is given what it needs in New, not the
// Aggregator.
type clientSessions struct {
	pool *upstream.Pool
	log  *slog.Logger
	// runIDOf and request are the aggregator's (request.go): the run a
	// session's initialize names, and the upstream request its own
	// connections are opened with, as any other request of it.
	runIDOf func(mcp.Meta, *mcp.RequestExtra) string
	request func(ctx context.Context, srv *upstream.Server, ss *mcp.ServerSession, runID string) upstream.Request
	// profiles are the profiles of the moment, whose list notes forget a
	// session that has ended (listnotes.go).
	profiles func() []*profile
	// sole is the client of an instance serving stdio (soleclient.go):
	// the shared connections' roots are its.
	sole *soleClient
	// levels are the log levels of 2026-07-28 clients over HTTP
	// (removed2026.go).
	levels keptLevels

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*clientSession
	watchers []func(context.Context, *mcp.ServerSession) func() // see WatchSessions
}

// WatchSessions calls started with each client session when mcpmux first
// sees it (its initialize, for a session that has one), with the context of
// that request, and the func it returns, if not nil, when the session has
// ended. Over HTTP the context carries the values of the HTTP request that
// opened the session (the go-sdk's session context is that request's).
// It stays on Aggregator for front.Engine; the registry keeps the watchers.
func (a *Aggregator) WatchSessions(started func(context.Context, *mcp.ServerSession) (ended func())) {
	a.clients.watch(started)
}

func (c *clientSessions) watch(started func(context.Context, *mcp.ServerSession) (ended func())) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchers = append(c.watchers, started)
}

// get returns the state of session ss, making it if there is none; ctx
// is that of the request that needs it, for WatchSessions.
func (c *clientSessions) get(ctx context.Context, ss *mcp.ServerSession) *clientSession {
	c.mu.Lock()
	cs := c.sessions[ss]
	if cs != nil {
		c.mu.Unlock()
		return cs
	}
	if c.sessions == nil {
		c.sessions = map[*mcp.ServerSession]*clientSession{}
	}
	cs = &clientSession{ss: ss}
	c.sessions[ss] = cs
	watchers := c.watchers
	c.mu.Unlock()
	for _, w := range watchers {
		if ended := w(ctx, ss); ended != nil {
			cs.whenEnded(ended)
		}
	}
	go c.ended(cs)
	return cs
}

// lookup returns the state of session ss, or nil if it has none.
func (c *clientSessions) lookup(ss *mcp.ServerSession) *clientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[ss]
}

// whenEnded runs f when session ss has ended (at once if it has), making
// its state if there is none; ctx is as for get.
func (c *clientSessions) whenEnded(ctx context.Context, ss *mcp.ServerSession, f func()) {
	c.get(ctx, ss).whenEnded(f)
}

// whenEnded runs f when the session has ended (at once if it has).
func (cs *clientSession) whenEnded(f func()) {
	cs.mu.Lock()
	if !cs.ended {
		cs.onEnd = append(cs.onEnd, f)
		f = nil
	}
	cs.mu.Unlock()
	if f != nil {
		f()
	}
}

// ended waits for the session of cs to end, then drops its state: the
// one cleanup of a client session.
func (c *clientSessions) ended(cs *clientSession) {
	_ = cs.ss.Wait()
	c.mu.Lock()
	delete(c.sessions, cs.ss)
	c.mu.Unlock()
	for _, p := range c.profiles() {
		p.lists.forget(cs.ss)
	}
	cs.mu.Lock()
	cs.ended = true
	onEnd, perClient := cs.onEnd, cs.perClient
	cs.onEnd = nil
	cs.mu.Unlock()
	for _, f := range onEnd {
		f()
	}
	if perClient {
		id := clientID(cs.ss)
		c.log.Info("client session ended", "session", id)
		c.pool.ReleaseClient(id)
	}
}

// id identifies a client session for per-client connections, which are
// closed when the session ends; or the client a sessionless request names
// (clientkey.go), whose connections are closed when idle.
func (c *clientSessions) id(ctx context.Context, ss *mcp.ServerSession) upstream.ClientID {
	if id, ok := keyedClient(ctx); ok {
		return id
	}
	if ss == nil {
		return "none"
	}
	cs := c.get(ctx, ss)
	cs.mu.Lock()
	cs.perClient = true
	cs.mu.Unlock()
	return clientID(ss)
}

func clientID(ss *mcp.ServerSession) upstream.ClientID {
	id := ss.ID()
	if id == "" {
		id = fmt.Sprintf("session-%p", ss)
	}
	return upstream.ClientID(id)
}

// setLevel records a session's logging/setLevel and returns the lowest
// level of all sessions.
func (c *clientSessions) setLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) mcp.LoggingLevel {
	cs := c.get(ctx, ss)
	cs.mu.Lock()
	cs.level = level
	cs.mu.Unlock()
	return c.lowestLevel()
}

// lowestLevel is the lowest level any client session, or any 2026-07-28
// client that names itself (removed2026.go), asked for, "" if none did.
// Servers are asked for it (a shared connection serves every client);
// each client then gets only what its own level lets through, which the
// SDK filters per session (per request for 2026-07-28 clients).
func (c *clientSessions) lowestLevel() mcp.LoggingLevel {
	low := c.levels.lowest() // of 2026-07-28 clients over HTTP (removed2026.go)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cs := range c.sessions {
		cs.mu.Lock()
		lv := cs.level
		cs.mu.Unlock()
		if lv != "" && (low == "" || levelRank[lv] < levelRank[low]) {
			low = lv
		}
	}
	return low
}

// sessionMiddleware makes each session's state at its initialize, so that
// WatchSessions' watchers see every session from its start.
func (c *clientSessions) sessionMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "initialize" && err == nil {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
				cs := c.get(ctx, ss)
				cs.mu.Lock()
				cs.runID = c.runIDOf(nil, req.GetExtra())
				cs.mu.Unlock()
			}
		}
		return res, err
	}
}

// openOwnConnections opens, for a client session that has just
// initialized and declared roots, its own connection to each per-client
// server of profile p, as the server would be started for the client
// directly: a server that asks for the roots as it initializes
// (server-everything does) gets this client's then, not during its first
// call. Without roots a connection waits for the client's first request
// of the server: a child per client and server is started only for what
// is used. The connection runs for the session's task (the X-Task-Id
// header of its initialize, else the instance's --task-id).
func (c *clientSessions) openOwnConnections(ctx context.Context, p *profile, req *mcp.InitializedRequest) {
	ss := req.Session
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil || ip.ProtocolVersion >= firstSessionlessVersion {
		return
	}
	v := p.view.Load()
	var open []*upstream.Server
	for _, srv := range c.pool.Servers() {
		if srv.PerClient() && (v == nil || v.hasServer(srv.Config().Name)) {
			open = append(open, srv)
		}
	}
	if len(open) == 0 {
		return
	}
	cs := c.get(ctx, ss)
	cs.mu.Lock()
	runID := cs.runID
	cs.mu.Unlock()
	// The opening lasts until it is done or the session ends, not just
	// the notification's handling.
	octx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cs.whenEnded(cancel)
	for _, srv := range open {
		r := c.request(ctx, srv, ss, runID)
		go func() {
			if err := srv.OpenClient(octx, r); err != nil {
				c.log.Debug("opening a client's own connection at its start failed; its first request opens it", "server", srv.Config().Name, "session", sessionID(ss), "error", err)
			}
		}()
	}
}

// rootsChanged passes a client's notifications/roots/list_changed on to
// the servers of profile p whose roots are the client's: its own
// connections, and over stdio the shared ones (see
// upstream.Server.RootsChanged).
func (c *clientSessions) rootsChanged(ctx context.Context, p *profile, ss *mcp.ServerSession) {
	if ss == nil {
		return
	}
	sole := c.sole.is(ss)
	id := c.id(ctx, ss)
	v := p.view.Load()
	for _, srv := range c.pool.Servers() {
		if v == nil || v.hasServer(srv.Config().Name) {
			srv.RootsChanged(ctx, id, sole)
		}
	}
}
