package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// What a new user meets first, through the binary: mcpmux init, check's
// report of invalid files, unknown profiles, server names that tool names
// cannot hold, /healthz's invalid files, and the children's log lines.

// init writes a config that check starts as it is, with only the binary.
func TestInitThenCheck(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "config")
	if out, errOut, code := runMcpmux(t, "init", "--config", dir); code != 0 {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := runMcpmux(t, "check", "--config", dir)
	if code != 0 || !regexpMatch(`(?m)^fetch\s+up\s+1\s`, out) || !regexpMatch(`(?m)^everything\s+disabled\s`, out) || !strings.Contains(out, "1 servers, 0 not up, 0 invalid files") {
		t.Errorf("check of the starter config: exit %d\n%s%s", code, out, errOut)
	}
}

// check reports an invalid file once, on stdout, with its line and the
// key that was meant; nothing about it on stderr.
func TestCheckReportsInvalidFilesOnce(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/echo.yaml":     fixture("echo", "echo"),
		"tool/claude.yaml":   "command: npx\nargs: [\"-y\", \"some-server\"]\n",
		"tool/unclosed.yaml": "name: unclosed\ntool_command: x\nargs: [\"a\", \"b\"\nenv: {}\n",
	})
	out, errOut, code := runMcpmux(t, "check", "--config", dir)
	if code != 1 {
		t.Errorf("check exited %d with invalid files", code)
	}
	for _, want := range []string{
		`claude.yaml:1: unknown field "command" at top level: did you mean "tool_command"?`,
		`unclosed.yaml:3: invalid YAML: line 3: did not find expected ',' or ']'`,
		"1 servers, 0 not up, 2 invalid files",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check's report lacks %q:\n%s", want, out)
		}
	}
	for _, file := range []string{"claude.yaml", "unclosed.yaml"} {
		if n := strings.Count(out, file); n != 1 {
			t.Errorf("check's report names %s %d times:\n%s", file, n, out)
		}
		if strings.Contains(errOut, file) {
			t.Errorf("check reports %s on stderr too:\n%s", file, errOut)
		}
	}
}

func TestToolsUnknownProfile(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{"tool/echo.yaml": fixture("echo", "echo")})
	_, errOut, code := runMcpmux(t, "tools", "--config", dir, "--profile", "nope")
	if code != 2 || !strings.Contains(errOut, `unknown profile "nope": no profiles are defined (profiles: in mcpmux.yaml)`) {
		t.Errorf("tools --profile nope without profiles: exit %d\n%s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcpmux.yaml"), []byte("profiles:\n  b: {}\n  a: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runMcpmux(t, "tools", "--config", dir, "--profile", "nope"); code != 2 || !strings.Contains(errOut, `unknown profile "nope": the profiles are a, b`) {
		t.Errorf("tools --profile nope with profiles a, b: exit %d\n%s", code, errOut)
	}
}

// A server named my.srv exposes its tools as my_srv__<tool>_<hash>; tools,
// check and the serving log say why, and how to get my_srv__<tool>.
func TestDottedServerNameIsExplained(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{"tool/my.srv.yaml": fixture("my.srv", "echo")})
	why := regexp.MustCompile(`server "my\.srv": tool names may hold only letters, digits, '_' and '-', so its tools are exposed as my_srv__<tool>_<hash>.*set prefix: my_srv`)
	out, errOut, code := runMcpmux(t, "tools", "--config", dir)
	if code != 0 || !regexpMatch(`(?m)^my_srv__echo_[0-9a-f]{8}\s`, out) || !why.MatchString(errOut) {
		t.Errorf("tools: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := runMcpmux(t, "check", "--config", dir); !strings.Contains(out, "\nNotes:\n") || !why.MatchString(out) {
		t.Errorf("check does not explain the names:\n%s", out)
	}
	_, p := startStdio(t, dir)
	p.logs.waitFor(t, regexp.MustCompile(`level=WARN msg="tool names with a hash: server \\"my\.srv\\": .*set prefix: my_srv`))
}

// /healthz names the invalid config files, and forgets one once it is
// fixed.
func TestHealthzNamesInvalidFiles(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/echo.yaml": fixture("echo", "echo"),
		"tool/bad.yaml":  "name: bad\nsesion: per-client\n",
	})
	p := startHTTP(t, dir)
	_, h := healthz(t, p)
	if len(h.InvalidFiles) != 1 || h.InvalidFiles[0].File != filepath.Join(dir, "tool", "bad.yaml") || h.InvalidFiles[0].Line != 2 ||
		!strings.Contains(h.InvalidFiles[0].Error, `did you mean "session"?`) {
		t.Errorf("/healthz invalid_files = %+v", h.InvalidFiles)
	}
	if err := os.WriteFile(filepath.Join(dir, "tool", "bad.yaml"), []byte(fixture("bad", "echo")), 0o644); err != nil {
		t.Fatal(err)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="config reloaded".* invalid_files=0`))
	if _, h := healthz(t, p); len(h.InvalidFiles) != 0 {
		t.Errorf("/healthz invalid_files after the fix = %+v", h.InvalidFiles)
	}
}

// A child's slog lines are records of mcpmux's log, not messages quoting
// them; a server reporting mcpmux's refusal of its roots request (nobody
// to ask while no call runs: over HTTP, where no client is the one, see
// docs/protocol.md) is debug, not news.
func TestChildLogLines(t *testing.T) {
	t.Parallel()
	workspace := t.TempDir()
	dir := writeConfig(t, map[string]string{
		"tool/fetch.yaml":      "tool_command: mcpmux\nargs: [fetch-server]\n",
		"tool/filesystem.yaml": npmServer(t, "filesystem", "mcp-server-filesystem", workspace),
	})
	p := startHTTP(t, dir)
	p.logs.waitFor(t, regexp.MustCompile(`level=INFO msg="fetch server ready on stdio" server=fetch stream=stderr timeout=30s `))
	p.logs.waitFor(t, regexp.MustCompile(`level=DEBUG msg="Failed to request initial roots from client: .*mcpmux could not forward roots/list to a client`))
	p.logs.waitFor(t, regexp.MustCompile(`msg="servers started" up=2`))
	if m := regexp.MustCompile(`.*(msg="time=|level=INFO msg="Failed to request).*`).FindString(p.logs.String()); m != "" {
		t.Errorf("logged:\n%s", m)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
