// Package front is mcpmux's HTTP front: what every request to an HTTP
// mcpmux passes before the MCP engine (package aggregator) sees it, and the
// routes besides MCP. As the go-sdk keeps mcp.Server apart from
// mcp.StreamableHTTPHandler, mcpmux keeps the engine apart from this:
//
//   - the checks of every request (checkRequests): Origin, Host against DNS
//     rebinding, bearer tokens (tokens.go), the body's size and read time
//     (bodylimit.go);
//   - client sessions: max_sessions, session_timeout, and refusing new
//     ones while draining (sessions.go);
//   - event streams: priming, retry and keepalive (sse.go), and the event
//     store that lets a client resume a dropped stream;
//   - /healthz and /metrics.
package front

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/replica"
)

// Engine is the MCP side a front serves (an *aggregator.Aggregator).
type Engine interface {
	// Server returns the MCP server of a profile, or nil if there is none.
	Server(profile string) *mcp.Server
	// Settings returns the current settings, without blocking.
	Settings() *config.Settings
	// Stateless reports whether the engine serves without sessions.
	Stateless() bool
	// Draining reports whether the instance is shutting down (see
	// aggregator.Aggregator.Drain).
	Draining() bool
	// HealthReport is what /healthz serves, as JSON.
	HealthReport() any
	// WatchSessions calls started with each client session once it is
	// initialized, with the context of the session (the go-sdk's is that
	// of the HTTP request that opened it), and the func it returns once
	// the session has ended.
	WatchSessions(started func(context.Context, *mcp.ServerSession) (ended func()))
	// LiftBody and TrackStream are the seams of what the SDK cannot carry
	// (see aggregator/taskfront.go): LiftBody gives the SDK a POST's body
	// to read, TrackStream wraps the writer of a session's GET stream.
	LiftBody(r *http.Request, body []byte) []byte
	TrackStream(sessionID string, w http.ResponseWriter) (http.ResponseWriter, func())
	// AnswerRemoved answers, instead of the SDK, a POST of MCP
	// 2026-07-28 that the SDK would refuse for want of the request's
	// _meta: ping and logging/setLevel as a go-sdk v1.8.0 client sends
	// them (see aggregator/removed2026.go). It returns the answer's
	// result or error, and whether it answered.
	AnswerRemoved(r *http.Request, body []byte) (json.RawMessage, *jsonrpc.Error, bool)
}

// Options configure a front. Engine is required.
type Options struct {
	Engine Engine
	// Metrics are served at /metrics and count refused sessions; nil
	// serves none.
	Metrics *metrics.Metrics
	// Tokens, if not empty, are the tokens accepted as "Authorization:
	// Bearer <token>" on every request but /healthz. Each is its own
	// principal: a session can only be used with the token that opened it.
	Tokens *Tokens
	// AllowedOrigins are browser origins allowed besides the loopback ones
	// and those of the settings (patterns as in config.ParseOrigin).
	AllowedOrigins []string
	// Logger; nil discards.
	Logger *slog.Logger
	// Mask is the masker of Logger (logs.Masked), which also masks
	// /healthz; nil masks nothing.
	Mask *logs.Masker
	// Replicas, if it has peers, forwards a 2026-07-28 retry whose
	// requestState names a peer to that peer (package replica).
	Replicas *replica.Set
}

// Front is the HTTP front of an engine. The limits and origins of
// mcpmux.yaml (max_request_bytes, request_body_timeout, max_sessions,
// session_timeout, allowed_origins) are read from the engine's current
// settings on every request; Reload applies a change to what is already
// open.
type Front struct {
	engine   Engine
	metrics  *metrics.Metrics
	tokens   *Tokens
	origins  []string
	log      *slog.Logger
	mask     *logs.Masker
	routes   http.Handler
	events   *mcp.MemoryEventStore // for clients to resume dropped streams
	sessions *sessionTracker
	replicas *replica.Set  // see Options.Replicas
	drained  chan struct{} // closed by Drain
	drain    sync.Once

	handlers sync.Map // handlerKey → *mcp.StreamableHTTPHandler
}

// New returns the front of opts.Engine.
func New(opts *Options) *Front {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Front{
		engine:   opts.Engine,
		metrics:  opts.Metrics,
		tokens:   opts.Tokens,
		origins:  opts.AllowedOrigins,
		replicas: opts.Replicas,
		log:      log,
		mask:     opts.Mask,
		events:   mcp.NewMemoryEventStore(nil),
		drained:  make(chan struct{}),
	}
	f.events.SetMaxBytes(eventStoreBytes(opts.Engine.Settings()))
	f.sessions = newSessionTracker(opts.Engine.Settings)
	opts.Engine.WatchSessions(f.sessions.add)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", f.serveMCP)
	mux.HandleFunc("/mcp/{profile}", f.serveMCP)
	mux.HandleFunc("GET /healthz", f.serveHealth)
	if f.metrics != nil {
		mux.Handle("GET /metrics", f.metrics.Handler())
	}
	f.routes = f.checkRequests(mux)
	return f
}

// ServeHTTP serves the default profile at /mcp, each profile at
// /mcp/{profile}, the engine's health at /healthz and Prometheus metrics
// at /metrics (behind the token, as /mcp: see checkRequests).
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.routes.ServeHTTP(w, r) }

// Reload applies the settings of a reload: it reads the token file again
// (see Tokens.Reload), and applies session_timeout to the idle sessions
// and max_result_bytes to the event store's bound.
func (f *Front) Reload(s *config.Settings) {
	f.tokens.Reload(s)
	f.sessions.rearm(s.SessionTimeout)
	f.events.SetMaxBytes(eventStoreBytes(s))
	f.forgetRemovedProfiles(s)
}

// forgetRemovedProfiles drops the handlers of profiles that are gone: a
// request for one gets 404 before any handler (serveMCP), and a profile
// added again has a new server.
func (f *Front) forgetRemovedProfiles(s *config.Settings) {
	current := map[*mcp.Server]bool{}
	for _, name := range append(s.ProfileNames(), "") {
		if srv := f.engine.Server(name); srv != nil {
			current[srv] = true
		}
	}
	f.handlers.Range(func(k, _ any) bool {
		if !current[k.(handlerKey).server] {
			f.handlers.Delete(k)
		}
		return true
	})
}

// eventStoreBytes bounds the memory of the event store that lets HTTP
// clients resume a dropped stream: the messages of all sessions together,
// oldest dropped first, twice max_result_bytes so that the largest result
// fits with room to spare. Each session's messages go when it ends.
func eventStoreBytes(s *config.Settings) int {
	return int(max(2*int64(s.MaxResultBytes), 4<<20))
}

// checkRequests puts the checks every request passes in front of the routes:
// Origin first, so that a foreign page learns nothing, not even whether it
// would need a token; then the Host, against DNS rebinding, on every path
// (the go-sdk checks it on the profiles' handlers only, and a page whose
// name was rebound to 127.0.0.1 must not read /metrics, nor learn the
// profile names from a 404); then the token, for everything but /healthz,
// which stays open for probes (it shows states, with secrets masked).
func (f *Front) checkRequests(routes http.Handler) http.Handler {
	authed := requireToken(f.tokens, routes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		settings := f.engine.Settings()
		// A client gets request_body_timeout to send its request: a
		// connection that stalls mid-body is cut off instead of holding
		// its file descriptor for good. serveMCP lifts the deadline once
		// the body is in, so that a long response stream is not cut.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(settings.RequestBodyTimeout))
		if !originAllowed(r, slices.Concat(settings.AllowedOrigins, f.origins)) {
			forbidOrigin(w, r)
			return
		}
		if rebindingHost(r) {
			http.Error(w, fmt.Sprintf("403 forbidden: invalid Host header %q: this server listens on loopback and answers only to loopback names", r.Host), http.StatusForbidden)
			return
		}
		if r.URL.Path == "/healthz" {
			routes.ServeHTTP(w, r)
			return
		}
		authed.ServeHTTP(w, r)
	})
}

func (f *Front) serveMCP(w http.ResponseWriter, r *http.Request) {
	settings := f.engine.Settings()
	body, ok := limitBody(w, r, settings.MaxRequestBytes)
	if !ok {
		return
	}
	// Nothing more is read from the client for this request: a read
	// deadline now would cancel a long tool call's response stream (the
	// server's background read would time out).
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	if sessionless(r, body) && f.replicas != nil {
		if peer := f.replicas.Target(r.Context(), r, body); peer != "" {
			// A retry of a call parked on another replica: it goes on
			// there.
			f.replicas.Forward(w, r, body, peer, f.log)
			return
		}
	}
	body = f.engine.LiftBody(r, body)
	name := r.PathValue("profile")
	server := f.engine.Server(name)
	if server == nil {
		http.Error(w, fmt.Sprintf("404 unknown profile %q; profiles: %s (or /mcp for all tools)", name, strings.Join(settings.ProfileNames(), ", ")), http.StatusNotFound)
		return
	}
	if sessionless(r, body) {
		if result, rpcErr, ok := f.engine.AnswerRemoved(r, body); ok {
			writeRPCAnswer(w, peekID(body), result, rpcErr)
			return
		}
		// A 2026-07-28 request stands alone, whatever the mode: no session
		// to admit or track, no stream of a session (see sessionless).
		sw := newSSEWriter(w)
		defer sw.finish()
		f.handler(server, name, true).ServeHTTP(sw, r)
		return
	}
	stateless := f.engine.Stateless()
	opens := opensSession(r, body, stateless)
	if opens && f.engine.Draining() {
		refuseDraining(w, body)
		return
	}
	id := r.Header.Get(sessionIDHeader)
	switch {
	case stateless:
		// No session to track or admit: each request is served on its
		// own, and max_connections bounds them.
	case id != "":
		defer f.sessions.begin(id)()
	case opens:
		a, limit, ok := f.sessions.admit()
		if !ok {
			f.refuseSession(w, body, limit)
			return
		}
		defer a.done()
		// For the session it opens: see sessionTracker.add.
		r = r.WithContext(context.WithValue(r.Context(), admissionKey{}, a))
	}
	sw := newSSEWriter(w)
	defer sw.finish()
	var rw http.ResponseWriter = sw
	if r.Method == http.MethodGet && id != "" && !stateless {
		// A session's event stream: where the engine sends it what the
		// SDK cannot.
		var done func()
		rw, done = f.engine.TrackStream(id, sw)
		defer done()
	}
	if id == "" || stateless {
		f.handler(server, name, stateless).ServeHTTP(rw, r)
		return
	}
	// A call the client cancels gets no answer (cancelled.go).
	if r.Method == http.MethodPost {
		f.sessions.noteCancelled(id, body)
	}
	dc := &dropCancelled{ResponseWriter: rw, sessions: f.sessions, session: id}
	f.handler(server, name, stateless).ServeHTTP(dc, r)
	if dc.held() {
		select {
		case <-r.Context().Done():
		case <-f.sessions.ended(id):
		case <-f.drained:
		}
	}
}

// Drain ends the streams held open for cancelled calls (cancelled.go),
// which would otherwise keep a draining instance waiting for their
// clients to close them.
func (f *Front) Drain() { f.drain.Do(func() { close(f.drained) }) }

// sessionIDHeader is the Streamable HTTP session header.
const sessionIDHeader = "Mcp-Session-Id"

// A handlerKey names one of a profile's two handlers: the one with
// sessions (2025-11-25 and older clients, unless --stateless) and the
// stateless one (2026-07-28 clients, and every client with --stateless).
type handlerKey struct {
	server    *mcp.Server
	stateless bool
}

// handler returns a Streamable HTTP handler of a profile's server,
// creating it on first use. The handler keeps the profile's client
// sessions; a profile removed and added again has a new server, and so a
// new handler.
func (f *Front) handler(server *mcp.Server, profile string, stateless bool) *mcp.StreamableHTTPHandler {
	key := handlerKey{server, stateless}
	if h, ok := f.handlers.Load(key); ok {
		return h.(*mcp.StreamableHTTPHandler)
	}
	opts := &mcp.StreamableHTTPOptions{
		// f.sessions applies session_timeout instead, and limitBody
		// max_request_bytes: both follow reloads.
		SessionTimeout:      0,
		MaxRequestBodyBytes: -1,
		// Priming events, event ids and replay on Last-Event-ID (see
		// sse.go and eventStoreBytes).
		EventStore: f.events,
		Logger:     logs.QuietInfo(f.log.With("component", "http", "profile", profile)),
	}
	if stateless {
		// No Mcp-Session-Id: every request is a session of its own, which
		// ends with it. Nor resumption: a dropped stream's replay is a GET
		// of its session, and any replica may get it.
		opts.Stateless = true
		opts.EventStore = nil
		// A 2026-07-28 client cancels a call by closing its stream: the
		// call's context ends with the HTTP request's (a 2025-11-25 one
		// sends notifications/cancelled instead).
		opts.PropagateRequestCancellation = true
	}
	h, _ := f.handlers.LoadOrStore(key, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, opts))
	return h.(*mcp.StreamableHTTPHandler)
}

func (f *Front) serveHealth(w http.ResponseWriter, r *http.Request) {
	body, err := json.MarshalIndent(f.engine.HealthReport(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if f.engine.Draining() {
		// Load balancers and readiness probes take the replica out.
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	// Errors may quote a child's stderr, which may echo a secret.
	_, _ = io.WriteString(w, f.mask.Mask(string(body))+"\n")
}
