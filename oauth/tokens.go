package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// record is what a token file holds: the tokens, and what refreshing them
// takes (the client the authorization server registered, its token
// endpoint), for the server's URL.
type record struct {
	Server string `json:"server"`
	URL    string `json:"url"` // the MCP endpoint the tokens were issued for
	// Issuer is the authorization server that issued the tokens and
	// registered the client (empty in files of older versions).
	Issuer       string           `json:"issuer,omitempty"`
	TokenURL     string           `json:"token_url"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
	Token        *oauth2.Token    `json:"token"`
	Obtained     time.Time        `json:"obtained"`
}

// refreshMargin is how long before its expiry an access token is
// refreshed: a minute, or half its lifetime if that is shorter, so that a
// call never goes out with a token about to expire on the way.
func refreshMargin(obtained, expiry time.Time) time.Duration {
	m := time.Minute
	if !obtained.IsZero() {
		m = min(m, expiry.Sub(obtained)/2)
	}
	return m
}

// fresh reports whether rec's access token is good for now, and not due
// for a refresh.
func (rec *record) fresh(now time.Time) bool {
	t := rec.Token
	if t == nil || t.AccessToken == "" {
		return false
	}
	return t.Expiry.IsZero() || now.Add(refreshMargin(rec.Obtained, t.Expiry)).Before(t.Expiry)
}

func (rec *record) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     rec.ClientID,
		ClientSecret: rec.ClientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: rec.TokenURL, AuthStyle: rec.AuthStyle},
		Scopes:       rec.Scopes,
	}
}

// entry is the state of one server's tokens in this process: the record
// as last read from or written to its file, re-read whenever the file
// changes (a login or a refresh by another process).
type entry struct {
	store *Store
	name  string
	path  string

	mu     sync.Mutex
	rec    *record
	stamp  stamp  // of the file rec was read from; zero: no file
	broken error  // the file could not be read or parsed
	dead   string // why the tokens cannot be refreshed (refused); cleared by a new file
}

// load returns the current record, re-reading the file if it changed.
// e.mu must be held.
func (e *entry) load() *record {
	st, err := stampOf(e.path)
	if err == nil && st == e.stamp && (e.rec != nil || e.broken != nil) {
		return e.rec
	}
	if err != nil && e.stamp == (stamp{}) && e.rec == nil && e.broken == nil {
		return nil // still no file
	}
	rec, st, err := e.store.read(e.name)
	e.rec, e.stamp, e.broken, e.dead = rec, st, err, ""
	if err != nil {
		e.store.log.Warn("cannot read stored OAuth tokens", "server", e.name, "error", err)
	}
	return rec
}

// save makes rec the server's tokens, in memory and on disk. e.mu must be
// held.
func (e *entry) save(rec *record) error {
	st, err := e.store.write(e.name, rec)
	if err != nil {
		return err
	}
	e.rec, e.stamp, e.broken, e.dead = rec, st, nil, ""
	return nil
}

// token returns the access token to send to url, refreshing it first when
// it is due. No token (nil, nil) means none is usable: the request goes
// out without one, and the server's 401 leads to Authorize.
func (e *entry) token(url string) (*oauth2.Token, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rec := e.load()
	if rec == nil || rec.URL != url || rec.Token == nil {
		return nil, nil
	}
	if rec.fresh(time.Now()) {
		return rec.Token, nil
	}
	if rec.Token.RefreshToken == "" || e.dead != "" {
		if rec.Token.Valid() {
			return rec.Token, nil // due, but nothing to refresh it with
		}
		return nil, nil
	}
	rec, err := e.refresh(rec)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, nil // refused: dead says why
	}
	return rec.Token, nil
}

// retry is called for a 401 answer to a request that carried the access
// token rejected ("" for none). It reports whether sending the request
// again may succeed: the current token is another one by now, or a
// refresh got a new one. The transport retries a request once: a server
// that refuses even fresh tokens fails the connection, and the
// supervisor's backoff bounds the refreshes that costs.
func (e *entry) retry(url, rejected string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	rec := e.load()
	if rec == nil || rec.URL != url || rec.Token == nil || rec.Token.AccessToken == "" {
		return false
	}
	if rec.Token.AccessToken != rejected {
		return rec.Token.Valid() // someone refreshed or logged in meanwhile
	}
	if rec.Token.RefreshToken == "" || e.dead != "" {
		return false
	}
	next, err := e.refresh(rec)
	return err == nil && next != nil
}

// refresh spends rec's refresh token on a new access token, holding the
// token file's lock: another process may have refreshed first, and then
// its result is used. It returns nil, nil when the authorization server
// refused (dead says why), and an error when it could not be asked. e.mu
// must be held.
func (e *entry) refresh(rec *record) (*record, error) {
	unlock, err := e.store.lock(e.name)
	if err != nil {
		return nil, fmt.Errorf("locking the tokens of %s: %w", e.name, err)
	}
	defer unlock()
	if cur := e.load(); cur != rec {
		switch {
		case cur == nil || cur.URL != rec.URL || cur.Token == nil:
			return nil, nil // logged out, or logged in elsewhere
		case cur.fresh(time.Now()):
			return cur, nil
		}
		rec = cur
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, e.store.hc), requestTimeout)
	defer cancel()
	// An empty access token makes the refresher refresh now.
	tok, err := rec.config().TokenSource(ctx, &oauth2.Token{RefreshToken: rec.Token.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
			e.dead = "the authorization server refused its refresh token (" + refusal(re) + ")"
			e.store.log.Warn("OAuth refresh refused; the server needs login", "server", e.name, "reason", refusal(re))
			return nil, nil
		}
		return nil, &RefreshError{Server: e.name, Err: err}
	}
	next := *rec
	next.Token, next.Obtained = tok, time.Now()
	if err := e.save(&next); err != nil {
		// The new tokens work for this process; the old refresh token
		// may be spent, so say loudly that the next start needs login.
		e.store.log.Error("refreshed OAuth tokens could not be stored; they last until mcpmux stops", "server", e.name, "error", err)
		e.rec = &next
	}
	e.store.log.Debug("OAuth access token refreshed", "server", e.name, "expires", tok.Expiry)
	return &next, nil
}

// refusal is what an authorization server said when it refused.
func refusal(re *oauth2.RetrieveError) string {
	switch {
	case re.ErrorCode != "" && re.ErrorDescription != "":
		return re.ErrorCode + ": " + re.ErrorDescription
	case re.ErrorCode != "":
		return re.ErrorCode
	}
	return fmt.Sprintf("HTTP %d", re.Response.StatusCode)
}

// why says why url has no usable tokens, for a NeedsLoginError.
func (e *entry) why(url string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	rec := e.load()
	switch {
	case e.broken != nil:
		return fmt.Sprintf("its token file cannot be read (%v)", e.broken)
	case rec == nil || rec.Token == nil:
		return "no tokens are stored for it"
	case rec.URL != url:
		return fmt.Sprintf("the stored tokens are for %s, not %s", rec.URL, url)
	case e.dead != "":
		return e.dead
	case rec.Token.RefreshToken == "":
		return "the server refused the access token, and there is no refresh token"
	}
	return "the server refused the access token"
}

// waitChanged returns when the token file differs from the version last
// read (a login wrote it), or when ctx ends.
func (e *entry) waitChanged(ctx context.Context) error {
	e.mu.Lock()
	since := e.stamp
	e.mu.Unlock()
	return waitFileChange(ctx, e.path, since, e.store.changePoll())
}

// DefaultChangePoll is how often a file is looked at while waiting for it
// to change. A stat a second per server that needs login costs nothing,
// works on every file system (inotify does not see a volume's files
// replaced from outside a container), and makes a login take effect
// within a second.
const DefaultChangePoll = time.Second

// waitFileChange polls path every poll until its stamp is not since.
func waitFileChange(ctx context.Context, path string, since stamp, poll time.Duration) error {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		st, _ := stampOf(path)
		if st != since {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// source is the token source of one server URL, backed by its entry.
type source struct {
	e   *entry
	url string
}

func (s source) Token() (*oauth2.Token, error) { return s.e.token(s.url) }

// RefreshError is a refresh that could not be done (the authorization
// server did not answer, or not with a token): the tokens may still be
// good, and the next request tries again.
type RefreshError struct {
	Server string
	Err    error
}

func (e *RefreshError) Error() string {
	return fmt.Sprintf("refreshing the OAuth access token of %s failed: %v", e.Server, e.Err)
}
func (e *RefreshError) Unwrap() error { return e.Err }

// bearer returns the access token a request carried, or "".
func bearer(req *http.Request) string {
	h := req.Header.Get("Authorization")
	if len(h) > 7 && (h[:7] == "Bearer " || h[:7] == "bearer ") {
		return h[7:]
	}
	return ""
}
