package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// receiver takes the authorization server's redirect at mcpmux's loopback
// address (RFC 8252 §7.3) and hands its code to the flow waiting for it.
type receiver struct {
	url     string // the redirect URI: http://127.0.0.1:PORT/callback
	srv     *http.Server
	results chan redirectResult
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
	case q.Get("error") != "":
		res.err = fmt.Errorf("the authorization server refused: %s", q.Get("error"))
		if d := q.Get("error_description"); d != "" {
			res.err = fmt.Errorf("%w: %s", res.err, d)
		}
	case q.Get("code") != "":
		res.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	default:
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
