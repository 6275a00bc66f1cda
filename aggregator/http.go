package aggregator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/upstream"
)

// HTTPOptions configure the HTTP front. The zero value serves without
// authentication and allows only loopback browser origins. The limits and
// origins of mcpmux.yaml (max_request_bytes, request_body_timeout,
// max_sessions, session_timeout, allowed_origins) are read from the
// current settings on every request.
type HTTPOptions struct {
	// Tokens, if not empty, are the tokens accepted as "Authorization:
	// Bearer <token>" on every request but /healthz. Each is its own
	// principal: a session can only be used with the token that opened it.
	Tokens *Tokens
	// AllowedOrigins are browser origins allowed besides the loopback ones
	// and those of the settings (patterns as in config.ParseOrigin).
	AllowedOrigins []string
}

// eventStoreBytes bounds the memory of the event store that lets HTTP
// clients resume a dropped stream: the messages of all sessions together,
// oldest dropped first, twice max_result_bytes so that the largest result
// fits with room to spare. Each session's messages go when it ends.
func eventStoreBytes(s *config.Settings) int {
	return int(max(2*int64(s.MaxResultBytes), 4<<20))
}

// HTTPHandler serves the default profile at /mcp, each profile at
// /mcp/{profile}, the pool's health at /healthz and Prometheus metrics at
// /metrics (behind the token, as /mcp: see guard).
func (a *Aggregator) HTTPHandler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	mux := http.NewServeMux()
	serveMCP := func(w http.ResponseWriter, r *http.Request) { a.serveMCP(w, r, &o) }
	mux.HandleFunc("/mcp", serveMCP)
	mux.HandleFunc("/mcp/{profile}", serveMCP)
	mux.HandleFunc("GET /healthz", a.serveHealth)
	mux.Handle("GET /metrics", a.metrics.Handler())
	return a.guard(mux, &o)
}

// guard puts the checks every request passes in front of the routes:
// Origin first, so that a foreign page learns nothing, not even whether it
// would need a token; then the Host, against DNS rebinding, on every path
// (the go-sdk checks it on the profiles' handlers only, and a page whose
// name was rebound to 127.0.0.1 must not read /metrics, nor learn the
// profile names from a 404); then the token, for everything but /healthz,
// which stays open for probes (it shows states, with secrets masked).
func (a *Aggregator) guard(routes http.Handler, o *HTTPOptions) http.Handler {
	authed := requireToken(o.Tokens, routes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A client gets request_body_timeout to send its request: a
		// connection that stalls mid-body is cut off instead of holding
		// its file descriptor for good. serveMCP lifts the deadline once
		// the body is in, so that a long response stream is not cut.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(a.current.Load().RequestBodyTimeout))
		if !originAllowed(r, slices.Concat(a.current.Load().AllowedOrigins, o.AllowedOrigins)) {
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

func (a *Aggregator) serveMCP(w http.ResponseWriter, r *http.Request, o *HTTPOptions) {
	body, ok := limitBody(w, r, a.current.Load().MaxRequestBytes)
	if !ok {
		return
	}
	body = liftBody(r, body) // fields of tasks the go-sdk would drop (taskfront.go)
	// Nothing more is read from the client for this request: a read
	// deadline now would cancel a long tool call's response stream (the
	// server's background read would time out).
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	name := r.PathValue("profile")
	p := a.profile(name)
	if p == nil {
		known := a.Settings().ProfileNames()
		http.Error(w, fmt.Sprintf("404 unknown profile %q; profiles: %s (or /mcp for all tools)", name, strings.Join(known, ", ")), http.StatusNotFound)
		return
	}
	opens := a.opensSession(r, body)
	if opens && a.draining.Load() {
		a.refuseDraining(w, body)
		return
	}
	switch id := r.Header.Get(sessionIDHeader); {
	case a.stateless:
		// No session to track or admit: each request is served on its
		// own, and max_connections bounds them.
	case id != "":
		defer a.sessions.begin(id)()
	case opens:
		done, limit, ok := a.sessions.admit()
		if !ok {
			a.refuseSession(w, body, limit)
			return
		}
		defer done()
	}
	sw := newSSEWriter(w)
	defer sw.finish()
	var rw http.ResponseWriter = sw
	if id := r.Header.Get(sessionIDHeader); r.Method == http.MethodGet && id != "" && !a.stateless {
		// A session's event stream: where mcpmux sends it what the SDK
		// cannot (taskfront.go).
		var done func()
		rw, done = a.streams.track(id, sw)
		defer done()
	}
	p.httpHandler(a, o).ServeHTTP(rw, r)
}

// sessionIDHeader is the Streamable HTTP session header.
const sessionIDHeader = "Mcp-Session-Id"

// httpHandler returns the profile's Streamable HTTP handler, creating it on
// first use. The handler keeps the profile's client sessions.
func (p *profile) httpHandler(a *Aggregator, o *HTTPOptions) *mcp.StreamableHTTPHandler {
	if h := p.http.Load(); h != nil {
		return h
	}
	opts := &mcp.StreamableHTTPOptions{
		// a.sessions applies session_timeout instead, and limitBody
		// max_request_bytes: both follow reloads.
		SessionTimeout:      0,
		MaxRequestBodyBytes: -1,
		// Priming events, event ids and replay on Last-Event-ID (see
		// sse.go and eventStoreBytes).
		EventStore: a.events,
		Logger:     logs.QuietInfo(a.log.With("component", "http", "profile", p.name)),
	}
	if a.stateless {
		// No Mcp-Session-Id: every request is a session of its own, which
		// ends with it. Nor resumption: a dropped stream's replay is a GET
		// of its session, and any replica may get it.
		opts.Stateless = true
		opts.EventStore = nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, opts)
	if p.http.CompareAndSwap(nil, h) {
		return h
	}
	return p.http.Load()
}

// Health is the body of /healthz.
type Health struct {
	Status  string            `json:"status"`
	Ready   bool              `json:"ready"`
	Servers []upstream.Status `json:"servers"`
	// InvalidFiles are the config files that were skipped (or whose
	// previous version keeps running) because they are invalid.
	InvalidFiles []InvalidFile `json:"invalid_files"`
}

// InvalidFile is a config file that could not be used, and why.
type InvalidFile struct {
	File  string `json:"file"`
	Line  int    `json:"line,omitempty"`
	Error string `json:"error"`
}

// SetInvalidFiles records the config files of the latest load that could
// not be used, for Health.
func (a *Aggregator) SetInvalidFiles(errs []*config.FileError) {
	files := make([]InvalidFile, len(errs))
	for i, fe := range errs {
		files[i] = InvalidFile{File: fe.File, Line: fe.Line, Error: fe.Err.Error()}
	}
	a.invalidFiles.Store(&files)
}

// Health reports whether start-up is over and each server's status. The
// status is "starting", then "ok", or "degraded" while a server is failed,
// restarting or needs login (mcpmux itself still serves the others);
// "draining" once mcpmux is shutting down (see Drain).
func (a *Aggregator) Health() Health {
	h := Health{Status: "ok", Servers: a.pool.Statuses()}
	select {
	case <-a.ready:
		h.Ready = true
		for _, st := range h.Servers {
			if st.State == upstream.StateFailed || st.State == upstream.StateRestarting || st.State == upstream.StateNeedsLogin {
				h.Status = "degraded"
			}
		}
	default:
		h.Status = "starting"
	}
	if a.draining.Load() {
		h.Status = StatusDraining
	}
	if h.Servers == nil {
		h.Servers = []upstream.Status{}
	}
	h.InvalidFiles = []InvalidFile{}
	if files := a.invalidFiles.Load(); files != nil {
		h.InvalidFiles = *files
	}
	return h
}

func (a *Aggregator) serveHealth(w http.ResponseWriter, r *http.Request) {
	h := a.Health()
	body, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if h.Status == StatusDraining {
		// Load balancers and readiness probes take the replica out.
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	// Errors may quote a child's stderr, which may echo a secret.
	_, _ = io.WriteString(w, a.mask.Mask(string(body))+"\n")
}
