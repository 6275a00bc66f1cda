package aggregator

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Tokens are the bearer tokens an HTTP front accepts. Set replaces them
// while serving (a rotated token file): from then on a request carrying a
// removed token gets 401, also for the sessions that token opened. A nil
// *Tokens, or an empty set, means no authentication.
type Tokens struct{ cur atomic.Pointer[tokenSet] }

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
