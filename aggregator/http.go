package aggregator

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/upstream"
)

// HTTPOptions configure the HTTP front. The zero value serves without
// authentication and with the default session timeout.
type HTTPOptions struct {
	// Token, if set, is required as "Authorization: Bearer <token>" on
	// every /mcp request.
	Token string
	// SessionTimeout closes client sessions idle for that long (and with
	// them their per-client connections); zero means DefaultSessionTimeout.
	SessionTimeout time.Duration
}

// DefaultSessionTimeout is how long an HTTP client session may stay idle.
const DefaultSessionTimeout = 30 * time.Minute

// HTTPHandler serves the default profile at /mcp, each profile at
// /mcp/{profile}, the pool's health at /healthz and Prometheus metrics at
// /metrics (behind the token, as /mcp).
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
	mux.Handle("GET /metrics", a.serveMetrics(&o))
	return mux
}

func (a *Aggregator) serveMCP(w http.ResponseWriter, r *http.Request, o *HTTPOptions) {
	if o.Token != "" && !validBearer(r.Header.Get("Authorization"), o.Token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpmux"`)
		http.Error(w, "401 unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
		return
	}
	name := r.PathValue("profile")
	p := a.profile(name)
	if p == nil {
		known := a.Settings().ProfileNames()
		http.Error(w, fmt.Sprintf("404 unknown profile %q; profiles: %s (or /mcp for all tools)", name, strings.Join(known, ", ")), http.StatusNotFound)
		return
	}
	p.httpHandler(a, o).ServeHTTP(w, r)
}

// httpHandler returns the profile's Streamable HTTP handler, creating it on
// first use. The handler keeps the profile's client sessions.
func (p *profile) httpHandler(a *Aggregator, o *HTTPOptions) *mcp.StreamableHTTPHandler {
	if h := p.http.Load(); h != nil {
		return h
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, &mcp.StreamableHTTPOptions{
		SessionTimeout: o.SessionTimeout,
		Logger:         logs.QuietInfo(a.log.With("component", "http", "profile", p.name)),
	})
	if p.http.CompareAndSwap(nil, h) {
		return h
	}
	return p.http.Load()
}

func validBearer(header, token string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
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
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(a.Health())
}
