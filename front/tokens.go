package front

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
)

// Tokens are the bearer tokens an HTTP front accepts. Set (or Reload, for
// a rotated token file) replaces them while serving: from then on a
// request carrying a removed token gets 401, also for the sessions that
// token opened. A nil *Tokens, or an empty set, means no authentication.
type Tokens struct {
	cur atomic.Pointer[tokenSet]

	// Where they were read from, for Reload (see ReadTokens).
	mu      sync.Mutex
	sources TokenSources
	file    string   // the token file read; "" if none, and Reload does nothing
	current []string // the tokens in force
	lastErr string   // last problem logged, so that each is logged once
	log     *slog.Logger
	mask    *logs.Masker // learns every token read
}

// NewTokens returns the set of the given tokens; blank ones are ignored.
func NewTokens(tokens ...string) *Tokens {
	t := &Tokens{}
	t.cur.Store(newTokenSet(tokens))
	return t
}

// Set replaces the accepted tokens. It refuses an empty set: a front that
// started with authentication never serves without it.
func (t *Tokens) Set(tokens []string) error {
	ts := newTokenSet(tokens)
	if ts.empty() {
		return errors.New("no token given: the accepted tokens stay as they were")
	}
	t.cur.Store(ts)
	return nil
}

// Empty reports whether t accepts no token, i.e. requires none.
func (t *Tokens) Empty() bool { return t == nil || t.cur.Load().empty() }

// tokenSet holds the bearer tokens HTTP clients may send. Each token is
// its own principal: the go-sdk binds a session to the TokenInfo.UserID of
// the request that opened it and answers 403 to a request for that session
// carrying another token, so a session id leaked to the holder of another
// token is of no use to them.
type tokenSet struct {
	tokens []string
	ids    []string // tokenID of each token
}

func newTokenSet(tokens []string) *tokenSet {
	ts := &tokenSet{}
	for _, t := range tokens {
		if t == "" {
			continue
		}
		ts.tokens = append(ts.tokens, t)
		ts.ids = append(ts.ids, tokenID(t))
	}
	return ts
}

func (ts *tokenSet) empty() bool { return len(ts.tokens) == 0 }

// tokenID names a token without revealing it.
func tokenID(t string) string {
	sum := sha256.Sum256([]byte(t))
	return "token-" + hex.EncodeToString(sum[:8])
}

// match returns the id of the token the Authorization header carries. Every
// configured token is compared, in constant time, so that timing tells
// neither the token nor which one matched.
func (ts *tokenSet) match(header string) (id string, ok bool) {
	for i, t := range ts.tokens {
		if validBearer(header, t) {
			id, ok = ts.ids[i], true
		}
	}
	return id, ok
}

// validBearer reports whether an Authorization header carries token,
// comparing in constant time.
func validBearer(header, token string) bool {
	scheme, got, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// requireToken answers 401 to requests without a token of tokens and
// passes the others on with the token's identity in the context, where the
// go-sdk looks for it (auth.TokenInfoFromContext). Each request is checked
// against the tokens of that moment.
func requireToken(tokens *Tokens, next http.Handler) http.Handler {
	if tokens.Empty() {
		return next
	}
	// auth.RequireBearerToken is the only way to put a TokenInfo in a
	// context; the check before it gives the 401 its WWW-Authenticate
	// header and a message that says what to send.
	withInfo := auth.RequireBearerToken(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		id, ok := tokens.cur.Load().match("Bearer " + token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := tokens.cur.Load().match(r.Header.Get("Authorization")); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpmux"`)
			http.Error(w, "401 unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		withInfo.ServeHTTP(w, r)
	})
}

// TokenSources are where a front's tokens come from, in order of
// precedence: Flag (--token, or MCPMUX_TOKEN), File (--token-file), then
// token_file of mcpmux.yaml. With none, clients need no token.
type TokenSources struct{ Flag, File string }

// ReadTokens reads the tokens of the first source there is, and teaches
// them to mask, the masker of log (nil masks nothing). Tokens read from a
// file are read again by Reload.
func ReadTokens(src TokenSources, settings *config.Settings, log *slog.Logger, mask *logs.Masker) (*Tokens, error) {
	tokens, file, err := src.read(settings)
	if err != nil {
		return nil, err
	}
	mask.Add(tokens...)
	t := NewTokens(tokens...)
	t.sources, t.file, t.current, t.log, t.mask = src, file, tokens, log, mask
	return t, nil
}

// read resolves the sources; file is the token file read: "" when the
// token came from Flag or there is none.
func (src TokenSources) read(settings *config.Settings) (tokens []string, file string, err error) {
	switch {
	case src.Flag != "":
		t := strings.TrimSpace(src.Flag)
		if t == "" || strings.ContainsFunc(t, isSpace) {
			return nil, "", errors.New("--token / MCPMUX_TOKEN: a token must not be blank or contain whitespace")
		}
		return []string{t}, "", nil
	case src.File != "":
		tokens, err := readTokenFile(src.File)
		if err != nil {
			return nil, src.File, fmt.Errorf("--token-file: %w", err)
		}
		return tokens, src.File, nil
	case settings.TokenFile != "":
		tokens, err := readTokenFile(settings.TokenFile)
		if err != nil {
			return nil, settings.TokenFile, fmt.Errorf("token_file in %s: %w", settings.File, err)
		}
		return tokens, settings.TokenFile, nil
	}
	return nil, "", nil
}

// Reload re-reads the token file, if the tokens came from one, for the
// given settings (a reload, so also SIGHUP), so that a rotated token
// applies without a restart. A file that cannot be read or holds no token
// keeps the tokens in force, as does a mcpmux.yaml that no longer names a
// token file: a front that started with authentication never drops it.
func (t *Tokens) Reload(settings *config.Settings) {
	if t == nil || t.file == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tokens, file, err := t.sources.read(settings)
	problem := ""
	switch {
	case err != nil:
		problem = err.Error()
	case file == "":
		problem = "mcpmux.yaml no longer names a token file"
	}
	if problem != "" {
		if problem != t.lastErr {
			t.log.Error("token file not re-read; the tokens in force stay", "error", problem)
		}
		t.lastErr = problem
		return
	}
	t.lastErr = ""
	if slices.Equal(tokens, t.current) {
		return
	}
	t.mask.Add(tokens...)
	if err := t.Set(tokens); err != nil {
		t.log.Error("token file not applied", "file", file, "error", err)
		return
	}
	t.current = tokens
	t.log.Info("token file re-read: the accepted tokens are replaced", "file", file, "tokens", len(tokens))
}

// readTokenFile reads the tokens of a file: one per line, surrounding
// whitespace trimmed, blank lines and lines starting with # skipped. Each
// token is its own principal (a session opened with one cannot be used
// with another).
func readTokenFile(path string) ([]string, error) {
	data, err := config.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the token file: %w", err)
	}
	var tokens []string
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if strings.ContainsFunc(t, isSpace) {
			return nil, fmt.Errorf("%s:%d: a token must not contain whitespace", path, i+1)
		}
		tokens = append(tokens, t)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s holds no token (it is empty)", path)
	}
	return tokens, nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\v' || r == '\f' }
