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
// authentication, allows only loopback browser origins and has the default
// session timeout. The request body limit and origins from mcpmux.yaml
// (max_request_bytes, allowed_origins) are read from the current settings
// on every request.
type HTTPOptions struct {
	// Tokens, if not empty, are the tokens accepted as "Authorization:
	// Bearer <token>" on every request but /healthz. Each is its own
	// principal: a session can only be used with the token that opened it.
	Tokens *Tokens
	// AllowedOrigins are browser origins allowed besides the loopback ones
	// and those of the settings (patterns as in config.ParseOrigin).
	AllowedOrigins []string
	// SessionTimeout closes client sessions idle for that long (and with
	// them their per-client connections); zero means DefaultSessionTimeout.
	SessionTimeout time.Duration
}

// eventStoreBytes bounds the memory of the event store that lets HTTP
// clients resume a dropped stream: the messages of all sessions together,
// oldest dropped first, twice max_result_bytes so that the largest result
// fits with room to spare. Each session's messages go when it ends.
func eventStoreBytes(s *config.Settings) int {
	return int(max(2*int64(s.MaxResultBytes), 4<<20))
}

// DefaultSessionTimeout is how long an HTTP client session may stay idle.
const DefaultSessionTimeout = 30 * time.Minute

// HTTPHandler serves the default profile at /mcp, each profile at
// /mcp/{profile}, the pool's health at /healthz and Prometheus metrics at
// /metrics (behind the token, as /mcp: see guard).
func (a *Aggregator) HTTPHandler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
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
// would need a token; then the token, for everything but /healthz, which
// stays open for probes (it shows states, with secrets masked) and gets the
// go-sdk's Host check against DNS rebinding instead.
func (a *Aggregator) guard(routes http.Handler, o *HTTPOptions) http.Handler {
	authed := requireToken(o.Tokens, routes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !originAllowed(r, slices.Concat(a.current.Load().AllowedOrigins, o.AllowedOrigins)) {
			forbidOrigin(w, r)
			return
		}
		if r.URL.Path == "/healthz" {
			if rebindingHost(r) {
				http.Error(w, fmt.Sprintf("403 forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
				return
			}
			routes.ServeHTTP(w, r)
			return
		}
		authed.ServeHTTP(w, r)
	})
}

func (a *Aggregator) serveMCP(w http.ResponseWriter, r *http.Request, o *HTTPOptions) {
	if !limitBody(w, r, a.current.Load().MaxRequestBytes) {
		return
	}
	name := r.PathValue("profile")
	p := a.profile(name)
	if p == nil {
		known := a.Settings().ProfileNames()
		http.Error(w, fmt.Sprintf("404 unknown profile %q; profiles: %s (or /mcp for all tools)", name, strings.Join(known, ", ")), http.StatusNotFound)
		return
	}
	sw := newSSEWriter(w)
	defer sw.finish()
	p.httpHandler(a, o).ServeHTTP(sw, r)
}

// httpHandler returns the profile's Streamable HTTP handler, creating it on
// first use. The handler keeps the profile's client sessions.
func (p *profile) httpHandler(a *Aggregator, o *HTTPOptions) *mcp.StreamableHTTPHandler {
	if h := p.http.Load(); h != nil {
		return h
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, &mcp.StreamableHTTPOptions{
		SessionTimeout: o.SessionTimeout,
		// limitBody applies max_request_bytes instead.
		MaxRequestBodyBytes: -1,
		// Priming events, event ids and replay on Last-Event-ID (see
		// sse.go and eventStoreBytes).
		EventStore: a.events,
		Logger:     logs.QuietInfo(a.log.With("component", "http", "profile", p.name)),
	})
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
}

// Health reports whether start-up is over and each server's status. The
// status is "starting", then "ok", or "degraded" while a server is failed
// or restarting (mcpmux itself still serves the others).
func (a *Aggregator) Health() Health {
	h := Health{Status: "ok", Servers: a.pool.Statuses()}
	select {
	case <-a.ready:
		h.Ready = true
		for _, st := range h.Servers {
			if st.State == upstream.StateFailed || st.State == upstream.StateRestarting {
				h.Status = "degraded"
			}
		}
	default:
		h.Status = "starting"
	}
	if h.Servers == nil {
		h.Servers = []upstream.Status{}
	}
	return h
}

func (a *Aggregator) serveHealth(w http.ResponseWriter, r *http.Request) {
	body, err := json.MarshalIndent(a.Health(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// Errors may quote a child's stderr, which may echo a secret.
	_, _ = io.WriteString(w, a.mask.Mask(string(body))+"\n")
}
