package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// The secret of the leak fixtures; its variable's name marks it as one.
const fixtureSecret = "sk-live-4f3c2b1a0987zyxw"

func leakServer(name, mode string) string {
	return fixture(name, mode, "  FIXTURE_API_KEY: "+fixtureSecret)
}

func noSecret(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, fixtureSecret) || strings.Contains(s, "4f3c2b1a0987") {
		t.Errorf("%s shows the secret:\n%s", what, s)
	}
}

// A child that prints its API key to stderr and in its errors: the key
// appears in no log line and no result mcpmux writes itself.
func TestSecretsMaskedInLogsAndErrors(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{"tool/leak.yaml": leakServer("leak", "leak")})
	cs, p := startStdio(t, dir)
	p.logs.waitFor(t, regexp.MustCompile(`fixture: starting with key \*\*\*\*`))
	res := callTool(t, cs, "leak__fail", nil)
	if !res.IsError || !strings.Contains(resultText(res), "upstream refused key ****") {
		t.Errorf("result: isError=%v %q", res.IsError, resultText(res))
	}
	noSecret(t, "the call's error result", resultText(res))
	p.logs.waitFor(t, regexp.MustCompile(`request rejected for key \*\*\*\*`))
	noSecret(t, "mcpmux's log", p.logs.String())
}

// check, /healthz and the mcpmux__status tool show a failed server's
// stderr, masked.
func TestSecretsMaskedInCheckAndHealth(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/leak.yaml": leakServer("leak", "leak-crash"),
		"mcpmux.yaml":    "meta_tools: [status]\n",
	})
	out, errOut, code := runMcpmux(t, "check", "--config", dir)
	if code == 0 || !strings.Contains(out, "auth failed for key ****") {
		t.Errorf("check = %d, want a failure quoting the masked stderr:\n%s", code, out)
	}
	noSecret(t, "check's output", out+errOut)

	p := startHTTP(t, dir)
	base := strings.TrimSuffix(p.url, "/mcp")
	body := testkit.Await(t, "/healthz shows the failure", func() string {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return readAll(t, resp.Body)
	}, func(body string) bool { return strings.Contains(body, "auth failed") })
	if !strings.Contains(body, "****") {
		t.Errorf("/healthz: %s", body)
	}
	noSecret(t, "/healthz", body)

	cs, err := connectHTTP(t, p, "/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	res := callTool(t, cs, "mcpmux__status", nil)
	status := resultText(res) + jsonOf(t, res.StructuredContent)
	if !strings.Contains(status, "auth failed for key ****") {
		t.Errorf("mcpmux__status does not quote the masked failure:\n%s", status)
	}
	noSecret(t, "mcpmux__status", status)
	noSecret(t, "mcpmux's log", p.logs.String())
}

// A value interpolated into a url's query, into args or into tool_command
// is masked like any secret in the log, in check and in /healthz, also
// where a log line or an error's stderr tail is cut in the middle of it.
func TestInterpolatedSecretsMaskedEverywhere(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{
		"E2E_QUERY_KEY": "sk-query-7d1e5a90c4",
		"E2E_ARG_KEY":   "sk-arg-3b8f26e1d7",
		"E2E_CMD_KEY":   "sk-cmd-95ca0e4b12",
	}
	for k, v := range secrets {
		setenv(t, k, v)
	}
	pad := strings.Repeat("p", 290) // puts the arg's secret across the 300-byte cut of the stderr tail
	dir := writeConfig(t, map[string]string{
		"tool/remote.yaml": "url: \"http://127.0.0.1:9/mcp?api_key=${oc.env:E2E_QUERY_KEY}\"\nconnect_timeout: 5s\n",
		"tool/args.yaml":   fixture("args", "args-crash", "args: [\""+pad+"${oc.env:E2E_ARG_KEY}\"]"),
		"tool/cmd.yaml":    "tool_command: \"/nonexistent/${oc.env:E2E_CMD_KEY}\"\n",
	})
	hidden := func(what, s string) {
		t.Helper()
		for _, v := range secrets {
			if strings.Contains(s, v[:6]) {
				t.Errorf("%s shows %q of a secret:\n%s", what, v[:6], s)
			}
		}
	}
	out, errOut, code := runMcpmux(t, "check", "--config", dir)
	if code == 0 || strings.Count(out, "****") < 3 {
		t.Errorf("check = %d, want the three failures, masked:\n%s", code, out)
	}
	hidden("check", out+errOut)

	p := startHTTP(t, dir)
	testkit.Eventually(t, "every server failed", func() bool {
		_, h := healthz(t, p)
		failed := 0
		for _, s := range h.Servers {
			if s.Error != "" {
				failed++
			}
		}
		return failed == 3
	})
	resp, err := http.Get(p.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	resp.Body.Close()
	hidden("/healthz", body)
	p.logs.waitFor(t, regexp.MustCompile(`bad arguments`))
	hidden("the log", p.logs.String())
}

// rawPost sends one JSON-RPC message as a Streamable HTTP client would.
var rawPost = testkit.Post

const initRequest = testkit.InitializeRequest

// Token from token_file (trimmed), 401 with WWW-Authenticate without it,
// 403 for a foreign Origin, 413 over max_request_bytes, /healthz open.
func TestHTTPSecurityThroughTheBinary(t *testing.T) {
	t.Parallel()
	const token = "tok-e2e-0123456789"
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":    "token_file: token.txt\nmax_request_bytes: 4KiB\nallowed_origins: [\"https://app.example.com\"]\n",
		"token.txt":      "\n  " + token + "  \n",
		"tool/echo.yaml": fixture("echo", "echo"),
	})
	p := startHTTP(t, dir)
	auth := map[string]string{"Authorization": "Bearer " + token}

	resp, body := rawPost(t, p.url+"/mcp", initRequest, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no token: %d %q, WWW-Authenticate %q", resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
	}
	resp, body = rawPost(t, p.url+"/mcp", initRequest, map[string]string{"Authorization": "Bearer " + token, "Origin": "https://evil.example"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign origin: %d %q", resp.StatusCode, body)
	}
	resp, body = rawPost(t, p.url+"/mcp", initRequest, map[string]string{"Authorization": "Bearer " + token, "Origin": "https://app.example.com"})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("allowed origin: %d %q", resp.StatusCode, body)
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 8192) + `"}}`
	resp, body = rawPost(t, p.url+"/mcp", big, auth)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d %q, want 413", resp.StatusCode, body)
	}

	cs, err := connectHTTP(t, p, "/mcp", http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, cs, "echo__echo", map[string]any{"text": "hi"}); resultText(res) != "echo: hi" {
		t.Errorf("call: %q", resultText(res))
	}
	// A call over the limit is refused with 413; the session stays usable.
	if _, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "echo__echo", Arguments: map[string]any{"text": strings.Repeat("y", 8192)}}); err == nil || !strings.Contains(err.Error(), "Request Entity Too Large") {
		t.Errorf("oversized call: %v", err)
	}
	if res := callTool(t, cs, "echo__echo", map[string]any{"text": "again"}); resultText(res) != "echo: again" {
		t.Errorf("call after a 413: %q", resultText(res))
	}
	if _, err := connectHTTP(t, p, "/mcp", nil); err == nil {
		t.Error("a client without the token connected")
	}

	hresp, err := http.Get(strings.TrimSuffix(p.url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health struct{ Status string }
	_ = json.NewDecoder(hresp.Body).Decode(&health)
	hresp.Body.Close()
	if hresp.StatusCode != http.StatusOK || health.Status == "" {
		t.Errorf("/healthz without a token: %d %+v", hresp.StatusCode, health)
	}
	if strings.Contains(p.logs.String(), token) {
		t.Errorf("the token is in the log:\n%s", p.logs.String())
	}
}

// A rotated token file applies on reload, without a restart: the old token
// (and its session) get 401, the new one works; a token file emptied by
// mistake keeps the tokens in force.
func TestTokenFileRotatesOnReload(t *testing.T) {
	t.Parallel()
	const oldToken, newToken = "tok-old-0123456789", "tok-new-9876543210"
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":    "token_file: token.txt\n",
		"token.txt":      oldToken + "\n",
		"tool/echo.yaml": fixture("echo", "echo"),
	})
	p := startHTTP(t, dir)
	old, err := connectHTTP(t, p, "/mcp", http.Header{"Authorization": {"Bearer " + oldToken}})
	if err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, old, "echo__echo", map[string]any{"text": "before"}); resultText(res) != "echo: before" {
		t.Fatalf("call with the old token: %q", resultText(res))
	}

	saveAtomically(t, filepath.Join(dir, "token.txt"), newToken+"\n")
	p.logs.waitFor(t, regexp.MustCompile(`token file re-read`))
	if resp, body := rawPost(t, p.url+"/mcp", initRequest, map[string]string{"Authorization": "Bearer " + oldToken}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old token after the rotation: %d %q, want 401", resp.StatusCode, body)
	}
	if _, err := old.CallTool(testContext(t), &mcp.CallToolParams{Name: "echo__echo", Arguments: map[string]any{"text": "after"}}); err == nil {
		t.Error("the old token's session still calls after the rotation")
	}
	cs, err := connectHTTP(t, p, "/mcp", http.Header{"Authorization": {"Bearer " + newToken}})
	if err != nil {
		t.Fatalf("connect with the new token: %v", err)
	}
	if res := callTool(t, cs, "echo__echo", map[string]any{"text": "new"}); resultText(res) != "echo: new" {
		t.Errorf("call with the new token: %q", resultText(res))
	}

	saveAtomically(t, filepath.Join(dir, "token.txt"), "\n")
	p.logs.waitFor(t, regexp.MustCompile(`token file not re-read.*holds no token`))
	if res := callTool(t, cs, "echo__echo", map[string]any{"text": "still"}); resultText(res) != "echo: still" {
		t.Errorf("call after the token file was emptied: %q", resultText(res))
	}
	for _, tok := range []string{oldToken, newToken} {
		if strings.Contains(p.logs.String(), tok) {
			t.Errorf("token %s is in the log", tok)
		}
	}
}

// saveAtomically writes a file as editors and secret managers do: a
// temporary file renamed over it.
func saveAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A missing or empty token file stops mcpmux with a clear error.
func TestTokenFileErrors(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{"tool/echo.yaml": fixture("echo", "echo"), "empty": "\n  \n# comment\n"})
	for _, c := range []struct {
		file, want string
	}{
		{filepath.Join(dir, "missing"), "cannot read the token file"},
		{filepath.Join(dir, "empty"), "holds no token"},
	} {
		_, errOut, code := runMcpmux(t, "--config", dir, "--http", "127.0.0.1:0", "--no-watch", "--token-file", c.file)
		if code != 2 || !strings.Contains(errOut, "--token-file") || !strings.Contains(errOut, c.want) {
			t.Errorf("--token-file %s: exit %d, stderr:\n%s", c.file, code, errOut)
		}
	}
}

// A server answering with far more than max_result_bytes: the client gets
// the head of the text, cut at a UTF-8 boundary, and notes for what was
// cut or removed.
func TestHugeResultTruncatedThroughTheBinary(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":    "max_result_bytes: 1MiB\n",
		"tool/huge.yaml": fixture("huge", "huge"),
	})
	cs, p := startStdio(t, dir)
	res := callTool(t, cs, "huge__dump", map[string]any{"mb": "2"})
	if len(res.Content) != 2 {
		t.Fatalf("%d items", len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	head, note, _ := strings.Cut(text, "\n[mcpmux: result truncated")
	if len(head) != 1<<20 || strings.Trim(head, "é") != "" || !strings.Contains(note, "2097152 bytes, 1048576 are shown") {
		t.Errorf("text: %d bytes of head, note %q", len(head), note)
	}
	if img, ok := res.Content[1].(*mcp.TextContent); !ok || !strings.Contains(img.Text, "image (image/png) of 2097152 bytes removed") {
		t.Errorf("image item: %#v", res.Content[1])
	}
	p.logs.waitFor(t, regexp.MustCompile(`tool result truncated`))
}

// A child flooding stderr is drained (it never blocks on a full pipe) and
// its lines are rate-limited in mcpmux's log; its calls keep working.
func TestStderrFloodDoesNotBlock(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{"tool/flood.yaml": fixture("flood", "flood")})
	cs, p := startStdio(t, dir)
	for i := range 50 {
		if res := callTool(t, cs, "flood__echo", map[string]any{"text": "x"}); resultText(res) != "echo: x" {
			t.Fatalf("call %d: %q", i, resultText(res))
		}
	}
	p.logs.waitFor(t, regexp.MustCompile(`lines dropped`))
	for _, line := range strings.Split(p.logs.String(), "\n") {
		if len(line) > 8<<10 {
			t.Fatalf("a log line of %d bytes: long lines must be cut", len(line))
		}
	}
}

// A message from a child over the bound of a line (16 MiB) is not
// buffered: its call gets an isError result naming the bound, and the
// connection, mcpmux and its other servers carry on.
func TestOversizedMessageFailsOnlyItsCall(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/huge.yaml": fixture("huge", "huge"),
		"tool/echo.yaml": fixture("echo", "echo"),
	})
	cs, _ := startStdio(t, dir)
	// 7 MiB of text and 7 MiB of image (9.3 MiB in base64): just over the
	// bound. Writing it takes a race-built fixture about a minute on a
	// loaded machine (before and after this connection), so the call is
	// bounded by the test's deadline, not testTimeout.
	res, err := cs.CallTool(longTestContext(t), &mcp.CallToolParams{Name: "huge__dump", Arguments: map[string]any{"mb": "7"}})
	if err != nil {
		t.Fatalf("calling huge__dump: %v (mcpmux must always answer with a result)", err)
	}
	if !res.IsError || !strings.Contains(resultText(res), "over the bound of a message on stdio") {
		t.Errorf("oversized answer: isError=%v %q", res.IsError, resultText(res))
	}
	if res := callTool(t, cs, "echo__echo", map[string]any{"text": "still here"}); resultText(res) != "echo: still here" {
		t.Errorf("other server: %q", resultText(res))
	}
	// The same connection answers small requests at once: it was not
	// ended, and the server was not restarted.
	if res := callTool(t, cs, "huge__dump", map[string]any{"mb": "0"}); res.IsError {
		t.Errorf("a small answer after it: %q", resultText(res))
	}
}
