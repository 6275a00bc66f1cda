package aggregator

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listNotes orders a tool call's answer after the list_changed
// notifications that changes made while it ran are sent with. A server
// that creates a resource during a call sends list_changed before its
// answer; upstream holds the answer until mcpmux has synced the catalog
// (upstream/order.go), and the go-sdk then tells the clients a moment
// later (it debounces). Directly, a client gets list_changed before the
// answer; through mcpmux it does too: the answer waits until the caller's
// session has been sent the notification.
type listNotes struct {
	mu   sync.Mutex
	gen  uint64                        // changes of the profile's lists so far
	told map[*mcp.ServerSession]uint64 // the gen each session was last notified at
	wake chan struct{}                 // closed and replaced when told grows
}

// listNoteWait bounds the wait for a notification the SDK may not send
// (a session it does not notify).
const listNoteWait = time.Second

// changed records a change of the lists the SDK will notify of.
func (l *listNotes) changed() {
	l.mu.Lock()
	l.gen++
	l.mu.Unlock()
}

// generation is the count of changes so far.
func (l *listNotes) generation() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

// middleware is sending middleware of the profile's server: it records
// each list_changed sent to a session, once sent.
func (l *listNotes) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		switch method {
		case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && err == nil {
				l.mu.Lock()
				if l.told == nil {
					l.told = map[*mcp.ServerSession]uint64{}
				}
				l.told[ss] = l.gen
				if l.wake != nil {
					close(l.wake)
					l.wake = nil
				}
				l.mu.Unlock()
			}
		}
		return res, err
	}
}

// await returns once ss has been notified of the changes made since
// generation since, if there were any, or after listNoteWait, or when ctx
// ends; and forgets ss when it has ended meanwhile.
func (l *listNotes) await(ctx context.Context, ss *mcp.ServerSession, since uint64) {
	if ss == nil {
		return
	}
	l.mu.Lock()
	target := l.gen
	if target == since {
		l.mu.Unlock()
		return // the usual case: nothing changed during the call
	}
	l.mu.Unlock()
	timer := time.NewTimer(listNoteWait)
	defer timer.Stop()
	for {
		l.mu.Lock()
		if l.told[ss] >= target {
			l.mu.Unlock()
			return
		}
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

// notBeforeInitialized is sending middleware of profile p's server: a
// list_changed is not sent to a session that has not sent
// notifications/initialized yet, nor for changes made before it did (a
// client starting mcpmux over stdio initializes while the servers start,
// and the go-sdk would tell it of each server's lists as they come, a
// moment later). Such a client lists after it initialized, and gets every
// change up to then: directly it gets no list_changed at its start either.
// A client of MCP 2026-07-28 sends no notifications/initialized: the go-sdk
// sends it list_changed only on the subscriptions/listen stream it opened,
// which is its asking for them, so it gets each one.
func (a *Aggregator) notBeforeInitialized(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return a.listChangedAfterInitialized(p, next)
	}
}

func (a *Aggregator) listChangedAfterInitialized(p *profile, next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
			ss, _ := req.GetSession().(*mcp.ServerSession)
			if ss == nil || sessionlessSession(ss) {
				break
			}
			cs := a.clients.lookup(ss)
			if cs == nil {
				return nil, nil
			}
			cs.mu.Lock()
			initialized, at := cs.initialized, cs.listsAt
			cs.mu.Unlock()
			if !initialized || p.lists.generation() == at {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}

// sessionlessSession reports whether ss is a client's of MCP 2026-07-28
// or later, whose requests each carry the protocol version.
func sessionlessSession(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= firstSessionlessVersion
}

// forget drops what is kept of a session that ended.
func (l *listNotes) forget(ss *mcp.ServerSession) {
	l.mu.Lock()
	delete(l.told, ss)
	l.mu.Unlock()
}
