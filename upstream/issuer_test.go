package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/oauthtest"
	"github.com/mcpmux/mcpmux/oauth"
)

// The authorization rules of MCP 2026-07-28 for `mcpmux login`, each
// against a loopback authorization server.

// TestOAuthIssuerIdentification: the iss of the authorization response
// (RFC 9207) decides whether the login goes on, as the table of MCP
// 2026-07-28's "Authorization Response Validation" says.
func TestOAuthIssuerIdentification(t *testing.T) {
	for _, tc := range []struct {
		name      string
		advertise bool
		iss       string
		deny      string // the authorization server's error_description
		refused   string // in the login's error; "" means the login succeeds
	}{
		{"advertised, matching", true, oauthtest.IssOwn, "", ""},
		{"advertised, missing", true, oauthtest.IssNone, "", "has no iss"},
		{"advertised, another issuer", true, "https://attacker.example", "", `names the issuer "https://attacker.example"`},
		{"not advertised, missing", false, oauthtest.IssNone, "", ""},
		{"not advertised, matching", false, oauthtest.IssOwn, "", ""},
		{"not advertised, another issuer", false, "https://attacker.example", "", "mix-up"},
		{"not advertised, normalized issuer", false, "HTTP://" + "127.0.0.1", "", "mix-up"},
		// An error response of another issuer is neither acted on nor
		// shown.
		{"error of another issuer", true, "https://attacker.example", "PHISHING-TEXT", "mix-up"},
		{"error of the issuer", true, oauthtest.IssOwn, "the user said no", "the user said no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newOAuthFixture(t, oauthtest.Options{AdvertiseIss: tc.advertise, Iss: tc.iss, Deny: tc.deny})
			if strings.HasPrefix(tc.iss, "HTTP://") {
				// The issuer in another spelling: equal after RFC 3986
				// normalization, which MCP forbids applying.
				f.as.SetIss("HTTP://" + strings.TrimPrefix(f.as.URL, "http://"))
			}
			st := oauthPool(t, oauth.NewStore(t.TempDir(), nil), f.config(t, "oauth"), true).Status()
			if tc.refused == "" {
				if st.State != StateUp {
					t.Fatalf("login refused: %+v", st)
				}
				return
			}
			if st.State == StateUp || !strings.Contains(st.Error, tc.refused) {
				t.Fatalf("login: %s %q, want refused with %q", st.State, st.Error, tc.refused)
			}
			if strings.Contains(st.Error, "PHISHING-TEXT") {
				t.Fatalf("the error of another issuer is shown: %q", st.Error)
			}
			if f.as.Grants("authorization_code") != 0 {
				t.Fatal("the code of a refused response was exchanged")
			}
		})
	}
}

// TestOAuthDynamicRegistrationIsNative: mcpmux registers as the native
// application it is (a loopback redirect URI), as MCP 2026-07-28 asks.
func TestOAuthDynamicRegistrationIsNative(t *testing.T) {
	f := newOAuthFixture(t, oauthtest.Options{})
	if st := oauthPool(t, oauth.NewStore(t.TempDir(), nil), f.config(t, "oauth"), true).Status(); st.State != StateUp {
		t.Fatalf("login: %+v", st)
	}
	regs := f.as.Registrations()
	if len(regs) != 1 || regs[0].ApplicationType != "native" {
		t.Fatalf("registrations: %+v, want one with application_type native", regs)
	}
}

// movableServer is an MCP server whose protected resource metadata names
// one of several authorization servers, which a test can switch, and
// which accepts the tokens of that one only.
type movableServer struct {
	url string
	as  atomic.Pointer[oauthtest.Server]
}

func newMovableServer(t *testing.T, as *oauthtest.Server) *movableServer {
	t.Helper()
	m := &movableServer{}
	m.as.Store(as)
	srv := mcp.NewServer(&mcp.Implementation{Name: "movable"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "authorized"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	prm := "/.well-known/oauth-protected-resource/mcp"
	mux.HandleFunc("GET "+prm, func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: "http://" + r.Host + "/mcp", AuthorizationServers: []string{m.as.Load().URL},
		}).ServeHTTP(w, r)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		verify := func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
			return m.as.Load().Verify(ctx, token, r)
		}
		auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: "http://" + r.Host + prm})(h).ServeHTTP(w, r)
	})
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	m.url = rs.URL + "/mcp"
	return m
}

// TestOAuthRegistrationKeptByIssuer: a client that dynamic registration
// created is kept for its authorization server's issuer: the second
// server behind the same authorization server logs in with it, as does a
// login again; a server that moved to another authorization server
// registers there, and the old client is not offered to it.
func TestOAuthRegistrationKeptByIssuer(t *testing.T) {
	as1 := oauthtest.NewServer(t, oauthtest.Options{})
	as2 := oauthtest.NewServer(t, oauthtest.Options{})
	p, q := newMovableServer(t, as1), newMovableServer(t, as1)
	store := oauth.NewStore(t.TempDir(), nil)
	cfgP := (&oauthFixture{url: p.url}).config(t, "oauth")
	cfgQ := (&oauthFixture{url: q.url}).config(t, "oauth")
	cfgQ.Name = "q"

	// login runs `mcpmux login` for cfg: a pool that is closed once the
	// server is up, as the command exits.
	login := func(what string, cfg *config.Server) {
		t.Helper()
		pool := NewPool(&Options{Tokens: store, Authorize: func(ctx context.Context, _, authURL string) error { return oauthtest.Follow(ctx, authURL) }})
		defer pool.Close(context.Background(), time.Second)
		pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
		if st := pool.Get(cfg.Name).Status(); st.State != StateUp {
			t.Fatalf("%s: %+v", what, st)
		}
	}
	login("login p", cfgP)
	login("login q behind the same authorization server", cfgQ)
	login("login p again", cfgP)
	if n := len(as1.Registrations()); n != 1 {
		t.Fatalf("%d registrations at the one authorization server, want 1 (shared by its servers)", n)
	}
	if n := as1.Grants("authorization_code"); n != 3 {
		t.Fatalf("%d logins, want 3", n)
	}

	// p moves to another authorization server: its tokens are refused
	// there, and a serving mcpmux says why instead of refreshing them
	// at the old one.
	p.as.Store(as2)
	refreshes := as1.Grants("refresh_token")
	serving := oauthPool(t, store, cfgP, false)
	if st := serving.Status(); st.State != StateNeedsLogin || !strings.Contains(st.Error, as2.URL) {
		t.Fatalf("serving p after it moved: %s %q, want needs login naming %s", st.State, st.Error, as2.URL)
	}
	if n := as1.Grants("refresh_token"); n != refreshes {
		t.Fatalf("the tokens of the old authorization server were refreshed (%d times)", n-refreshes)
	}
	login("login p at its new authorization server", cfgP)
	if n := len(as2.Registrations()); n != 1 {
		t.Fatalf("%d registrations at the new authorization server, want 1", n)
	}
	if n := len(as1.Registrations()); n != 1 {
		t.Fatalf("%d registrations at the old authorization server, want still 1", n)
	}
	if text, err := call(t, oauthPool(t, store, cfgP, false)); err != nil || text != "authorized" {
		t.Fatalf("call after the login at the new authorization server: %q, %v", text, err)
	}
	// q, still behind the first one, keeps its client there.
	login("login q again", cfgQ)
	if n := len(as1.Registrations()); n != 1 {
		t.Fatalf("%d registrations at the first authorization server, want still 1", n)
	}
}

// TestOAuthClientMetadataDocument: with client_metadata_url, mcpmux names
// itself by that URL to an authorization server that supports client ID
// metadata documents, and registers dynamically with one that does not.
func TestOAuthClientMetadataDocument(t *testing.T) {
	const doc = "https://tools.acme.example/mcpmux-client.json"
	for _, supported := range []bool{true, false} {
		opts := oauthtest.Options{}
		if supported {
			opts.ClientMetadataURL = doc
		}
		f := newOAuthFixture(t, opts)
		store := oauth.NewStore(t.TempDir(), nil)
		s := oauthPool(t, store, f.config(t, "{type: oauth, client_metadata_url: "+doc+"}"), true)
		if st := s.Status(); st.State != StateUp {
			t.Fatalf("supported=%v: login: %+v", supported, st)
		}
		want := 0
		if !supported {
			want = 1
		}
		if n := len(f.as.Registrations()); n != want {
			t.Fatalf("supported=%v: %d registrations, want %d", supported, n, want)
		}
		if text, err := call(t, oauthPool(t, store, f.config(t, "{type: oauth, client_metadata_url: "+doc+"}"), false)); err != nil || !strings.HasPrefix(text, "authorized") {
			t.Fatalf("supported=%v: serving: %q, %v", supported, text, err)
		}
	}
}

// TestOAuthPreregisteredClientOfAnotherIssuer: a client_id from the tool
// file is not offered to another authorization server than the one its
// login found; the login says what to change.
func TestOAuthPreregisteredClientOfAnotherIssuer(t *testing.T) {
	// Both know the id, as two tenants of one provider might.
	as1 := oauthtest.NewServer(t, oauthtest.Options{Clients: map[string]string{"fixed": ""}, NoRegistration: true})
	as2 := oauthtest.NewServer(t, oauthtest.Options{Clients: map[string]string{"fixed": ""}, NoRegistration: true})
	p := newMovableServer(t, as1)
	store := oauth.NewStore(t.TempDir(), nil)
	cfg := (&oauthFixture{url: p.url}).config(t, "{type: oauth, client_id: fixed}")
	if st := oauthPool(t, store, cfg, true).Status(); st.State != StateUp {
		t.Fatalf("login: %+v", st)
	}
	p.as.Store(as2)
	st := oauthPool(t, store, cfg, true).Status()
	if st.State == StateUp || !strings.Contains(st.Error, `client_id "fixed" was registered with the authorization server `+as1.URL) {
		t.Fatalf("login after the server moved: %s %q, want refused naming the client's authorization server", st.State, st.Error)
	}
	if n := as2.Grants("authorization_code"); n != 0 {
		t.Fatalf("%d logins at the other authorization server with the client of the first", n)
	}
}
