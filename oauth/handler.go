package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
)

// Handler authorizes the requests of one url: server: the
// auth.OAuthHandler of its Streamable HTTP transport.
type Handler interface {
	auth.OAuthHandler
	// WaitChanged returns once the handler's credentials may have changed
	// since it last failed for want of them (a login stored tokens, the
	// token file was replaced): the moment to try a server that needs
	// login again. It returns ctx's error when ctx ends first.
	WaitChanged(ctx context.Context) error
	// Close releases what the handler holds (the loopback listener of a
	// login).
	Close() error
}

// HandlerOptions configure NewHandler. Every field is optional.
type HandlerOptions struct {
	// Authorize shows the authorization URL of the authorization code
	// flow to whoever can approve the access: the person at `mcpmux
	// login`, or a test that follows it. The flow then waits for the
	// authorization server's redirect to mcpmux's loopback address. With
	// Authorize set the handler ignores the stored tokens and always runs
	// the flow (a login); nil means the flow never runs: a server without
	// usable tokens needs login.
	Authorize func(ctx context.Context, authURL string) error
	// HTTPClient makes the requests to authorization servers; nil means
	// one with a 30s timeout.
	HTTPClient *http.Client
}

// NewHandler returns the handler of srv's auth: section; nil if it has
// none. store keeps the tokens of auth: oauth.
func NewHandler(srv *config.Server, store *Store, opts *HandlerOptions) (Handler, error) {
	if srv.Auth == nil {
		return nil, nil
	}
	if opts == nil {
		opts = &HandlerOptions{}
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: requestTimeout}
	}
	switch srv.Auth.Type {
	case config.AuthOAuth:
		if store == nil {
			return nil, errors.New("no token store")
		}
		if err := store.usable(srv.Name); err != nil {
			return nil, err
		}
		h := &codeHandler{srv: srv, entry: store.entry(srv.Name), authorize: opts.Authorize, hc: hc}
		h.source = source{e: h.entry, url: srv.URL}
		return h, nil
	case config.AuthClientCredentials:
		return newCredentialsHandler(srv, hc, store.masker())
	case config.AuthTokenFile:
		return &fileHandler{server: srv.Name, path: srv.Auth.TokenFile, mask: store.masker(), poll: store.changePoll()}, nil
	}
	return nil, fmt.Errorf("unknown auth type %q", srv.Auth.Type)
}

// codeHandler is auth: oauth: the stored tokens of `mcpmux login`, kept
// fresh, and during a login the go-sdk's authorization code flow.
type codeHandler struct {
	srv       *config.Server
	entry     *entry
	source    source
	authorize func(context.Context, string) error
	hc        *http.Client

	authorized atomic.Bool // a login's flow has stored tokens

	flow sync.Mutex // one flow at a time; guards the fields below
	sdk  *auth.AuthorizationCodeHandler
	recv *receiver
	// issuer is the authorization server sdk was made for; a login
	// registers a new client when registers is set (dynamic client
	// registration), and stores it for issuer once it has tokens.
	issuer    string
	registers bool
}

var _ Handler = (*codeHandler)(nil)

func (h *codeHandler) login() bool { return h.authorize != nil }

func (h *codeHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	if h.login() && !h.authorized.Load() {
		return nil, nil // a login starts from nothing
	}
	return h.source, nil
}

func (h *codeHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden && challengeError(challenges) != "insufficient_scope" {
		// Forbidden for another reason than scope: no flow helps, and
		// the retry reports it (as the go-sdk's handler does).
		discard(resp)
		return nil
	}
	if resp.StatusCode == http.StatusUnauthorized && !h.login() {
		if moved := h.moved(ctx, challenges); moved != "" {
			discard(resp)
			return &NeedsLoginError{Server: h.srv.Name, Reason: moved}
		}
	}
	if resp.StatusCode == http.StatusUnauthorized && (!h.login() || h.authorized.Load()) && h.entry.retry(h.srv.URL, bearer(req)) {
		discard(resp)
		return nil
	}
	if h.login() {
		h.flow.Lock()
		defer h.flow.Unlock()
		sdk, err := h.sdkHandler(ctx, challenges)
		if err != nil {
			discard(resp)
			return err
		}
		return sdk.Authorize(ctx, req, resp)
	}
	discard(resp)
	if resp.StatusCode == http.StatusForbidden {
		// Step-up: a login asks for what the server names now only if
		// the tool file says so, as the login itself never makes the
		// call that needs it.
		nl := &NeedsLoginError{Server: h.srv.Name, Reason: "the server asks for more access than the stored tokens grant"}
		if sc := challengeScope(challenges); sc != "" {
			file := h.srv.File
			if file == "" {
				file = "its tool file"
			}
			nl.Reason += fmt.Sprintf(" (scope %q)", sc)
			nl.Remedy = fmt.Sprintf("list those scopes in auth.scopes of %s, then run \"mcpmux login %s\"", file, h.srv.Name)
		}
		return nl
	}
	return &NeedsLoginError{Server: h.srv.Name, Reason: h.entry.why(h.srv.URL)}
}

// moved says how the server's authorization server is no longer the one
// that issued the stored tokens, or "": their access token is not sent
// again, nor their refresh token spent, once the server names another
// one (checked when the server refuses a token, so it costs nothing
// otherwise).
func (h *codeHandler) moved(ctx context.Context, challenges []oauthex.Challenge) string {
	h.entry.mu.Lock()
	rec := h.entry.load()
	h.entry.mu.Unlock()
	if rec == nil || rec.Issuer == "" || rec.URL != h.srv.URL {
		return ""
	}
	asm, err := discover(ctx, h, challenges)
	if err != nil || asm.Issuer == rec.Issuer {
		return ""
	}
	return fmt.Sprintf("the server's authorization server is now %s, and the stored tokens are from %s", asm.Issuer, rec.Issuer)
}

// sdkHandler returns the go-sdk's authorization code handler of a login,
// with its loopback listener, for the authorization server the MCP server
// names now: a login that meets another one than before (a step-up after
// the server moved) starts over with a new handler. h.flow must be held.
func (h *codeHandler) sdkHandler(ctx context.Context, challenges []oauthex.Challenge) (*auth.AuthorizationCodeHandler, error) {
	asm, err := discover(ctx, h, challenges)
	if err != nil {
		return nil, err
	}
	if h.sdk != nil && h.issuer == asm.Issuer {
		return h.sdk, nil
	}
	if h.recv != nil {
		h.recv.close()
		h.sdk, h.recv = nil, nil
	}
	a := h.srv.Auth
	if a.ClientID != "" {
		// Pre-registered credentials belong to one authorization server:
		// say so rather than offer them to another.
		h.entry.mu.Lock()
		rec := h.entry.load()
		h.entry.mu.Unlock()
		if rec != nil && rec.ClientID == a.ClientID && rec.Issuer != "" && rec.Issuer != asm.Issuer {
			file := h.srv.File
			if file == "" {
				file = "its tool file"
			}
			return nil, fmt.Errorf("client_id %q was registered with the authorization server %s, but the server now names %s: "+
				"set auth.client_id (and client_secret) of %s to a client of %s, or remove them to register dynamically", a.ClientID, rec.Issuer, asm.Issuer, file, asm.Issuer)
		}
	}
	cimd := a.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported
	var reg *registration
	if a.ClientID == "" && !cimd {
		reg = h.entry.store.registration(asm.Issuer)
	}
	// A stored registration is for its redirect URI: receive the redirect
	// there, or register again where that port is taken.
	port := a.RedirectPort
	if port == 0 && reg != nil {
		port = reg.port()
	}
	recv, err := listen(port)
	if err != nil && reg != nil && a.RedirectPort == 0 {
		recv, err = listen(0)
	}
	if err != nil {
		return nil, err
	}
	if reg != nil && !slices.Contains(reg.RedirectURIs, recv.url) {
		reg = nil
	}
	recv.expect(asm.Issuer, asm.AuthorizationResponseIssParameterSupported)
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              recv.url,
		AuthorizationCodeFetcher: h.fetchCode,
		// Refresh tokens are what lets a server stay usable for weeks
		// after one login; they are kept 0600, never logged.
		RequestRefreshToken: true,
		// MCP 2026-07-28 compares an iss that an authorization server
		// sends without advertising it, and goes on when it matches
		// (RFC 9207 §2.4, local policy); a mismatch is refused either way.
		AcceptUnadvertisedIss: true,
		Client:                h.hc,
		NewTokenSource:        h.keep,
	}
	if a.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: a.ClientMetadataURL}
	}
	switch {
	case a.ClientID != "":
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: a.ClientID}
		if a.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: a.ClientSecret}
		}
	case reg != nil:
		// The client registered at this issuer before (by this server or
		// another one behind the same authorization server).
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: reg.ClientID, Issuer: reg.Issuer}
		if reg.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: reg.ClientSecret}
		}
	default:
		// application_type is left to the go-sdk, which sends "native"
		// for a loopback redirect URI, as MCP 2026-07-28 asks of a CLI.
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:  []string{recv.url},
			ClientName:    "mcpmux",
			ClientURI:     "https://github.com/mcpmux/mcpmux",
			GrantTypes:    []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"},
		}}
	}
	if len(a.Scopes) > 0 {
		cfg.ScopeFilter = func([]string) []string { return a.Scopes }
	}
	sdk, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		recv.close()
		return nil, fmt.Errorf("configuring the authorization code flow: %w", err)
	}
	h.sdk, h.recv, h.issuer = sdk, recv, asm.Issuer
	h.registers = a.ClientID == "" && reg == nil && !cimd
	return sdk, nil
}

// fetchCode is the go-sdk's AuthorizationCodeFetcher: it shows the URL
// and waits for the redirect that carries the code.
func (h *codeHandler) fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	h.recv.reset()
	if err := h.authorize(ctx, args.URL); err != nil {
		return nil, fmt.Errorf("showing the authorization URL: %w", err)
	}
	return h.recv.wait(ctx)
}

// keep is the go-sdk's NewTokenSource: it stores what the flow obtained,
// with the client and endpoint that refreshing it takes, and hands out
// the store's token source.
func (h *codeHandler) keep(_ context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	rec := &record{
		Server: h.srv.Name, URL: h.srv.URL, Issuer: h.issuer,
		TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle,
		ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		Scopes: c.Scopes, Token: tok, Obtained: time.Now(),
	}
	// Under the file's lock: a serving mcpmux refreshing the old tokens
	// meanwhile must not write them over these.
	unlock, err := h.entry.store.lock(h.srv.Name)
	if err != nil {
		return nil, fmt.Errorf("locking the tokens of %s: %w", h.srv.Name, err)
	}
	defer unlock()
	h.entry.mu.Lock()
	err = h.entry.save(rec)
	h.entry.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if h.registers {
		reg := &registration{Issuer: h.issuer, ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURIs: []string{h.recv.url}, Registered: time.Now()}
		if err := h.entry.store.saveRegistration(reg); err != nil {
			// The login worked; the next one registers again.
			h.entry.store.log.Warn("the client registration could not be stored", "issuer", h.issuer, "error", err)
		}
	}
	h.authorized.Store(true)
	return h.source, nil
}

func (h *codeHandler) WaitChanged(ctx context.Context) error { return h.entry.waitChanged(ctx) }

func (h *codeHandler) Close() error {
	h.flow.Lock()
	defer h.flow.Unlock()
	if h.recv != nil {
		h.recv.close()
	}
	return nil
}

// challengeError and challengeScope read a Bearer challenge's error and
// scope parameters.
func challengeError(cs []oauthex.Challenge) string { return challengeParam(cs, "error") }
func challengeScope(cs []oauthex.Challenge) string { return challengeParam(cs, "scope") }

func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

// discard drains and closes a response body, as an OAuthHandler must.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
}

// NeedsLoginError says a server cannot be used until someone authorizes
// mcpmux again: its tokens are missing, expired beyond refresh, revoked,
// or lack the access the server now asks for.
type NeedsLoginError struct {
	Server string
	Reason string
	// Remedy says what to do; empty means running `mcpmux login SERVER`.
	Remedy string
}

func (e *NeedsLoginError) Error() string {
	remedy := e.Remedy
	if remedy == "" {
		remedy = fmt.Sprintf("run \"mcpmux login %s\"", e.Server)
	}
	return fmt.Sprintf("needs login: %s; %s", e.Reason, remedy)
}

// fileHandler is auth: token_file: the access token a file holds, sent
// as it is; the file is read again whenever it changes.
type fileHandler struct {
	server, path string
	mask         *logs.Masker
	poll         time.Duration // how often WaitChanged looks at the file

	mu    sync.Mutex
	stamp stamp
	tok   *oauth2.Token
	err   error
}

func (h *fileHandler) TokenSource(context.Context) (oauth2.TokenSource, error) { return h, nil }

// Token implements oauth2.TokenSource.
func (h *fileHandler) Token() (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, err := stampOf(h.path)
	if err == nil && st == h.stamp && (h.tok != nil || h.err != nil) {
		return h.tok, nil
	}
	h.stamp, h.tok, h.err = st, nil, err
	if err != nil {
		return nil, nil // no token: the server's 401 says needs login
	}
	data, err := os.ReadFile(h.path)
	if err != nil {
		h.err = err
		return nil, nil
	}
	if t := strings.TrimSpace(string(data)); t != "" {
		h.tok = &oauth2.Token{AccessToken: t, TokenType: "Bearer"}
		h.mask.Add(t)
	} else {
		h.err = errors.New("it is empty")
	}
	return h.tok, nil
}

func (h *fileHandler) Authorize(_ context.Context, req *http.Request, resp *http.Response) error {
	discard(resp)
	if resp.StatusCode == http.StatusForbidden {
		return nil // no other token to try; the retry reports it
	}
	if tok, _ := h.Token(); tok != nil && tok.AccessToken != bearer(req) {
		return nil // the file has changed since: try its token
	}
	h.mu.Lock()
	reason := fmt.Sprintf("the server refused the token in %s", h.path)
	if h.err != nil {
		reason = fmt.Sprintf("no token could be read from %s (%v)", h.path, h.err)
	}
	h.mu.Unlock()
	return &NeedsLoginError{Server: h.server, Reason: reason, Remedy: fmt.Sprintf("put a valid access token into %s", h.path)}
}

func (h *fileHandler) WaitChanged(ctx context.Context) error {
	h.mu.Lock()
	since := h.stamp
	h.mu.Unlock()
	return waitFileChange(ctx, h.path, since, h.poll)
}

func (h *fileHandler) Close() error { return nil }
