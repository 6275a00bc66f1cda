package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/oauthtest"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// protectedNotes is a remote MCP server behind OAuth, as a hosted one
// (Linear, Notion, ...) is: its one tool answers only with a valid token.
func protectedNotes(t *testing.T, as *oauthtest.Server) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "list_notes", Description: "Lists the user's notes.", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("note 1: buy milk"), nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	rs := httptest.NewServer(as.Protect("/mcp", h))
	t.Cleanup(rs.Close)
	return rs.URL + "/mcp"
}

// The "done when": a url: server whose authorization server
// requires OAuth; a login without a person (the test follows the
// authorization URL); a tool call through mcpmux; an expired token
// survived by refreshing; needs login after revocation, in check, /healthz
// and mcpmux__status, with the calls saying what to run, and the other
// server unaffected; a second login that a running mcpmux picks up; the
// tokens 0600 in the state directory and never in the log; logout.
func TestOAuthRemoteServer(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewServer(t, oauthtest.Options{Scopes: []string{"notes:read"}})
	notesURL := protectedNotes(t, as)
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":     "meta_tools: [status]\n",
		"tool/notes.yaml": "url: " + notesURL + "\nauth: oauth\n",
		"tool/echo.yaml":  fixture("echo", "echo"),
	})
	env := []string{"MCPMUX_STATE_DIR=" + filepath.Join(t.TempDir(), "state")}

	// Before any login: needs login, and only that server.
	p := startHTTPEnv(t, dir, env)
	cs, err := connectHTTP(t, p, "/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Its tools are not known before the first login; the status says
	// what to do.
	st := waitServerState(t, p, "notes", "needs login")
	if want := `needs login: no tokens are stored for it; run "mcpmux login notes"`; st.Error != want {
		t.Errorf("/healthz error %q, want %q", st.Error, want)
	}
	if status := resultText(callTool(t, cs, "mcpmux__status", nil)); !strings.Contains(status, `- notes: needs login, 0 tools`) || !strings.Contains(status, `run "mcpmux login notes"`) {
		t.Errorf("mcpmux__status before login:\n%s", status)
	}
	if got := resultText(callTool(t, cs, "echo__echo", map[string]any{"text": "hi"})); got != "echo: hi" {
		t.Errorf("the other server: %q", got)
	}
	// A call of one of its tools, by a name the client learnt elsewhere,
	// is told to log in rather than that the tool does not exist.
	if res := callTool(t, cs, "notes__add_note", map[string]any{"text": "x"}); !res.IsError || !strings.Contains(resultText(res), `server 'notes' lists no tools because the server needs login: no tokens are stored for it; run "mcpmux login notes", where mcpmux runs`) {
		t.Errorf("a call before login: %q", resultText(res))
	}

	// The login, headless: the test is the person with the browser.
	out := loginHeadless(t, dir, env, as)
	if !strings.Contains(out, "Logged in to notes (1 tool).") {
		t.Errorf("login output:\n%s", out)
	}
	waitServerState(t, p, "notes", "up") // the running mcpmux picked the tokens up
	if res := callTool(t, cs, "notes__list_notes", nil); res.IsError || resultText(res) != "note 1: buy milk" {
		t.Fatalf("call after login = %q (isError %v)", resultText(res), res.IsError)
	}

	// The access token expires: mcpmux refreshes and the call goes through.
	as.ExpireAccessTokens()
	if res := callTool(t, cs, "notes__list_notes", nil); res.IsError {
		t.Fatalf("call after the access token expired = %q", resultText(res))
	}
	if n := as.Grants("refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}

	// Revoked: needs login everywhere, the other server unaffected.
	as.RevokeAll()
	res := callTool(t, cs, "notes__list_notes", nil)
	if text := resultText(res); !res.IsError || !strings.Contains(text, `run "mcpmux login notes"`) || !strings.Contains(text, "refused its refresh token") {
		t.Errorf("call after revocation = %q (isError %v)", text, res.IsError)
	}
	st = waitServerState(t, p, "notes", "needs login")
	if !strings.Contains(st.Error, "mcpmux login notes") {
		t.Errorf("/healthz error %q", st.Error)
	}
	if code, h := healthz(t, p); code != http.StatusOK || h.Status != "degraded" {
		t.Errorf("/healthz: %d %q, want 200 degraded", code, h.Status)
	}
	if status := resultText(callTool(t, cs, "mcpmux__status", nil)); !strings.Contains(status, "- notes: needs login") || !strings.Contains(status, "- echo: up") {
		t.Errorf("mcpmux__status:\n%s", status)
	}
	if got := resultText(callTool(t, cs, "echo__echo", map[string]any{"text": "still"})); got != "echo: still" {
		t.Errorf("the other server after revocation: %q", got)
	}
	stdout, _, code := runMcpmuxEnv(t, env, "check", "--config", dir)
	if code != 1 || !regexp.MustCompile(`(?m)^notes\s+needs login\s`).MatchString(stdout) || !regexp.MustCompile(`(?m)^echo\s+up\s`).MatchString(stdout) {
		t.Errorf("check: exit %d\n%s", code, stdout)
	}

	// Logging in again brings it back without a restart; this time
	// mcpmux opens "the browser" ($BROWSER) itself.
	browser := filepath.Join(t.TempDir(), "browser")
	script := "#!/bin/sh\nexec " + filepath.Join(nodeBin, "node") + ` -e 'fetch(process.argv[1]).then(r => process.exit(r.ok ? 0 : 1))' "$1"` + "\n"
	if err := os.WriteFile(browser, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runMcpmuxEnv(t, append([]string{"BROWSER=" + browser}, env...), "login", "notes", "--config", dir); code != 0 {
		t.Fatalf("login with a browser: exit %d\n%s\n%s", code, stdout, stderr)
	}
	waitServerState(t, p, "notes", "up")
	if res := callTool(t, cs, "notes__list_notes", nil); res.IsError {
		t.Fatalf("call after the second login = %q", resultText(res))
	}

	// A reload that changes the server keeps its tokens: no login.
	logins := as.Grants("authorization_code")
	if err := os.WriteFile(filepath.Join(dir, "tool/notes.yaml"), []byte("url: "+notesURL+"\nauth: oauth\ntimeout: 5m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="config reloaded" [^\n]*restarted=\[notes\]`))
	if res := callTool(t, cs, "notes__list_notes", nil); res.IsError {
		t.Fatalf("call after a reload = %q", resultText(res))
	}
	if n := as.Grants("authorization_code"); n != logins {
		t.Errorf("the reload cost a login (%d → %d)", logins, n)
	}

	// The tokens: 0600, in the state directory, never in the log.
	tokenFile := filepath.Join(strings.TrimPrefix(env[0], "MCPMUX_STATE_DIR="), "oauth", "notes.json")
	fi, err := os.Stat(tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}
	var stored struct {
		ClientSecret string `json:"client_secret"`
		Token        struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		} `json:"token"`
	}
	data, _ := os.ReadFile(tokenFile)
	if err := json.Unmarshal(data, &stored); err != nil || stored.Token.RefreshToken == "" {
		t.Fatalf("token file %s: %v", data, err)
	}
	for _, secret := range []string{stored.Token.AccessToken, stored.Token.RefreshToken, stored.ClientSecret} {
		if strings.Contains(p.logs.String(), secret) {
			t.Errorf("the log shows a token or client secret")
		}
	}

	// Removing the server keeps its tokens, until logout.
	if err := os.Remove(filepath.Join(dir, "tool/notes.yaml")); err != nil {
		t.Fatal(err)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="config reloaded" [^\n]*removed=\[notes\]`))
	if _, err := os.Stat(tokenFile); err != nil {
		t.Errorf("token file after removing the server: %v", err)
	}
	if stdout, _, code := runMcpmuxEnv(t, env, "logout", "notes", "--config", dir); code != 0 || !strings.Contains(stdout, "Removed the tokens of notes") {
		t.Errorf("logout: exit %d: %s", code, stdout)
	}
	if _, err := os.Stat(tokenFile); !os.IsNotExist(err) {
		t.Errorf("token file after logout: %v", err)
	}
}

// loginHeadless runs `mcpmux login notes`, follows the authorization URL
// it prints, and returns its output once it has succeeded.
func loginHeadless(t *testing.T, dir string, env []string, as *oauthtest.Server) string {
	t.Helper()
	ctx := testContext(t)
	cmd := exec.CommandContext(ctx, mcpmuxBin, "login", "notes", "--config", dir, "--no-browser")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	authURL := regexp.MustCompile(`^\s+(` + regexp.QuoteMeta(as.URL) + `/authorize\?\S+)$`)
	sc := bufio.NewScanner(stdout)
	followed := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if m := authURL.FindStringSubmatch(sc.Text()); m != nil && !followed {
			followed = true
			if err := oauthtest.Follow(ctx, m[1]); err != nil {
				t.Errorf("following the authorization URL: %v", err)
			}
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil || !followed {
		t.Fatalf("mcpmux login: %v (authorization URL seen: %v)\nstdout:\n%s\nstderr:\n%s", err, followed, out.String(), stderr.String())
	}
	return out.String()
}

// waitServerState polls /healthz until server is in state.
func waitServerState(t *testing.T, p *process, server, state string) (st struct{ State, Error string }) {
	t.Helper()
	return testkit.Await(t, server+" is "+state, func() (st struct{ State, Error string }) {
		_, h := healthz(t, p)
		for _, s := range h.Servers {
			if s.Name == server {
				st.State, st.Error = s.State, s.Error
			}
		}
		return st
	}, func(st struct{ State, Error string }) bool { return st.State == state })
}

// startHTTPEnv is startHTTP with extra environment variables.
func startHTTPEnv(t *testing.T, dir string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(mcpmuxBin, append([]string{"--config", dir, "--http", "127.0.0.1:0", "--log-level", "debug"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return runHTTP(t, "mcpmux", cmd)
}

// runMcpmuxEnv is runMcpmux with extra environment variables.
func runMcpmuxEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(testContext(t), mcpmuxBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running mcpmux %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}
