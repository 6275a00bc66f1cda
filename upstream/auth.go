package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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

// authHandler returns the server's OAuth handler, made on first use and
// kept for the server's life (a login's registration and granted scopes
// with it); nil for a server without auth.
func (s *Server) authHandler() (oauth.Handler, error) {
	s.authOnce.Do(func() {
		opts := &oauth.HandlerOptions{}
		if f := s.opts.Authorize; f != nil {
			opts.Authorize = func(ctx context.Context, authURL string) error { return f(ctx, s.cfg.Name, authURL) }
		}
		s.auth, s.authErr = oauth.NewHandler(s.cfg, s.opts.Tokens, opts)
		if s.authErr != nil {
			s.authErr = fmt.Errorf("auth: %w", s.authErr)
		}
	})
	return s.auth, s.authErr
}

// closeAuth releases the OAuth handler, once the server has stopped.
func (s *Server) closeAuth() {
	s.authOnce.Do(func() {}) // waits for a handler being made
	if s.auth != nil {
		_ = s.auth.Close()
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
	h, _ := s.authHandler()
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
