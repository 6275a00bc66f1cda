package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// receiver takes the authorization server's redirect at mcpmux's loopback
// address (RFC 8252 §7.3) and hands its code to the flow waiting for it.
type receiver struct {
	url     string // the redirect URI: http://127.0.0.1:PORT/callback
	srv     *http.Server
	results chan redirectResult

	mu        sync.Mutex
	issuer    string // the authorization server's, whose responses count
	issNeeded bool   // it advertises authorization_response_iss_parameter_supported
}

// expect makes the receiver take only responses of the authorization
// server issuer (RFC 9207, as MCP 2026-07-28 asks): a response whose iss
// is another one, or that lacks the iss the server advertises, is refused
// before anything in it is used or shown, errors included.
func (r *receiver) expect(issuer string, issNeeded bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.issuer, r.issNeeded = issuer, issNeeded
}

// foreign says why an authorization response with iss is not the
// expected authorization server's, or "". The comparison is exact: no
// normalization of case, port, slash or encoding (MCP 2026-07-28).
func (r *receiver) foreign(iss string, has bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.issuer == "":
		return ""
	case has && iss != r.issuer:
		return fmt.Sprintf("the authorization response names the issuer %q, not %q, the authorization server mcpmux asked; it may come from another server (a mix-up attack, RFC 9207), so it was refused", iss, r.issuer)
	case !has && r.issNeeded:
		return fmt.Sprintf("the authorization response has no iss, though the authorization server %s says it sends one (RFC 9207); it was refused", r.issuer)
	}
	return ""
}

type redirectResult struct {
	res *auth.AuthorizationResult
	err error
}

// callbackPath is the path of the redirect URI.
const callbackPath = "/callback"

// listen starts the receiver on 127.0.0.1:port; port 0 picks a free one.
func listen(port int) (*receiver, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listening for the authorization server's redirect on 127.0.0.1:%d: %w (set auth.redirect_port to a free port)", port, err)
	}
	r := &receiver{
		url:     fmt.Sprintf("http://%s%s", ln.Addr(), callbackPath),
		results: make(chan redirectResult, 1),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+callbackPath, r.callback)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// callback receives the redirect: a code (and the state the go-sdk
// checks), or the authorization server's error.
func (r *receiver) callback(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	var res redirectResult
	switch {
	case q.Get("error") == "" && q.Get("code") == "":
	case r.foreign(q.Get("iss"), q.Has("iss")) != "":
		// Checked before the error too: a foreign server's error is
		// neither acted on nor shown.
		res.err = errors.New(r.foreign(q.Get("iss"), q.Has("iss")))
	case q.Get("error") != "":
		res.err = fmt.Errorf("the authorization server refused: %s", q.Get("error"))
		if d := q.Get("error_description"); d != "" {
			res.err = fmt.Errorf("%w: %s", res.err, d)
		}
	case q.Get("code") != "":
		res.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	if res.res == nil && res.err == nil {
		http.Error(w, "mcpmux: this address only takes an authorization server's redirect", http.StatusBadRequest)
		return
	}
	select {
	case r.results <- res:
	default: // a result is already waiting; the first one counts
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if res.err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "mcpmux: authorization failed: %v\n", res.err)
		return
	}
	fmt.Fprintln(w, "mcpmux: authorization received. You can close this window and go back to the terminal.")
}

// reset forgets a result no flow waited for, before a new flow starts.
func (r *receiver) reset() {
	select {
	case <-r.results:
	default:
	}
}

// wait returns the next redirect's result.
func (r *receiver) wait(ctx context.Context) (*auth.AuthorizationResult, error) {
	select {
	case res := <-r.results:
		return res.res, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no redirect from the authorization server arrived at %s: %w", r.url, context.Cause(ctx))
	}
}

func (r *receiver) close() {
	if err := r.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return
	}
}
