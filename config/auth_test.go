package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestAuthForms(t *testing.T) {
	lookup := env(map[string]string{"LINEAR_SECRET": "s3cr3t-value"})
	for _, tc := range []struct {
		name, yaml string
		want       Auth
	}{
		{"shorthand", "url: https://x.example/mcp\nauth: oauth\n", Auth{Type: AuthOAuth}},
		{"oauth mapping", "url: https://x.example/mcp\nauth:\n  type: oauth\n  client_id: abc\n  client_secret: ${oc.env:LINEAR_SECRET}\n  scopes: [read, write]\n  redirect_port: 8765\n  client_metadata_url: https://mcpmux.example/client.json\n",
			Auth{Type: AuthOAuth, ClientID: "abc", ClientSecret: "s3cr3t-value", Scopes: []string{"read", "write"}, RedirectPort: 8765, ClientMetadataURL: "https://mcpmux.example/client.json"}},
		{"client credentials", "url: https://x.example/mcp\nauth: {type: client_credentials, client_id: m2m, client_secret: abcd}\n", Auth{Type: AuthClientCredentials, ClientID: "m2m", ClientSecret: "abcd"}},
		{"private key jwt", "url: https://x.example/mcp\nauth: {type: client_credentials, client_id: m2m, private_key_file: /k.pem, signing_algorithm: ES256}\n", Auth{Type: AuthClientCredentials, ClientID: "m2m", PrivateKeyFile: "/k.pem", SigningAlgorithm: "ES256"}},
		{"token file", "url: https://x.example/mcp\nauth: {type: token_file, token_file: /run/secrets/t}\n", Auth{Type: AuthTokenFile, TokenFile: "/run/secrets/t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ferr := ParseServer("tool/x.yaml", []byte(tc.yaml), lookup)
			if ferr != nil {
				t.Fatal(ferr)
			}
			if s.Auth == nil || !equalAuth(*s.Auth, tc.want) {
				t.Fatalf("auth = %+v, want %+v", s.Auth, tc.want)
			}
		})
	}
}

func equalAuth(a, b Auth) bool { return reflect.DeepEqual(a, b) }

func TestAuthErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"tool_command: x\nauth: oauth\n", "auth: only a url: server can have auth"},
		{"url: https://x.example/mcp\nauth: magic\n", `auth.type: unknown "magic"`},
		{"url: https://x.example/mcp\nauth: {type: oauth, token_file: /t}\n", "auth.token_file: does not apply to auth type oauth"},
		{"url: https://x.example/mcp\nauth: {type: oauth, client_secret: x}\n", "auth.client_secret: needs a client_id"},
		{"url: https://x.example/mcp\nauth: {type: oauth, redirect_port: 70000}\n", "auth.redirect_port: 70000 is not a port"},
		{"url: https://x.example/mcp\nauth: {type: oauth, client_metadata_url: http://a.example/c.json}\n", "must be an https URL with a path"},
		{"url: https://x.example/mcp\nauth: {type: oauth, scopes: [\"a b\"]}\n", `auth.scopes.0: "a b" is not a scope`},
		{"url: https://x.example/mcp\nauth: {type: client_credentials, client_secret: x}\n", "auth.client_secret: needs a client_id"},
		{"url: https://x.example/mcp\nauth: {type: client_credentials, client_id: x}\n", "exactly one of client_secret, private_key, private_key_file"},
		{"url: https://x.example/mcp\nauth: {type: client_credentials, client_id: x, client_secret: y, private_key: z}\n", "exactly one of"},
		{"url: https://x.example/mcp\nauth: {type: client_credentials, client_id: x, private_key: z, signing_algorithm: HS256}\n", `unknown "HS256"`},
		{"url: https://x.example/mcp\nauth: {type: client_credentials, client_id: x, client_secret: y, signing_algorithm: ES256}\n", "applies to private_key"},
		{"url: https://x.example/mcp\nauth: {type: client_credentials, client_id: x, client_secret: y, redirect_port: 1}\n", "auth.redirect_port: does not apply"},
		{"url: https://x.example/mcp\nauth: token_file\n", "auth.token_file: missing"},
		{"url: https://x.example/mcp\nheaders: {authorization: Bearer x}\nauth: oauth\n", "headers: set either an Authorization header or auth"},
		{"url: https://x.example/mcp\nauth: {type: oauth, colour: blue}\n", `unknown field "colour" at auth`},
		{"url: https://x.example/mcp\nauth: [oauth]\n", "auth"},
	} {
		_, ferr := ParseServer("tool/x.yaml", []byte(tc.yaml), env(nil))
		if ferr == nil || !strings.Contains(ferr.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.yaml, ferr, tc.want)
		}
	}
}

func TestAuthFilesAreRelativeToTheConfigDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	tool := "url: https://x.example/mcp\nauth: {type: token_file, token_file: secrets/token}\n"
	if err := os.WriteFile(filepath.Join(dir, "tool", "x.yaml"), []byte(tool), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := Load(dir, &Options{Lookup: env(nil)})
	if err != nil || len(snap.Servers) != 1 {
		t.Fatalf("load: %v, %+v", err, snap)
	}
	if got, want := snap.Servers[0].Auth.TokenFile, filepath.Join(dir, "secrets/token"); got != want {
		t.Errorf("token_file = %q, want %q", got, want)
	}
}

func TestAuthSecretsAreMasked(t *testing.T) {
	s, ferr := ParseServer("tool/x.yaml", []byte("url: https://x.example/mcp\nauth: {type: client_credentials, client_id: m2m, client_secret: literal-secret-1234}\n"), env(nil))
	if ferr != nil {
		t.Fatal(ferr)
	}
	if !slices.Contains(s.Secrets(), "literal-secret-1234") {
		t.Errorf("Secrets() = %q, want the literal client_secret", s.Secrets())
	}
	// A file that fails to load still has its auth secret masked.
	got := looseSecrets([]byte("url: https://x.example/mcp\nauth: {type: bogus, client_secret: broken-file-secret}\n"), env(nil))
	if !slices.Contains(got, "broken-file-secret") {
		t.Errorf("looseSecrets = %q, want the client_secret of the broken file", got)
	}
}
