package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
)

// credentialsHandler is auth: client_credentials (the client credentials
// extension, SEP-1046): on the server's 401 it discovers the token
// endpoint the way the go-sdk does (protected resource metadata, then
// authorization server metadata) and gets a token with the client's
// secret or a JWT signed with its key (private_key_jwt, RFC 7523);
// golang.org/x/oauth2 makes the token requests.
//
// The go-sdk's own extauth.ClientCredentialsHandler is not used: it knows
// no private_key_jwt, and it keeps the context of the request that first
// got a 401, so that every later token request fails once that request is
// over.
type credentialsHandler struct {
	srv  *config.Server
	hc   *http.Client
	mask *logs.Masker
	key  crypto.Signer     // private_key_jwt; nil: client_secret
	alg  jwt.SigningMethod // of key

	mu      sync.Mutex
	ts      oauth2.TokenSource // nil until the first Authorize
	granted []string           // scopes asked for so far (step-up keeps them)
}

var _ Handler = (*credentialsHandler)(nil)

func newCredentialsHandler(srv *config.Server, hc *http.Client, mask *logs.Masker) (*credentialsHandler, error) {
	h := &credentialsHandler{srv: srv, hc: hc, mask: mask}
	a := srv.Auth
	pemData := a.PrivateKey
	if a.PrivateKeyFile != "" {
		b, err := os.ReadFile(a.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("reading auth.private_key_file: %w", err)
		}
		pemData = string(b)
	}
	if pemData != "" {
		key, alg, err := signingKey([]byte(pemData), a.SigningAlgorithm)
		if err != nil {
			return nil, err
		}
		h.key, h.alg = key, alg
	}
	return h, nil
}

func (h *credentialsHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ts, nil
}

func (h *credentialsHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer discard(resp)
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden && challengeError(challenges) != "insufficient_scope" {
		return nil
	}
	prm, err := resourceMetadata(ctx, challenges, req.URL.String(), h.hc)
	if err != nil {
		return err
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, h.hc)
	if err != nil {
		return fmt.Errorf("getting the authorization server's metadata: %w", err)
	}
	if asm == nil {
		// No metadata: the 2025-03-26 default endpoint.
		asm = &oauthex.AuthServerMeta{Issuer: issuer, TokenEndpoint: strings.TrimSuffix(issuer, "/") + "/token"}
	}
	a := h.srv.Auth
	scopes := a.Scopes
	if len(scopes) == 0 {
		scopes = strings.Fields(challengeScope(challenges))
	}
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.granted {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	cc := &clientcredentials.Config{
		ClientID:       a.ClientID,
		ClientSecret:   a.ClientSecret,
		TokenURL:       asm.TokenEndpoint,
		Scopes:         scopes,
		AuthStyle:      secretStyle(asm.TokenEndpointAuthMethodsSupported),
		EndpointParams: url.Values{"resource": {prm.Resource}}, // RFC 8707, as the MCP spec asks
	}
	fetch := func(ctx context.Context) (*oauth2.Token, error) { return cc.Token(ctx) }
	if h.key != nil {
		cc.AuthStyle = oauth2.AuthStyleInParams
		aud := []string{asm.Issuer}
		if asm.TokenEndpoint != asm.Issuer {
			aud = append(aud, asm.TokenEndpoint)
		}
		fetch = func(ctx context.Context) (*oauth2.Token, error) {
			assertion, err := h.assertion(aud)
			if err != nil {
				return nil, err
			}
			c := *cc
			c.EndpointParams = url.Values{
				"resource":              {prm.Resource},
				"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
				"client_assertion":      {assertion},
			}
			return c.Token(ctx)
		}
	}
	ts := &cachedSource{fetch: func() (*oauth2.Token, error) {
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, h.hc), requestTimeout)
		defer cancel()
		tok, err := fetch(ctx)
		if tok != nil {
			h.mask.Add(tok.AccessToken, tok.RefreshToken)
		}
		return tok, err
	}}
	// Fetch now, so that a wrong secret is reported here, as what it is.
	if _, err := ts.Token(); err != nil {
		return fmt.Errorf("client_credentials grant at %s: %w", asm.TokenEndpoint, err)
	}
	h.ts, h.granted = ts, scopes
	return nil
}

// assertion is a fresh JWT for private_key_jwt: issued by the client, about
// itself, for the authorization server, valid five minutes.
func (h *credentialsHandler) assertion(aud []string) (string, error) {
	now := time.Now()
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	claims := jwt.RegisteredClaims{
		Issuer:    h.srv.Auth.ClientID,
		Subject:   h.srv.Auth.ClientID,
		Audience:  aud,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
		ID:        fmt.Sprintf("%x", id),
	}
	s, err := jwt.NewWithClaims(h.alg, claims).SignedString(h.key)
	if err != nil {
		return "", fmt.Errorf("signing the client assertion: %w", err)
	}
	return s, nil
}

func (h *credentialsHandler) WaitChanged(ctx context.Context) error {
	<-ctx.Done() // its credentials come from the config: a reload replaces the handler
	return ctx.Err()
}

func (h *credentialsHandler) Close() error { return nil }

// secretStyle picks how a client secret is sent, from what the
// authorization server supports (client_secret_post first, as OAuth 2.1
// prefers, as the go-sdk does).
func secretStyle(supported []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

// cachedSource hands out a token until it is due for renewal (see
// refreshMargin), then fetches another.
type cachedSource struct {
	fetch func() (*oauth2.Token, error)

	mu       sync.Mutex
	tok      *oauth2.Token
	obtained time.Time
}

func (s *cachedSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	rec := record{Token: s.tok, Obtained: s.obtained}
	if rec.fresh(now) {
		return s.tok, nil
	}
	tok, err := s.fetch()
	if err != nil {
		return nil, err
	}
	s.tok, s.obtained = tok, now
	return tok, nil
}

// signingKey parses a PEM private key (PKCS#8, PKCS#1 or SEC 1) and the
// JWS algorithm to sign with: alg, or the key's usual one.
func signingKey(data []byte, alg string) (crypto.Signer, jwt.SigningMethod, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, nil, errors.New("auth.private_key: no PEM block found")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("auth.private_key: %w", err)
	}
	var usual string
	var fits []string
	switch k := key.(type) {
	case *rsa.PrivateKey:
		usual, fits = "RS256", []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			usual = "ES256"
		case elliptic.P384():
			usual = "ES384"
		case elliptic.P521():
			usual = "ES512"
		default:
			return nil, nil, fmt.Errorf("auth.private_key: unsupported curve %s", k.Curve.Params().Name)
		}
		fits = []string{usual}
	case ed25519.PrivateKey:
		usual, fits = "EdDSA", []string{"EdDSA"}
	default:
		return nil, nil, fmt.Errorf("auth.private_key: unsupported key type %T", key)
	}
	if alg == "" {
		alg = usual
	}
	if !slices.Contains(fits, alg) {
		return nil, nil, fmt.Errorf("auth.signing_algorithm: %s does not fit the key (%s)", alg, strings.Join(fits, ", "))
	}
	return key.(crypto.Signer), jwt.GetSigningMethod(alg), nil
}

// resourceMetadata discovers the protected resource metadata of the MCP
// endpoint resourceURL where the MCP spec says to look, as the go-sdk's
// handlers do: the challenge's resource_metadata, then the well-known
// path for the endpoint, then the one at the root. A server without any
// is its own authorization server (the 2025-03-26 spec).
func resourceMetadata(ctx context.Context, challenges []oauthex.Challenge, resourceURL string, hc *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	type candidate struct{ url, resource string }
	var cands []candidate
	if u := challengeParam(challenges, "resource_metadata"); u != "" {
		cands = append(cands, candidate{u, resourceURL})
	}
	ru, err := url.Parse(resourceURL)
	if err != nil {
		return nil, err
	}
	origin := &url.URL{Scheme: ru.Scheme, Host: ru.Host}
	cands = append(cands,
		candidate{origin.String() + "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/"), resourceURL},
		candidate{origin.String() + "/.well-known/oauth-protected-resource", origin.String()})
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, hc)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected resource metadata at %s names no authorization server", c.url)
		}
		return prm, nil
	}
	return &oauthex.ProtectedResourceMetadata{Resource: resourceURL, AuthorizationServers: []string{origin.String()}}, nil
}
