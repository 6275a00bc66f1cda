package aggregator

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

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

// require answers 401 to requests without a valid token and passes the
// others on with the token's identity in the context, where the go-sdk
// looks for it (auth.TokenInfoFromContext).
func (ts *tokenSet) require(next http.Handler) http.Handler {
	if ts.empty() {
		return next
	}
	// auth.RequireBearerToken is the only way to put a TokenInfo in a
	// context; the check before it gives the 401 its WWW-Authenticate
	// header and a message that says what to send.
	withInfo := auth.RequireBearerToken(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		id, ok := ts.match("Bearer " + token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := ts.match(r.Header.Get("Authorization")); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpmux"`)
			http.Error(w, "401 unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		withInfo.ServeHTTP(w, r)
	})
}
