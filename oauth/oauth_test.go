package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/internal/oauthtest"
)

// protected starts an MCP server behind as and returns its endpoint.
func protected(t *testing.T, as *oauthtest.Server) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	rs := httptest.NewServer(as.Protect("/mcp", h))
	t.Cleanup(rs.Close)
	return rs.URL + "/mcp"
}

func serverConfig(t *testing.T, url, auth string) *config.Server {
	t.Helper()
	cfg, ferr := config.ParseServer("p.yaml", []byte("name: p\nurl: "+url+"\nauth: "+auth+"\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	return cfg
}

// connect opens an MCP session to cfg's URL with h, as upstream does.
func connect(t *testing.T, cfg *config.Server, h Handler) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: cfg.URL, OAuthHandler: h}, nil)
	if err == nil {
		cs.Close()
	}
	return err
}

// login runs the authorization code flow for cfg into store, following
// the authorization URL as a person's browser would.
func login(t *testing.T, store *Store, cfg *config.Server) {
	t.Helper()
	h, err := NewHandler(cfg, store, &HandlerOptions{Authorize: oauthtest.Follow})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := connect(t, cfg, h); err != nil {
		t.Fatalf("login: %v", err)
	}
}

func TestTokenFileIsPrivate(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	cfg := serverConfig(t, protected(t, as), "oauth")
	mask := &logs.Masker{}
	state := filepath.Join(t.TempDir(), "state")
	store := NewStore(state, &StoreOptions{Mask: mask})
	login(t, store, cfg)

	for path, want := range map[string]os.FileMode{store.Dir(): 0o700, store.Path("p"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
	rec, _, err := store.read("p")
	if err != nil || rec.Token.RefreshToken == "" || rec.ClientID == "" || rec.URL != cfg.URL {
		t.Fatalf("stored record %+v, %v", rec, err)
	}
	for _, secret := range []string{rec.Token.AccessToken, rec.Token.RefreshToken, rec.ClientSecret} {
		if got := mask.Mask("log line with " + secret); strings.Contains(got, secret) {
			t.Errorf("the masker does not hide %q", secret)
		}
	}
}

func TestStateDirInsideConfigDirIsRefused(t *testing.T) {
	cfgDir := t.TempDir()
	store := NewStore(filepath.Join(cfgDir, "state"), &StoreOptions{ConfigDir: cfgDir})
	if err := store.Err(); err == nil || !strings.Contains(err.Error(), "inside the config directory") {
		t.Fatalf("Err() = %v", err)
	}
	cfg := serverConfig(t, "https://x.example/mcp", "oauth")
	if _, err := NewHandler(cfg, store, nil); err == nil {
		t.Error("a handler was made on a refused store")
	}
	if _, err := store.Remove("p"); err == nil {
		t.Error("Remove worked on a refused store")
	}
	// Through a symlink too.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(cfgDir, link); err != nil {
		t.Fatal(err)
	}
	if NewStore(filepath.Join(link, "state"), &StoreOptions{ConfigDir: cfgDir}).Err() == nil {
		t.Error("a state directory reached through a symlink into the config directory was accepted")
	}
	if err := NewStore(t.TempDir(), &StoreOptions{ConfigDir: cfgDir}).Err(); err != nil {
		t.Errorf("a state directory elsewhere: %v", err)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(StateDirEnv, "")
	t.Setenv("XDG_STATE_HOME", "/xdg")
	if d, _ := DefaultDir(); d != "/xdg/mcpmux" {
		t.Errorf("with XDG_STATE_HOME: %q", d)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d, _ := DefaultDir(); d != "/home/u/.local/state/mcpmux" {
		t.Errorf("with HOME: %q", d)
	}
	t.Setenv(StateDirEnv, "/var/lib/mcpmux")
	if d, _ := DefaultDir(); d != "/var/lib/mcpmux" {
		t.Errorf("with %s: %q", StateDirEnv, d)
	}
}

// expireSoon rewrites the stored tokens of p as due for a refresh.
func expireSoon(t *testing.T, store *Store) {
	t.Helper()
	rec, _, err := store.read("p")
	if err != nil {
		t.Fatal(err)
	}
	rec.Obtained = time.Now().Add(-time.Hour)
	rec.Token.Expiry = time.Now().Add(20 * time.Second) // within the minute's margin
	if _, err := store.write("p", rec); err != nil {
		t.Fatal(err)
	}
}

func TestRefreshBeforeExpiry(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	cfg := serverConfig(t, protected(t, as), "oauth")
	store := NewStore(t.TempDir(), nil)
	login(t, store, cfg)
	before, _, _ := store.read("p")
	expireSoon(t, store)

	h, err := NewHandler(cfg, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := connect(t, cfg, h); err != nil {
		t.Fatal(err)
	}
	if n := as.Grants("refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1 before the token expired", n)
	}
	after, _, _ := store.read("p")
	if after.Token.AccessToken == before.Token.AccessToken || after.Token.RefreshToken == before.Token.RefreshToken {
		t.Error("the refreshed tokens were not stored")
	}
}

// Two mcpmux processes on one state directory (a stdio mcpmux per client)
// refresh a rotating refresh token once, not once each: the second one
// finds the first one's tokens under the lock.
func TestConcurrentRefreshAcrossStores(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	cfg := serverConfig(t, protected(t, as), "oauth")
	dir := t.TempDir()
	login(t, NewStore(dir, nil), cfg)
	expireSoon(t, NewStore(dir, nil))

	var wg sync.WaitGroup
	tokens := make([]*oauth2.Token, 4)
	errs := make([]error, 4)
	for i := range tokens {
		store := NewStore(dir, nil) // each its own process, as far as memory goes
		wg.Go(func() { tokens[i], errs[i] = store.entry("p").token(cfg.URL) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || tokens[i] == nil {
			t.Fatalf("store %d: %v, %v", i, tokens[i], err)
		}
		if tokens[i].AccessToken != tokens[0].AccessToken {
			t.Errorf("store %d got another access token", i)
		}
	}
	if n := as.Grants("refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
}

func TestNeedsLoginReasons(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	cfg := serverConfig(t, protected(t, as), "oauth")
	store := NewStore(t.TempDir(), &StoreOptions{ChangePoll: 10 * time.Millisecond})
	h, err := NewHandler(cfg, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	var nl *NeedsLoginError
	if err := connect(t, cfg, h); !errors.As(err, &nl) || nl.Reason != "no tokens are stored for it" {
		t.Fatalf("without tokens: %v", err)
	}
	if want := `needs login: no tokens are stored for it; run "mcpmux login p"`; nl.Error() != want {
		t.Errorf("message %q, want %q", nl.Error(), want)
	}

	login(t, store, cfg)
	if err := connect(t, cfg, h); err != nil {
		t.Fatalf("after login, the same handler: %v", err)
	}
	as.RevokeAll()
	if err := connect(t, cfg, h); !errors.As(err, &nl) || !strings.Contains(nl.Reason, "refused its refresh token (invalid_grant)") {
		t.Fatalf("after revocation: %v", err)
	}

	// Waiting for a login returns when the tokens change.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.WaitChanged(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitChanged without a change: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- h.WaitChanged(context.Background()) }()
	login(t, store, cfg)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitChanged did not return after a login")
	}
	if err := connect(t, cfg, h); err != nil {
		t.Fatalf("after logging in again: %v", err)
	}
}

func TestRemove(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	cfg := serverConfig(t, protected(t, as), "oauth")
	store := NewStore(t.TempDir(), nil)
	login(t, store, cfg)
	if removed, err := store.Remove("p"); !removed || err != nil {
		t.Fatalf("Remove: %v, %v", removed, err)
	}
	if _, err := os.Stat(store.Path("p")); !os.IsNotExist(err) {
		t.Errorf("token file still there: %v", err)
	}
	if removed, err := store.Remove("p"); removed || err != nil {
		t.Errorf("second Remove: %v, %v", removed, err)
	}
	if _, err := store.Remove("../x"); err == nil {
		t.Error("Remove accepted a path")
	}
}

func TestTokenFile(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{Clients: map[string]string{"m2m": "s"}})
	url := protected(t, as)
	file := filepath.Join(t.TempDir(), "token")
	cfg := serverConfig(t, url, "{type: token_file, token_file: "+file+"}")
	h, err := NewHandler(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var nl *NeedsLoginError
	if err := connect(t, cfg, h); !errors.As(err, &nl) || !strings.Contains(nl.Error(), "put a valid access token into "+file) {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(file, []byte("not-a-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := connect(t, cfg, h); !errors.As(err, &nl) || !strings.Contains(nl.Reason, "refused the token in") {
		t.Fatalf("bad token: %v", err)
	}
	// A valid token, as a sidecar that keeps the file fresh writes it.
	cc := &clientcredentials.Config{ClientID: "m2m", ClientSecret: "s", TokenURL: as.URL + "/token", EndpointParams: neturl.Values{"resource": {url}}}
	tok, err := cc.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(tok.AccessToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := connect(t, cfg, h); err != nil {
		t.Fatalf("valid token: %v", err)
	}
}

func TestSigningKey(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rs, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	pkcs8 := func(k any) []byte {
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b})
	}
	ecSEC1, _ := x509.MarshalECPrivateKey(ec)
	for _, tc := range []struct {
		name string
		pem  []byte
		alg  string
		want string // algorithm, or error text
	}{
		{"ec pkcs8", pkcs8(ec), "", "ES384"},
		{"ec sec1", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecSEC1}), "", "ES384"},
		{"rsa pkcs1", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rs)}), "PS256", "PS256"},
		{"rsa default", pkcs8(rs), "", "RS256"},
		{"ed25519", pkcs8(ed), "", "EdDSA"},
		{"wrong alg", pkcs8(ec), "ES256", "ES256 does not fit the key (ES384)"},
		{"no pem", []byte("not a key"), "", "no PEM block"},
	} {
		_, alg, err := signingKey(tc.pem, tc.alg)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = alg.Alg()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestReceiver(t *testing.T) {
	r, err := listen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	get := func(query string) int {
		resp, err := http.Get(r.url + query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("?nothing=1"); code != http.StatusBadRequest {
		t.Errorf("a request without code or error: %d", code)
	}
	if code := get("?error=access_denied&error_description=the+user+said+no"); code != http.StatusBadRequest {
		t.Errorf("an error redirect: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.wait(ctx); err == nil || !strings.Contains(err.Error(), "refused: access_denied: the user said no") {
		t.Errorf("wait after an error redirect: %v", err)
	}
	if code := get("?code=c1&state=s1&iss=http://as"); code != http.StatusOK {
		t.Errorf("a code redirect: %d", code)
	}
	if res, err := r.wait(ctx); err != nil || res.Code != "c1" || res.State != "s1" || res.Iss != "http://as" {
		t.Errorf("wait: %+v, %v", res, err)
	}
}

// A server that asks for more scope than was granted (step-up) needs a
// login with that scope, which only the tool file can ask for: a login
// never makes the call that needs it.
func TestStepUpNeedsScopesInTheToolFile(t *testing.T) {
	cfg := serverConfig(t, "https://notes.example/mcp", "oauth")
	cfg.File = "/config/tool/notes.yaml"
	h, err := NewHandler(cfg, NewStore(t.TempDir(), nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, cfg.URL, nil)
	resp := &http.Response{StatusCode: http.StatusForbidden, Body: http.NoBody, Header: http.Header{
		"Www-Authenticate": {`Bearer error="insufficient_scope", scope="notes:read notes:write"`},
	}}
	var nl *NeedsLoginError
	if err := h.Authorize(context.Background(), req, resp); !errors.As(err, &nl) {
		t.Fatalf("Authorize: %v, want a NeedsLoginError", err)
	}
	want := `needs login: the server asks for more access than the stored tokens grant (scope "notes:read notes:write"); list those scopes in auth.scopes of /config/tool/notes.yaml, then run "mcpmux login p"`
	if nl.Error() != want {
		t.Errorf("error %q\nwant  %q", nl.Error(), want)
	}
	// Forbidden for another reason: nothing to log in for; the retry
	// reports the 403.
	resp.Header.Set("Www-Authenticate", `Bearer error="invalid_request"`)
	resp.Body = http.NoBody
	if err := h.Authorize(context.Background(), req, resp); err != nil {
		t.Errorf("a 403 that is not about scope: %v", err)
	}
}
