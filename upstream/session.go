package upstream

import (
	"log/slog"
	"sync/atomic"

	"github.com/mcpmux/mcpmux/config"
)

// sessionMode is whether a server's client sessions each get their own
// connection: set at the start for session: per-client, and when session:
// auto finds the server keeps state per session. It needs only the
// server's config, whether the pool serves many clients, and a logger.
type sessionMode struct {
	cfg  *config.Server
	many bool // Options.ManyClients
	log  *slog.Logger
	on   atomic.Bool // per-client
}

func newSessionMode(cfg *config.Server, many bool, log *slog.Logger) *sessionMode {
	m := &sessionMode{cfg: cfg, many: many, log: log}
	m.on.Store(cfg.PerClient())
	return m
}

// perClient reports whether each client session gets its own connection
// (Server.PerClient).
func (m *sessionMode) perClient() bool { return m.on.Load() }

// mode is the session mode for Status: what the server's clients get (for
// session: auto, what it became).
func (m *sessionMode) mode() string {
	if m.perClient() {
		return config.SessionPerClient
	}
	return config.SessionShared
}

// keepsState makes a server with session: auto per-client, when mcpmux
// serves several clients, once it shows that it keeps state per session,
// for why: on one shared session its clients would see each other's
// (server-everything gives every client the roots of the first, and lists
// and reads the resources one client made to all). It reports whether the
// mode changed.
func (m *sessionMode) keepsState(why string) bool {
	if !m.cfg.AutoSession() || !m.many || m.perClient() {
		return false
	}
	if m.on.CompareAndSwap(false, true) {
		m.log.Info("the server keeps state per session: each client gets its own connection from now on (session: auto)", "because", why)
		return true
	}
	return false
}
