package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/config"
)

// runImport runs "mcpmux import args..." and returns its exit code and
// output.
func runImport(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(append([]string{"import"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestImportWritesLoadableFiles(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "importer", "testdata", "claude_desktop_config.json")
	code, stdout, stderr := runImport(t, src, "--config", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"wrote    " + filepath.Join(dir, "tool", "github.yaml") + "  (stdio npx; env GITHUB_PERSONAL_ACCESS_TOKEN)",
		"(http mcp.linear.app; headers Authorization)",
		"Weather-Tools-python.yaml  (stdio python; disabled;",
		`ignored  server "mcpmux": it runs mcpmux itself`,
		"7 written, 0 skipped, 0 invalid, 1 ignored",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, secret := range []string{"ghp_FAKE0", "BSAfake", "owm-fake", "lin_api_FAKE", "/Users/alice/Desktop"} {
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("output shows the value %q", secret)
		}
	}
	gh := filepath.Join(dir, "tool", "github.yaml")
	if info, err := os.Stat(gh); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("github.yaml mode = %v, %v; want 0600 (it holds a token)", info.Mode(), err)
	}
	if got := readFile(t, gh); !strings.Contains(got, "ghp_FAKE0example0token") {
		t.Errorf("github.yaml lost its env value:\n%s", got)
	}

	snap, err := config.Load(dir, &config.Options{Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) > 0 || len(snap.Servers) != 6 || len(snap.Disabled) != 1 {
		t.Errorf("loaded %d servers, %d disabled, errors %v; want 6, 1, none", len(snap.Servers), len(snap.Disabled), snap.Errors)
	}
}

func TestImportNeverOverwritesWithoutForce(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "tool")
	os.MkdirAll(tool, 0o755)
	mine := "# my own\nname: github\ntool_command: my-github\n"
	os.WriteFile(filepath.Join(tool, "github.yaml"), []byte(mine), 0o644)
	// Another file already defines "asana": a second one would be a duplicate.
	os.WriteFile(filepath.Join(tool, "tasks.yml"), []byte("name: Asana\nurl: https://x/mcp\n"), 0o644)
	src := filepath.Join("..", "importer", "testdata", "claude_desktop_config.json")

	code, stdout, _ := runImport(t, src, "--config", dir)
	if code != 1 {
		t.Errorf("exit %d, want 1 when files were skipped", code)
	}
	if !strings.Contains(stdout, "skipped  "+filepath.Join(tool, "github.yaml")+"  (exists; --force overwrites it)") {
		t.Errorf("stdout does not report the skip:\n%s", stdout)
	}
	if !strings.Contains(stdout, `(server "asana" is already defined in `+filepath.Join(tool, "tasks.yml")+")") {
		t.Errorf("stdout does not report the duplicate name:\n%s", stdout)
	}
	if got := readFile(t, filepath.Join(tool, "github.yaml")); got != mine {
		t.Errorf("github.yaml was overwritten without --force:\n%s", got)
	}
	if !strings.Contains(stdout, "wrote    "+filepath.Join(tool, "linear.yaml")) {
		t.Errorf("the other files were not written:\n%s", stdout)
	}

	// Flags after FILE work too.
	code, stdout, _ = runImport(t, src, "--config", dir, "--force")
	if code != 1 { // asana still clashes with tasks.yml
		t.Errorf("--force: exit %d, want 1 (the duplicate stays skipped)", code)
	}
	if !strings.Contains(stdout, "wrote    "+filepath.Join(tool, "github.yaml")) {
		t.Errorf("--force did not overwrite:\n%s", stdout)
	}
	if got := readFile(t, filepath.Join(tool, "github.yaml")); !strings.HasPrefix(got, "# imported from ") || !strings.Contains(got, "tool_command: npx") {
		t.Errorf("github.yaml after --force:\n%s", got)
	}
	leftovers, _ := filepath.Glob(filepath.Join(tool, ".*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestImportVSCodeWorkspace(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755)
	data := readFile(t, filepath.Join("..", "importer", "testdata", "vscode-mcp.json"))
	src := filepath.Join(ws, ".vscode", "mcp.json")
	os.WriteFile(src, []byte(data), 0o644)
	dir := t.TempDir()
	t.Setenv("MCPMUX_CONFIG", dir) // the default --config, as for the other commands

	code, stdout, stderr := runImport(t, src)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if want := `github: headers.Authorization: from VS Code input "github-token"`; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks the input warning %q:\n%s", want, stderr)
	}
	mem := readFile(t, filepath.Join(dir, "tool", "memory.yaml"))
	if !strings.Contains(mem, "MEMORY_FILE_PATH: "+filepath.Join(ws, ".vscode", "memory.jsonl")) {
		t.Errorf("${workspaceFolder} was not the workspace:\n%s", mem)
	}
	gh := readFile(t, filepath.Join(dir, "tool", "github.yaml"))
	if !strings.Contains(gh, `Authorization: "Bearer ${oc.env:GITHUB_TOKEN}" # from VS Code input`) {
		t.Errorf("github.yaml:\n%s", gh)
	}
}

func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n    \"b\": {}\n}\n"), 0o644)
	code, _, stderr := runImport(t, bad, "--config", dir)
	if code != 1 || !strings.Contains(stderr, bad+": invalid JSON at line 4, column 5") {
		t.Errorf("bad JSON: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "tool")); err == nil {
		t.Error("a failed import created the tool directory")
	}

	code, _, stderr = runImport(t, filepath.Join(dir, "missing.json"), "--config", dir)
	if code != 1 || !strings.Contains(stderr, "reading client config") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}

	partly := filepath.Join(dir, "partly.json")
	os.WriteFile(partly, []byte(`{"mcpServers": {"ok": {"command": "echo"}, "broken": {"url": "ftp://x"}}}`), 0o644)
	code, stdout, _ := runImport(t, partly, "--config", dir)
	if code != 1 || !strings.Contains(stdout, `invalid  server "broken": url is not an http(s) URL`) || !strings.Contains(stdout, "wrote    ") {
		t.Errorf("invalid entry: exit %d, stdout:\n%s", code, stdout)
	}

	for _, args := range [][]string{{}, {"a.json", "b.json"}, {"--nope", "a.json"}} {
		if code, _, _ := runImport(t, args...); code != 2 {
			t.Errorf("import %q: exit %d, want 2", args, code)
		}
	}
}
