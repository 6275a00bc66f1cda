package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/oauthtest"
	"github.com/mcpmux/mcpmux/internal/testkit"
	"github.com/mcpmux/mcpmux/oauth"
)

// oauthFixture is an MCP server behind an OAuth authorization server, both
// on loopback.
type oauthFixture struct {
	as    *oauthtest.Server
	url   string       // the MCP endpoint
	calls atomic.Int32 // tool calls that reached the server
}

func newOAuthFixture(t *testing.T, opts oauthtest.Options) *oauthFixture {
	t.Helper()
	f := &oauthFixture{as: oauthtest.NewServer(t, opts)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.calls.Add(1)
			scopes := ""
			if ti := req.Extra.TokenInfo; ti != nil {
				scopes = strings.Join(ti.Scopes, " ")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "authorized " + scopes}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	rs := httptest.NewServer(f.as.Protect("/mcp", h))
	t.Cleanup(rs.Close)
	f.url = rs.URL + "/mcp"
	return f
}

func (f *oauthFixture) config(t *testing.T, auth string) *config.Server {
	t.Helper()
	cfg, ferr := config.ParseServer("p.yaml", []byte(fmt.Sprintf("name: p\nurl: %s\nauth: %s\n", f.url, auth)), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	return cfg
}

// oauthPool starts a pool running cfg with store; authorize, if set,
// follows authorization URLs as a person's browser would.
func oauthPool(t *testing.T, store *oauth.Store, cfg *config.Server, authorize bool) *Server {
	t.Helper()
	opts := &Options{Tokens: store}
	if authorize {
		opts.Authorize = func(ctx context.Context, _, authURL string) error { return oauthtest.Follow(ctx, authURL) }
	}
	pool := NewPool(opts)
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	return pool.Get(cfg.Name)
}

func call(t *testing.T, s *Server) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, callParams("whoami"))
	if err != nil {
		return "", err
	}
	return testkit.RawText(res), nil
}

func TestOAuthLoginThenServe(t *testing.T) {
	f := newOAuthFixture(t, oauthtest.Options{Scopes: []string{"mcp:read"}})
	store := oauth.NewStore(t.TempDir(), nil)
	cfg := f.config(t, "oauth")

	login := oauthPool(t, store, cfg, true)
	if st := login.Status(); st.State != StateUp || st.Tools != 1 {
		t.Fatalf("login: %+v", st)
	}
	if n := f.as.Grants("authorization_code"); n != 1 {
		t.Fatalf("%d authorization code grants, want 1", n)
	}

	// A serving pool, which never asks anyone, uses the stored tokens.
	serving := oauthPool(t, store, cfg, false)
	if st := serving.Status(); st.State != StateUp {
		t.Fatalf("serving after login: %+v", st)
	}
	if text, err := call(t, serving); err != nil || text != "authorized mcp:read" {
		t.Fatalf("call: %q, %v", text, err)
	}
}

func TestOAuthWithoutTokensNeedsLogin(t *testing.T) {
	f := newOAuthFixture(t, oauthtest.Options{})
	s := oauthPool(t, oauth.NewStore(t.TempDir(), nil), f.config(t, "oauth"), false)
	st := s.Status()
	if st.State != StateNeedsLogin || !strings.Contains(st.Error, "no tokens are stored") || !strings.Contains(st.Error, `run "mcpmux login p"`) {
		t.Fatalf("status %+v, want needs login saying to run mcpmux login p", st)
	}
	_, err := call(t, s)
	var unavailable *UnavailableError
	if !errors.As(err, &unavailable) || asNeedsLogin(err) == nil {
		t.Fatalf("call error %v, want an UnavailableError with a NeedsLoginError", err)
	}
	if f.calls.Load() != 0 {
		t.Error("the call reached the server")
	}
}

func TestOAuthExpiredTokenIsRefreshed(t *testing.T) {
	f := newOAuthFixture(t, oauthtest.Options{})
	store := oauth.NewStore(t.TempDir(), nil)
	cfg := f.config(t, "oauth")
	oauthPool(t, store, cfg, true)
	s := oauthPool(t, store, cfg, false)

	f.as.ExpireAccessTokens() // as if their lifetime had run out
	if _, err := call(t, s); err != nil {
		t.Fatalf("call after the access token expired: %v", err)
	}
	if n := f.as.Grants("refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if st := s.Status(); st.State != StateUp {
		t.Errorf("status %+v", st)
	}
}

func TestOAuthRevocationNeedsLoginUntilLoggedInAgain(t *testing.T) {
	f := newOAuthFixture(t, oauthtest.Options{})
	store := oauth.NewStore(t.TempDir(), nil)
	cfg := f.config(t, "oauth")
	oauthPool(t, store, cfg, true)
	s := oauthPool(t, store, cfg, false)

	f.as.RevokeAll()
	_, err := call(t, s)
	nl := asNeedsLogin(err)
	if nl == nil || !strings.Contains(nl.Reason, "refused its refresh token (invalid_grant)") {
		t.Fatalf("call after revocation: %v; want needs login, the refresh token refused", err)
	}
	waitState(t, s, "needs login", func(st Status) bool { return st.State == StateNeedsLogin })
	if _, err := call(t, s); asNeedsLogin(err) == nil {
		t.Fatalf("second call: %v, want needs login at once", err)
	}

	// Another process logs in; the serving one notices by itself.
	oauthPool(t, oauth.NewStore(strings.TrimSuffix(store.Dir(), "/oauth"), nil), cfg, true)
	waitState(t, s, "up after the login", func(st Status) bool { return st.State == StateUp })
	if _, err := call(t, s); err != nil {
		t.Fatalf("call after logging in again: %v", err)
	}
}

func TestOAuthReloadKeepsTokens(t *testing.T) {
	f := newOAuthFixture(t, oauthtest.Options{})
	store := oauth.NewStore(t.TempDir(), nil)
	oauthPool(t, store, f.config(t, "oauth"), true)

	pool := NewPool(&Options{Tokens: store})
	defer pool.Close(context.Background(), time.Second)
	pool.Apply(context.Background(), []*config.Server{f.config(t, "oauth")}, time.Minute)
	changed := f.config(t, "oauth\ntimeout: 5m")
	if ch := pool.Apply(context.Background(), []*config.Server{changed}, time.Minute); len(ch.Restarted) != 1 {
		t.Fatalf("reload: %+v", ch)
	}
	if st := pool.Get("p").Status(); st.State != StateUp {
		t.Fatalf("after reload: %+v", st)
	}
	if n := f.as.Grants("authorization_code"); n != 1 {
		t.Errorf("%d logins, want the one before the reload", n)
	}
}

func TestOAuthTokensForAnotherURLAreNotSent(t *testing.T) {
	f := newOAuthFixture(t, oauthtest.Options{})
	g := newOAuthFixture(t, oauthtest.Options{})
	store := oauth.NewStore(t.TempDir(), nil)
	oauthPool(t, store, f.config(t, "oauth"), true)
	// Same server name, another URL: the tokens are not for it.
	s := oauthPool(t, store, g.config(t, "oauth"), false)
	if st := s.Status(); st.State != StateNeedsLogin || !strings.Contains(st.Error, "the stored tokens are for "+f.url) {
		t.Fatalf("status %+v", st)
	}
}

func TestClientCredentials(t *testing.T) {
	f := newOAuthFixture(t, oauthtest.Options{Clients: map[string]string{"m2m": "m2m-secret"}})
	s := oauthPool(t, nil, f.config(t, "{type: client_credentials, client_id: m2m, client_secret: m2m-secret}"), false)
	if st := s.Status(); st.State != StateUp {
		t.Fatalf("status %+v", st)
	}
	if _, err := call(t, s); err != nil {
		t.Fatal(err)
	}
	f.as.ExpireAccessTokens()
	if _, err := call(t, s); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	if n := f.as.Grants("client_credentials"); n != 2 {
		t.Errorf("%d client credentials grants, want 2 (the first, and one after the expiry)", n)
	}

	bad := oauthPool(t, nil, f.config(t, "{type: client_credentials, client_id: m2m, client_secret: wrong}"), false)
	if st := bad.Status(); st.State != StateFailed || !strings.Contains(st.Error, "invalid_client") {
		t.Fatalf("wrong secret: %+v, want failed with invalid_client", st)
	}
}

func TestOAuthPerClient(t *testing.T) {
	f := newOAuthFixture(t, oauthtest.Options{})
	store := oauth.NewStore(t.TempDir(), nil)
	cfg := f.config(t, "oauth\nsession: per-client")
	oauthPool(t, store, cfg, true)
	s := oauthPool(t, store, cfg, false)
	client := func(id string) CallParams {
		p := callParams("whoami")
		p.Client = ClientID(id)
		return p
	}
	ctx := context.Background()
	if _, err := s.CallTool(ctx, client("a")); err != nil {
		t.Fatalf("client a: %v", err)
	}
	f.as.RevokeAll()
	if _, err := s.CallTool(ctx, client("a")); asNeedsLogin(err) == nil {
		t.Fatalf("client a after revocation: %v, want needs login", err)
	}
	if _, err := s.CallTool(ctx, client("b")); asNeedsLogin(err) == nil {
		t.Fatalf("a new client after revocation: %v, want needs login", err)
	}
	if st := s.Status(); st.State != StateNeedsLogin {
		t.Fatalf("status %+v", st)
	}
	oauthPool(t, store, cfg, true) // logged in again
	if _, err := s.CallTool(ctx, client("b")); err != nil {
		t.Fatalf("client b after the login: %v", err)
	}
	if st := s.Status(); st.State != StateUp {
		t.Errorf("status after the login %+v", st)
	}
}

// A legacy SSE server behind OAuth (type: sse) is authorized by the same
// handler, through authTransport.
func TestOAuthLegacySSE(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "sse"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "authorized"}}}, nil
		})
	rs := httptest.NewServer(as.Protect("/mcp", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(rs.Close)
	cfg, ferr := config.ParseServer("p.yaml", []byte("name: p\ntype: sse\nurl: "+rs.URL+"/mcp\nauth: oauth\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	store := oauth.NewStore(t.TempDir(), nil)
	if st := oauthPool(t, store, cfg, true).Status(); st.State != StateUp || st.Transport != "sse" {
		t.Fatalf("login over SSE: %+v", st)
	}
	s := oauthPool(t, store, cfg, false)
	if text, err := call(t, s); err != nil || text != "authorized" {
		t.Fatalf("call over SSE: %q, %v", text, err)
	}
	as.ExpireAccessTokens()
	if _, err := call(t, s); err != nil {
		t.Fatalf("call over SSE after expiry: %v", err)
	}
	if n := as.Grants("refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
}
