package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/oauthtest"
)

// The successful login, through the built binary and a real
// authorization server, is e2e/oauth_test.go's; these are the refusals.
func TestLoginAndLogoutRefusals(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"cc.yaml":     "url: https://cc.example/mcp\nauth: {type: client_credentials, client_id: x, client_secret: y}\n",
		"plain.yaml":  "url: https://plain.example/mcp\n",
		"child.yaml":  "tool_command: cat\n",
		"notes.yaml":  "url: https://notes.example/mcp\nauth: oauth\n",
		"broken.yaml": "url: https://broken.example/mcp\nauth: {type: oauth, colour: blue}\n",
	}
	if err := os.MkdirAll(filepath.Join(dir, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, "tool", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("MCPMUX_STATE_DIR", t.TempDir())
	mcpmux := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := Run(append(args, "--config", dir), &out, &errb)
		return code, out.String() + errb.String()
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"login", "nope"}, 1, `no server "nope" in ` + filepath.Join(dir, "tool") + " (servers with auth: oauth: notes)"},
		{[]string{"login", "plain"}, 1, `server plain has no auth: section; add "auth: oauth" to`},
		{[]string{"login", "child"}, 1, "server child has no auth: section"},
		{[]string{"login", "cc"}, 1, "server cc uses auth: client_credentials, which needs no login"},
		{[]string{"login", "broken"}, 1, `unknown field "colour" at auth`},
		{[]string{"login"}, 2, "mcpmux login: name one SERVER, not 0\nRun \"mcpmux login -h\" for the usage."},
		{[]string{"login", "notes", "cc"}, 2, "mcpmux login: name one SERVER, not 2"},
		{[]string{"logout", "notes"}, 0, "No tokens are stored for notes"},
		{[]string{"logout", "../etc"}, 1, `"../etc" is not a server name`},
		{[]string{"logout"}, 2, "mcpmux logout: name one SERVER, not 0"},
	} {
		code, out := mcpmux(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("mcpmux %v: exit %d, output:\n%s\nwant exit %d and %q", tc.args, code, out, tc.code, tc.want)
		}
	}

	// Tokens are never kept in the config directory.
	t.Setenv("MCPMUX_STATE_DIR", filepath.Join(dir, "state"))
	if code, out := mcpmux("login", "notes"); code != 1 || !strings.Contains(out, "is inside the config directory") {
		t.Errorf("login with the state directory in the config directory: exit %d\n%s", code, out)
	}
}

// An authorization server that registers no clients: the login fails and
// says how to use a pre-registered client.
func TestLoginWithoutRegistrationSaysWhatToDo(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{NoRegistration: true})
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes"}, nil)
	rs := httptest.NewServer(as.Protect("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(rs.Close)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tool", "notes.yaml"), []byte("url: "+rs.URL+"/mcp\nauth: oauth\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPMUX_STATE_DIR", t.TempDir())
	var out, errb bytes.Buffer
	code := Run([]string{"login", "notes", "--config", dir, "--no-browser", "--timeout", "20s"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "no configured client registration methods") ||
		!strings.Contains(errb.String(), "set auth.client_id and auth.redirect_port in "+filepath.Join(dir, "tool", "notes.yaml")) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
}
