package aggregator

//lint:file-ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where it is not, and keeps each client session's log level to pass the lowest to the servers.

import (
	"context"
	"fmt"
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

// clientSessions are the client sessions of all profiles.
type clientSessions struct {
	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*clientSession
	watchers []func(context.Context, *mcp.ServerSession) func() // see WatchSessions
}

// WatchSessions calls started with each client session when mcpmux first
// sees it (its initialize, for a session that has one), with the context of
// that request, and the func it returns, if not nil, when the session has
// ended. Over HTTP the context carries the values of the HTTP request that
// opened the session (the go-sdk's session context is that request's).
func (a *Aggregator) WatchSessions(started func(context.Context, *mcp.ServerSession) (ended func())) {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	a.clients.watchers = append(a.clients.watchers, started)
}

// client returns the state of session ss, making it if there is none; ctx
// is that of the request that needs it, for WatchSessions.
func (a *Aggregator) client(ctx context.Context, ss *mcp.ServerSession) *clientSession {
	c := &a.clients
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
	go a.clientEnded(cs)
	return cs
}

// lookupClient returns the state of session ss, or nil if it has none.
func (a *Aggregator) lookupClient(ss *mcp.ServerSession) *clientSession {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	return a.clients.sessions[ss]
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

// clientEnded waits for the session of cs to end, then drops its state:
// the one cleanup of a client session.
func (a *Aggregator) clientEnded(cs *clientSession) {
	_ = cs.ss.Wait()
	a.clients.mu.Lock()
	delete(a.clients.sessions, cs.ss)
	a.clients.mu.Unlock()
	a.mu.Lock()
	for _, p := range a.profiles {
		p.lists.forget(cs.ss)
	}
	a.mu.Unlock()
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
		a.log.Info("client session ended", "session", id)
		a.pool.ReleaseClient(id)
	}
}

// clientID identifies a client session for per-client connections, which
// are closed when the session ends; or the client a sessionless request
// names (clientkey.go), whose connections are closed when idle.
func (a *Aggregator) clientID(ctx context.Context, ss *mcp.ServerSession) upstream.ClientID {
	if id, ok := keyedClient(ctx); ok {
		return id
	}
	if ss == nil {
		return "none"
	}
	cs := a.client(ctx, ss)
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
func (a *Aggregator) setLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) mcp.LoggingLevel {
	cs := a.client(ctx, ss)
	cs.mu.Lock()
	cs.level = level
	cs.mu.Unlock()
	return a.lowestLevel()
}

// lowestLevel is the lowest level any client session, or any 2026-07-28
// client that names itself (removed2026.go), asked for, "" if none did.
// Servers are asked for it (a shared connection serves every client);
// each client then gets only what its own level lets through, which the
// SDK filters per session (per request for 2026-07-28 clients).
func (a *Aggregator) lowestLevel() mcp.LoggingLevel {
	low := a.levels.lowest() // of 2026-07-28 clients over HTTP (removed2026.go)
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	for _, cs := range a.clients.sessions {
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
func (a *Aggregator) sessionMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "initialize" && err == nil {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
				cs := a.client(ctx, ss)
				cs.mu.Lock()
				cs.runID = a.runIDOf(nil, req.GetExtra())
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
func (a *Aggregator) openOwnConnections(ctx context.Context, p *profile, req *mcp.InitializedRequest) {
	ss := req.Session
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil || ip.ProtocolVersion >= firstSessionlessVersion {
		return
	}
	v := p.view.Load()
	var open []*upstream.Server
	for _, srv := range a.pool.Servers() {
		if srv.PerClient() && (v == nil || v.hasServer(srv.Config().Name)) {
			open = append(open, srv)
		}
	}
	if len(open) == 0 {
		return
	}
	cs := a.client(ctx, ss)
	cs.mu.Lock()
	runID := cs.runID
	cs.mu.Unlock()
	// The opening lasts until it is done or the session ends, not just
	// the notification's handling.
	octx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cs.whenEnded(cancel)
	for _, srv := range open {
		r := a.request(ctx, srv, ss, runID)
		go func() {
			if err := srv.OpenClient(octx, r); err != nil {
				a.log.Debug("opening a client's own connection at its start failed; its first request opens it", "server", srv.Config().Name, "session", sessionID(ss), "error", err)
			}
		}()
	}
}
