package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/oauth"
)

// StateNeedsLogin is the state of a server with auth: whose tokens are
// missing, expired beyond refresh or revoked: it waits for `mcpmux login`
// (see awaitLogin).
const StateNeedsLogin State = "needs login"

// NeedsLoginError is why a server with auth: cannot be used until someone
// authorizes mcpmux again (see package oauth); calls get it inside an
// *UnavailableError.
type NeedsLoginError = oauth.NeedsLoginError

// asNeedsLogin returns the NeedsLoginError in err's chain, or nil.
func asNeedsLogin(err error) *NeedsLoginError {
	var nl *NeedsLoginError
	if errors.As(err, &nl) {
		return nl
	}
	return nil
}

// serverAuth is the OAuth of a server with auth:, kept apart from the
// Server: it needs only the server's config and the pool's Tokens and
// Authorize.
type serverAuth struct {
	cfg       *config.Server
	tokens    *oauth.Store
	authorize func(ctx context.Context, server, authURL string) error

	once sync.Once     // makes h
	h    oauth.Handler // the auth: section's OAuth handler; nil without one
	err  error
}

// handler returns the server's OAuth handler, made on first use and kept
// for the server's life (a login's registration and granted scopes with
// it); nil for a server without auth.
func (a *serverAuth) handler() (oauth.Handler, error) {
	a.once.Do(func() {
		opts := &oauth.HandlerOptions{}
		if f := a.authorize; f != nil {
			opts.Authorize = func(ctx context.Context, authURL string) error { return f(ctx, a.cfg.Name, authURL) }
		}
		a.h, a.err = oauth.NewHandler(a.cfg, a.tokens, opts)
		if a.err != nil {
			a.err = fmt.Errorf("auth: %w", a.err)
		}
	})
	return a.h, a.err
}

// close releases the OAuth handler, once the server has stopped.
func (a *serverAuth) close() {
	a.once.Do(func() {}) // waits for a handler being made
	if a.h != nil {
		_ = a.h.Close()
	}
}

// needLogin puts the server in StateNeedsLogin for err, and says so once.
func (s *Server) needLogin(err error) {
	s.mu.Lock()
	was := s.state
	s.setState(StateNeedsLogin, err)
	s.mu.Unlock()
	if was != StateNeedsLogin {
		s.log.Warn("server needs login; its calls fail until then, the other servers are not affected", "error", err)
	}
}

// awaitLogin puts the server in StateNeedsLogin for err and waits until
// its credentials change (a login stored tokens, a token file was
// replaced) or it is stopped. It reports whether to go on.
func (s *Server) awaitLogin(err error) bool {
	s.needLogin(err)
	h, _ := s.auth.handler()
	if h == nil || h.WaitChanged(s.ctx) != nil {
		return false
	}
	s.log.Info("server's credentials changed; connecting again")
	return true
}

// loginLost handles a call that found the server's authorization gone:
// the connection c is given up and the server needs login; the supervisor
// connects again once the credentials change.
func (s *Server) loginLost(c *conn, err error) {
	c.stopTaking()
	s.mu.Lock()
	if s.cur == c {
		s.cur = nil
	}
	s.setState(StateNeedsLogin, err)
	s.mu.Unlock()
	go c.close()
}

// authTransport authorizes the requests of a legacy SSE server with the
// server's OAuth handler, as the Streamable HTTP transport does by itself:
// the token on every request, and on a 401 (or a 403 asking for more
// scope) the handler's Authorize and one retry. A request to another
// origin than the server's URL (a redirect) gets neither: its token is
// only ever sent to that URL.
type authTransport struct {
	base   http.RoundTripper
	h      oauth.Handler
	origin string // of the server's URL
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) != t.origin {
		return t.base.RoundTrip(req) // credentialTransport takes the rest off
	}
	send := func() (*http.Request, *http.Response, error) {
		r := req.Clone(req.Context())
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, nil, err
			}
			r.Body = body
		}
		ts, err := t.h.TokenSource(req.Context())
		if err != nil {
			return nil, nil, err
		}
		if ts != nil {
			tok, err := ts.Token()
			if err != nil {
				return nil, nil, err
			}
			if tok != nil {
				r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			}
		}
		resp, err := t.base.RoundTrip(r)
		return r, resp, err
	}
	sent, resp, err := send()
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if req.Body != nil && req.GetBody == nil {
		return resp, nil // cannot be sent again
	}
	if err := t.h.Authorize(req.Context(), sent, resp); err != nil {
		return nil, err
	}
	_, resp, err = send()
	return resp, err
}
