// Package oauthtest is an OAuth 2.1 authorization server for tests, on
// loopback, and the resource-server side that protects an MCP endpoint
// with it (the go-sdk's auth.RequireBearerToken and protected resource
// metadata handler).
//
// The authorization server approves every authorization request at once
// (no login page): whoever follows the authorization URL gets redirected
// with a code. It supports dynamic client registration, pre-registered
// clients, PKCE (S256, required), refresh tokens with rotation, the client
// credentials grant, and lets a test expire or revoke every token.
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Options configure a Server. Every field is optional.
type Options struct {
	// TokenLifetime of access tokens; zero means an hour.
	TokenLifetime time.Duration
	// Clients are pre-registered clients: id → secret ("" for a public
	// client).
	Clients map[string]string
	// Scopes the server supports and grants; none means scopes are not
	// used.
	Scopes []string
	// NoRegistration leaves dynamic client registration out: only
	// pre-registered clients can log in.
	NoRegistration bool
	// AdvertiseIss sets authorization_response_iss_parameter_supported
	// in the metadata (RFC 9207).
	AdvertiseIss bool
	// Iss is the iss the authorization responses carry: IssNone (the
	// default), IssOwn, or any other string as it is.
	Iss string
	// ClientMetadataURL, if set, makes the server support client ID
	// metadata documents, and take this one as a client (with any
	// loopback redirect URI) without fetching it.
	ClientMetadataURL string
	// Deny makes every authorization request end in an error response
	// (access_denied) with Deny as its error_description.
	Deny string
}

// Values of Options.Iss.
const (
	IssNone = ""
	IssOwn  = "\x00own" // the server's issuer
)

// Server is the authorization server.
type Server struct {
	URL  string // the issuer
	opts Options
	srv  *httptest.Server

	mu      sync.Mutex
	clients map[string]*client
	codes   map[string]*grant
	access  map[string]*grant // access token → its grant
	refresh map[string]*grant // refresh token → its grant
	counts  map[string]int    // token requests answered with a token, by grant type
	regs    []oauthex.ClientRegistrationMetadata
}

type client struct {
	secret   string
	redirect []string
}

// grant is what a code or token stands for.
type grant struct {
	client    string
	scopes    []string
	resource  string
	challenge string // PKCE, for a code
	redirect  string // for a code
	expires   time.Time
}

// NewServer starts an authorization server on loopback, closed when the
// test ends.
func NewServer(t testing.TB, opts Options) *Server {
	if opts.TokenLifetime == 0 {
		opts.TokenLifetime = time.Hour
	}
	s := &Server{opts: opts, clients: map[string]*client{}, codes: map[string]*grant{}, access: map[string]*grant{}, refresh: map[string]*grant{}, counts: map[string]int{}}
	for id, secret := range opts.Clients {
		s.clients[id] = &client{secret: secret}
	}
	if opts.ClientMetadataURL != "" {
		s.clients[opts.ClientMetadataURL] = &client{}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	registration := s.URL + "/register"
	if s.opts.NoRegistration {
		registration = ""
	}
	writeJSON(w, http.StatusOK, &oauthex.AuthServerMeta{
		Issuer:                                     s.URL,
		AuthorizationEndpoint:                      s.URL + "/authorize",
		TokenEndpoint:                              s.URL + "/token",
		RegistrationEndpoint:                       registration,
		ScopesSupported:                            s.opts.Scopes,
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token", "client_credentials"},
		TokenEndpointAuthMethodsSupported:          []string{"client_secret_basic", "client_secret_post", "none"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		AuthorizationResponseIssParameterSupported: s.opts.AdvertiseIss,
		ClientIDMetadataDocumentSupported:          s.opts.ClientMetadataURL != "",
	})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if s.opts.NoRegistration {
		http.NotFound(w, r)
		return
	}
	var meta oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id, secret, method := "client-"+random(), "", "none"
	if meta.TokenEndpointAuthMethod != "none" {
		secret, method = "secret-"+random(), "client_secret_basic"
	}
	s.mu.Lock()
	s.clients[id] = &client{secret: secret, redirect: meta.RedirectURIs}
	s.regs = append(s.regs, meta)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id": id, "client_secret": secret, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": method,
	})
}

// authorize approves at once: a person's consent is what the test does by
// following the URL.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	c := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	redirect := q.Get("redirect_uri")
	switch {
	case c == nil:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case len(c.redirect) > 0 && !slices.Contains(c.redirect, redirect):
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "want response_type=code and an S256 code_challenge", http.StatusBadRequest)
		return
	}
	u, err := url.Parse(redirect)
	if err != nil || u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost" {
		http.Error(w, "redirect_uri must be loopback", http.StatusBadRequest)
		return
	}
	v := u.Query()
	s.mu.Lock()
	iss := s.opts.Iss
	s.mu.Unlock()
	switch iss {
	case IssNone:
	case IssOwn:
		v.Set("iss", s.URL)
	default:
		v.Set("iss", iss)
	}
	if s.opts.Deny != "" {
		v.Set("error", "access_denied")
		v.Set("error_description", s.opts.Deny)
		v.Set("state", q.Get("state"))
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
		return
	}
	code := "code-" + random()
	s.mu.Lock()
	s.codes[code] = &grant{client: q.Get("client_id"), scopes: strings.Fields(q.Get("scope")), resource: q.Get("resource"),
		challenge: q.Get("code_challenge"), redirect: redirect, expires: time.Now().Add(time.Minute)}
	s.mu.Unlock()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[id]
	if c == nil || c.secret != secret {
		tokenError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	kind := r.PostForm.Get("grant_type")
	var g *grant
	switch kind {
	case "authorization_code":
		code := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if code == nil || code.client != id || time.Now().After(code.expires) || code.redirect != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != code.challenge {
			tokenError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		g = code
	case "refresh_token":
		old := s.refresh[r.PostForm.Get("refresh_token")]
		if old == nil || old.client != id {
			tokenError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		delete(s.refresh, r.PostForm.Get("refresh_token")) // rotation: each is good once
		g = old
	case "client_credentials":
		g = &grant{client: id, scopes: strings.Fields(r.PostForm.Get("scope")), resource: r.PostForm.Get("resource")}
	default:
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	access := &grant{client: id, scopes: g.scopes, resource: g.resource, expires: time.Now().Add(s.opts.TokenLifetime)}
	at := "at-" + random()
	s.access[at] = access
	body := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(s.opts.TokenLifetime / time.Second)}
	if len(g.scopes) > 0 {
		body["scope"] = strings.Join(g.scopes, " ")
	}
	if kind != "client_credentials" {
		rt := "rt-" + random()
		s.refresh[rt] = access
		body["refresh_token"] = rt
	}
	s.counts[kind]++
	writeJSON(w, http.StatusOK, body)
}

// Verify is the resource server's auth.TokenVerifier: the token must be
// one this server issued, unexpired, and for the resource requested (when
// the client named one).
func (s *Server) Verify(_ context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	// A copy, read under the lock: ExpireAccessTokens changes grants.
	s.mu.Lock()
	var g *grant
	if issued := s.access[token]; issued != nil {
		g = new(*issued)
	}
	s.mu.Unlock()
	if g == nil || time.Now().After(g.expires) {
		return nil, auth.ErrInvalidToken
	}
	if g.resource != "" && g.resource != "http://"+r.Host+r.URL.Path {
		return nil, fmt.Errorf("%w: issued for %s", auth.ErrInvalidToken, g.resource)
	}
	return &auth.TokenInfo{Scopes: g.scopes, Expiration: g.expires}, nil
}

// Protect serves h at path (e.g. "/mcp") behind bearer tokens of s, and
// the path's protected resource metadata naming s; a request without a
// valid token gets a 401 whose challenge points at the metadata.
func (s *Server) Protect(path string, h http.Handler) http.Handler {
	mux := http.NewServeMux()
	prm := "/.well-known/oauth-protected-resource" + path
	mux.HandleFunc("GET "+prm, func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:             "http://" + r.Host + path,
			AuthorizationServers: []string{s.URL},
			ScopesSupported:      s.opts.Scopes,
		}).ServeHTTP(w, r)
	})
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		opts := &auth.RequireBearerTokenOptions{ResourceMetadataURL: "http://" + r.Host + prm}
		auth.RequireBearerToken(s.Verify, opts)(h).ServeHTTP(w, r)
	})
	return mux
}

// ExpireAccessTokens makes every access token issued so far expired, as
// its lifetime running out would: refresh tokens stay good.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.access {
		g.expires = time.Now().Add(-time.Second)
	}
}

// RevokeAll revokes every access and refresh token: the next request with
// one gets a 401, and the next refresh an invalid_grant.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
	clear(s.refresh)
}

// Grants counts the token requests answered with a token, by grant type
// ("authorization_code", "refresh_token", "client_credentials").
func (s *Server) Grants(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[kind]
}

// SetIss sets Options.Iss.
func (s *Server) SetIss(iss string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Iss = iss
}

// Registrations are the client metadata of every dynamic client
// registration so far.
func (s *Server) Registrations() []oauthex.ClientRegistrationMetadata {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.regs)
}

// Follow does what a person's browser does with an authorization URL:
// get it and follow the redirect to the client's loopback address. It
// fails only if the authorization server does not redirect.
func Follow(ctx context.Context, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The client's own page (its redirect URI) may say the authorization
	// failed: the client reports that itself.
	if resp.StatusCode != http.StatusOK && resp.Request.URL.Host == req.URL.Host {
		return fmt.Errorf("following the authorization URL: %s", resp.Status)
	}
	return nil
}

func tokenError(w http.ResponseWriter, status int, code string) {
	writeJSON(w, status, map[string]string{"error": code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func random() string { return rand.Text() }
