package front

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// sessionTracker keeps count of the HTTP client sessions of all profiles,
// for max_sessions, and closes those idle for session_timeout. It reads
// both from the current settings whenever it uses them, so that a reload
// applies them to the sessions already open.
//
// The go-sdk's own SessionTimeout is fixed when a handler is made, so it is
// left off; what counts as activity here is any request of the session
// open (a tool call, a GET stream), where the SDK counts only POSTs.
type sessionTracker struct {
	settings func() *config.Settings

	mu       sync.Mutex
	sessions map[string]*trackedSession // by session id
	// pending counts requests in flight that may create a session (an
	// initialize without a session id): each holds a place until the
	// session it made is in sessions, or until it is answered without
	// making one.
	pending int

	refusedLog atomic.Int64 // unix time of the last refusal logged
}

type trackedSession struct {
	ss        *mcp.ServerSession
	open      int           // requests of the session in flight
	idleSince time.Time     // when open last became 0
	timer     *time.Timer   // closes it once idle for session_timeout; stopped while open > 0
	cancelled []string      // ids of the requests its client cancelled, oldest first (cancelled.go)
	gone      chan struct{} // closed when it has ended
}

func newSessionTracker(settings func() *config.Settings) *sessionTracker {
	return &sessionTracker{settings: settings, sessions: map[string]*trackedSession{}}
}

// admission is the place admit holds for one request.
type admission struct {
	t       *sessionTracker
	settled bool // its place is given back, or became its session's
}

// admissionKey carries a request's admission in its context, which the
// go-sdk makes the context of the session the request opens: add finds it
// there.
type admissionKey struct{}

// admit holds a place for a request that may create a session. ok is
// false when the sessions and such requests already reach max_sessions;
// otherwise the place is the session's once add tracks it, and done gives
// it back if the request made none, once it is answered.
func (t *sessionTracker) admit() (a *admission, limit int, ok bool) {
	limit = t.settings().MaxSessions
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.sessions)+t.pending >= limit {
		return nil, limit, false
	}
	t.pending++
	return &admission{t: t}, limit, true
}

// settle gives the place back (done) or hands it to a session (add).
// t.mu must be held.
func (a *admission) settleLocked() {
	if !a.settled {
		a.settled = true
		a.t.pending--
	}
}

func (a *admission) done() {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	a.settleLocked()
}

// add starts tracking an initialized HTTP session; ended stops it, once
// the session has ended (see Engine.WatchSessions). ctx is the session's,
// which holds the admission of the request that opened it. Stdio sessions (no id)
// are not tracked: there is one, and it ends with stdin.
func (t *sessionTracker) add(ctx context.Context, ss *mcp.ServerSession) (ended func()) {
	id := ss.ID()
	if id == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sessions[id] != nil {
		return nil
	}
	if a, ok := ctx.Value(admissionKey{}).(*admission); ok && a.t == t {
		// The place of the request that opened it is now the session's:
		// counted once, from this moment, before its client has the
		// answer to open another.
		a.settleLocked()
	}
	s := &trackedSession{ss: ss, idleSince: time.Now(), gone: make(chan struct{})}
	s.timer = time.AfterFunc(t.settings().SessionTimeout, func() { t.expire(id, s) })
	t.sessions[id] = s
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.sessions[id] == s {
			s.timer.Stop()
			delete(t.sessions, id)
			close(s.gone)
		}
	}
}

// begin marks a request of session id as open; end marks it done. A
// session with a request open is never idle.
func (t *sessionTracker) begin(id string) (end func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sessions[id]
	if s == nil {
		return func() {}
	}
	s.open++
	s.timer.Stop()
	return sync.OnceFunc(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		// A session that ended meanwhile (a DELETE) keeps no timer, nor
		// with it the session, alive.
		if s.open--; s.open == 0 && t.sessions[id] == s {
			s.idleSince = time.Now()
			s.timer.Reset(t.settings().SessionTimeout)
		}
	})
}

// expire closes session s if it has been idle for session_timeout as it
// is now; a timer armed under an older, longer timeout is re-armed.
func (t *sessionTracker) expire(id string, s *trackedSession) {
	t.mu.Lock()
	if t.sessions[id] != s || s.open > 0 {
		t.mu.Unlock()
		return
	}
	if left := time.Until(s.idleSince.Add(t.settings().SessionTimeout)); left > 0 {
		s.timer.Reset(left)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	_ = s.ss.Close() // the SDK forgets it; the engine then calls add's ended
}

// rearm applies a changed session_timeout to the idle sessions.
func (t *sessionTracker) rearm(timeout time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.sessions {
		if s.open == 0 {
			s.timer.Reset(max(0, time.Until(s.idleSince.Add(timeout))))
		}
	}
}

// OpenSessions is what max_sessions bounds: the HTTP client sessions open,
// and the requests in flight that may open one.
func (f *Front) OpenSessions() int { return f.sessions.count() }

// count is the number of tracked sessions and places held by admit.
func (t *sessionTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions) + t.pending
}

// codeServerBusy is the JSON-RPC error (in the range for server errors) of
// a session refused at max_sessions.
const codeServerBusy = -32000

// refuseSession answers a request that would open a session past
// max_sessions: 503, with a JSON-RPC error saying why and what to do.
func (f *Front) refuseSession(w http.ResponseWriter, body []byte, limit int) {
	if f.metrics != nil {
		f.metrics.SessionRefused()
	}
	if now := time.Now().Unix(); f.sessions.refusedLog.Swap(now) < now-10 {
		f.log.Warn("client session refused: max_sessions reached (logged at most every 10s)", "max_sessions", limit)
	}
	writeRPCError(w, http.StatusServiceUnavailable, peekID(body), codeServerBusy,
		fmt.Sprintf("mcpmux already has %d client sessions, its max_sessions: close sessions you no longer use (DELETE them), try again later, or raise max_sessions in mcpmux.yaml", limit))
}

// opensSession reports whether r would open a client session: an
// initialize, where a client starts, without a session id. (The go-sdk
// answers any other request without one, such as server/discover, on a
// session that ends with it.) A batch is counted as one that may hold an
// initialize.
func opensSession(r *http.Request, body []byte, stateless bool) bool {
	if r.Method != http.MethodPost || (!stateless && r.Header.Get(sessionIDHeader) != "") {
		return false
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return true
	}
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == "initialize"
}

// refuseDraining answers a request that would open a session on a
// draining replica: 503, with a JSON-RPC error saying what to do.
func refuseDraining(w http.ResponseWriter, body []byte) {
	writeRPCError(w, http.StatusServiceUnavailable, peekID(body), codeServerBusy,
		"this mcpmux is shutting down and takes no new sessions: connect again (behind a load balancer, to another replica)")
}

// sessionless reports whether r is a request of the sessionless protocol
// (MCP 2026-07-28 and later): its MCP-Protocol-Version header names such a
// version, or, without the header, its body's
// _meta["io.modelcontextprotocol/protocolVersion"] does (the stateless
// handler then answers the missing header as the spec says, -32020). The
// go-sdk serves these only from a stateless handler, its documented way;
// mcpmux gives each profile's server one beside the handler with sessions,
// and chooses per request, as the spec's backward compatibility asks of a
// server of both eras.
func sessionless(r *http.Request, body []byte) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= firstSessionlessVersion
	}
	if r.Method != http.MethodPost || !bytes.Contains(body, []byte(metaProtocolVersion)) {
		return false
	}
	var msg struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	v, _ := msg.Params.Meta[metaProtocolVersion].(string)
	return v >= firstSessionlessVersion
}

const (
	// firstSessionlessVersion is the first protocol version without
	// initialize and sessions. Versions are dates: they sort as strings.
	firstSessionlessVersion = "2026-07-28"
	metaProtocolVersion     = "io.modelcontextprotocol/protocolVersion"
)
