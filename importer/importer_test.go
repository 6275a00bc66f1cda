package importer

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/config"
)

// secrets are the made-up credentials in testdata: they must reach the
// rendered files and nothing else.
var secrets = []string{
	"ghp_FAKE0example0token0000000000000000",
	"BSAfake-brave-key-1234",
	"owm-fake-secret-5678",
	"lin_api_FAKEsecret9012",
	"pg-fake-password",
}

func parseFile(t *testing.T, name string, opts *Options) *Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(data, opts)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return res
}

func byName(t *testing.T, res *Result) map[string]*Entry {
	t.Helper()
	m := map[string]*Entry{}
	for _, e := range res.Entries {
		m[e.Server.Name] = e
	}
	return m
}

func names(res *Result) []string {
	var out []string
	for _, e := range res.Entries {
		out = append(out, e.Server.Name)
	}
	return out
}

func TestParseClaudeDesktop(t *testing.T) {
	res := parseFile(t, "claude_desktop_config.json", nil)
	if res.Format != FormatMCPServers {
		t.Errorf("format = %q", res.Format)
	}
	want := []string{"Weather-Tools-python", "asana", "brave-search", "filesystem", "github", "linear", "mcp-server-time"}
	if got := names(res); !slices.Equal(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	if len(res.Invalid) != 0 {
		t.Errorf("invalid = %v", res.Invalid)
	}
	if len(res.Ignored) != 1 || res.Ignored[0].Source != "mcpmux" {
		t.Errorf("ignored = %v, want the mcpmux entry (it would start itself)", res.Ignored)
	}
	m := byName(t, res)

	gh := m["github"].Server
	if gh.Type != "stdio" || gh.Command != "npx" || !slices.Equal(gh.Args, []string{"-y", "@modelcontextprotocol/server-github"}) {
		t.Errorf("github = %+v", gh)
	}
	if gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != secrets[0] {
		t.Errorf("github env not kept: %v", slices.Collect(maps.Keys(gh.Env)))
	}

	w := m["Weather-Tools-python"]
	if w.Server.IsEnabled() {
		t.Error(`"disabled": true did not become enabled: false`)
	}
	if w.Server.Env["CACHE_TTL"] != "300" || w.Server.Env["OFFLINE"] != "false" {
		t.Errorf("number and bool env values = %q, %q; want strings", w.Server.Env["CACHE_TTL"], w.Server.Env["OFFLINE"])
	}
	if len(w.Notes) == 0 || !strings.Contains(w.Notes[0].Text, `renamed from "Weather Tools (python)"`) {
		t.Errorf("notes = %v, want a rename note first", w.Notes)
	}

	lin := m["linear"].Server
	if lin.Type != "http" || lin.URL != "https://mcp.linear.app/mcp" || lin.Headers["Authorization"] != "Bearer "+secrets[3] {
		t.Errorf("linear = type %q url %q", lin.Type, lin.URL)
	}
	if as := m["asana"].Server; as.Type != "sse" || as.URL != "https://mcp.asana.com/sse" {
		t.Errorf("asana = %+v", as)
	}
}

func TestParseCursor(t *testing.T) {
	res := parseFile(t, "cursor-mcp.json", &Options{WorkspaceFolder: "/home/bob/proj"})
	m := byName(t, res)
	if len(m) != 5 {
		t.Fatalf("entries = %v", names(res))
	}
	if s := m["sentry"].Server; s.Type != "http" {
		t.Errorf(`"streamable-http" became %q, want http`, s.Type)
	}
	if got := m["context7"].Server.Headers["CONTEXT7_API_KEY"]; got != "${env:CONTEXT7_API_KEY}" {
		t.Errorf("${env:...} header = %q, want it unchanged", got)
	}
	pt := m["project-tools"].Server
	if pt.Args[0] != "/home/bob/proj/tools/mcp_server.py" || pt.Env["PROJECT_ROOT"] != "/home/bob/proj" {
		t.Errorf("${workspaceFolder} not replaced: args %q env %q", pt.Args, pt.Env["PROJECT_ROOT"])
	}
	if pt.Env["PROJECT_API_TOKEN"] != "${env:PROJECT_API_TOKEN}" {
		t.Errorf("env ref = %q", pt.Env["PROJECT_API_TOKEN"])
	}
	if n := m["puppeteer"].Notes; len(n) != 1 || !strings.Contains(n[0].Text, "autoApprove") {
		t.Errorf("puppeteer notes = %v, want one naming autoApprove", n)
	}
	if got := m["puppeteer"].Server.Env["PUPPETEER_LAUNCH_OPTIONS"]; !strings.HasPrefix(got, `{ "headless"`) {
		t.Errorf("JSON-valued env = %q", got)
	}

	// Without a known workspace the reference becomes an env reference.
	res = parseFile(t, "cursor-mcp.json", nil)
	pt = byName(t, res)["project-tools"].Server
	if pt.Env["PROJECT_ROOT"] != "${oc.env:WORKSPACE_FOLDER}" {
		t.Errorf("unknown workspace: %q", pt.Env["PROJECT_ROOT"])
	}
}

func TestParseVSCode(t *testing.T) {
	res := parseFile(t, "vscode-mcp.json", &Options{WorkspaceFolder: "/home/bob/proj"})
	if res.Format != FormatVSCode {
		t.Errorf("format = %q", res.Format)
	}
	want := []string{"fetch", "github", "legacy-events", "memory", "my-python-server", "perplexity", "playwright"}
	if got := names(res); !slices.Equal(got, want) {
		t.Fatalf("names = %v, want %v (comments and trailing commas must be accepted)", got, want)
	}
	m := byName(t, res)

	gh := m["github"]
	if gh.Server.Headers["Authorization"] != "Bearer ${oc.env:GITHUB_TOKEN}" {
		t.Errorf("${input:github-token} became %q", gh.Server.Headers["Authorization"])
	}
	if len(gh.Notes) != 1 || gh.Notes[0].Field != "headers" || gh.Notes[0].Key != "Authorization" ||
		!strings.Contains(gh.Notes[0].Text, "GitHub Personal Access Token") || !strings.Contains(gh.Notes[0].Text, "set GITHUB_TOKEN") {
		t.Errorf("github notes = %v", gh.Notes)
	}
	if got := m["perplexity"].Server.Env["PERPLEXITY_API_KEY"]; got != "${oc.env:PERPLEXITY_KEY}" {
		t.Errorf("env input = %q", got)
	}
	if s := m["fetch"].Server; s.Type != "stdio" || s.Command != "uvx" {
		t.Errorf("fetch = %+v", s)
	}
	if s := m["legacy-events"].Server; s.Type != "sse" {
		t.Errorf("legacy-events type = %q", s.Type)
	}
	pw := m["playwright"]
	if _, ok := pw.Server.Env["DEBUG"]; ok || len(pw.Notes) != 1 || pw.Notes[0].Key != "DEBUG" {
		t.Errorf("null env value: env %v notes %v", pw.Server.Env, pw.Notes)
	}
	py := m["my-python-server"]
	if py.Server.Command != "${env:HOME}/.local/bin/uv" {
		t.Errorf("${userHome} became %q", py.Server.Command)
	}
	if py.Server.Env["API_BASE"] != "https://internal.example.com/api" {
		t.Errorf("value before a // comment = %q", py.Server.Env["API_BASE"])
	}
	if !slices.ContainsFunc(py.Notes, func(n Note) bool { return strings.Contains(n.Text, "envFile") }) {
		t.Errorf("notes = %v, want envFile reported", py.Notes)
	}
}

func TestParseByteOrderMark(t *testing.T) {
	res, err := Parse([]byte("\xef\xbb\xbf{\"mcpServers\": {\"f\": {\"command\": \"uvx\"}}}"), nil)
	if err != nil || len(res.Entries) != 1 {
		t.Fatalf("file with a BOM: %v", err)
	}
}

func TestParseSettingsJSONShape(t *testing.T) {
	res, err := Parse([]byte(`{"editor.fontSize": 13, "mcp": {"servers": {"f": {"command": "uvx", "args": ["mcp-server-fetch"]}}}}`), nil)
	if err != nil || res.Format != FormatVSCode || len(res.Entries) != 1 {
		t.Fatalf("settings.json shape: %v, %+v", err, res)
	}
}

func TestParseInvalidEntries(t *testing.T) {
	data := `{"mcpServers": {
		"ok":        {"command": "echo"},
		"nothing":   {"env": {"A": "b"}},
		"both":      {"command": "x", "url": "https://h/mcp"},
		"ws":        {"type": "websocket", "url": "wss://h/mcp"},
		"ftp":       {"url": "ftp://user:hunter2@h/x"},
		"no-url":    {"type": "sse"},
		"bad-args":  {"command": "x", "args": [{"nested": true}]},
		"bad-env":   {"command": "x", "env": ["A=hunter2"]},
		"not-obj":   "npx server",
		"bad-flag":  {"command": "x", "disabled": "yes"},
		"stdio-url": {"type": "stdio", "url": "https://h/mcp"}
	}}`
	res, err := Parse([]byte(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("entries = %v, want only ok", got)
	}
	want := map[string]string{
		"nothing":   "no command",
		"both":      "both a command and a url",
		"ws":        `type "websocket" is not supported`,
		"ftp":       "not an http(s) URL",
		"no-url":    "needs a url",
		"bad-args":  "args: item 0 is not a string",
		"bad-env":   "env: want an object",
		"not-obj":   "not a JSON object",
		"bad-flag":  "disabled: want true or false",
		"stdio-url": "has no command",
	}
	if len(res.Invalid) != len(want) {
		t.Errorf("invalid = %v", res.Invalid)
	}
	for _, e := range res.Invalid {
		if w, ok := want[e.Source]; !ok || !strings.Contains(e.Error(), w) {
			t.Errorf("%s: %v, want %q", e.Source, e, w)
		}
		if strings.Contains(e.Error(), "hunter2") {
			t.Errorf("%s: error shows a value: %v", e.Source, e)
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "the file is empty"},
		{"{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {}\n  }\n}", "invalid JSON at line 4, column 5"},
		{`{"mcpServers": {"a": {"command": "x"}}`, "invalid JSON"},
		{`[{"command": "x"}]`, "top level is a JSON array"},
		{`{"globalShortcut": "Ctrl+Space"}`, `no server list found`},
		{`{"mcpServers": []}`, `"mcpServers" is not an object`},
		{`{"mcpServers": {}, "servers": {}}`, "both"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.in), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestSanitizeName(t *testing.T) {
	tests := map[string]string{
		"github":                 "github",
		"brave-search":           "brave-search",
		"my.python_server":       "my.python_server",
		"Weather Tools (python)": "Weather-Tools-python",
		"@scope/server":          "scope-server",
		"  spaced  ":             "spaced",
		"_hidden":                "hidden",
		"ünïcødé":                "n-c-d",
		"日本語":                    "server",
		"":                       "server",
		strings.Repeat("a", 70):  strings.Repeat("a", 64),
	}
	for in, want := range tests {
		got := SanitizeName(in)
		if got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
		if _, ferr := config.ParseServer("tool/"+got+".yaml", []byte("tool_command: x\n"), nil); ferr != nil {
			t.Errorf("SanitizeName(%q) = %q is not a valid name: %v", in, got, ferr)
		}
	}
}

func TestNamesStayUniqueIgnoringCase(t *testing.T) {
	res, err := Parse([]byte(`{"mcpServers": {"a b": {"command": "x"}, "a-b": {"command": "x"}, "A-B": {"command": "x"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res); !slices.Equal(got, []string{"A-B", "a-b-2", "a-b-3"}) {
		t.Errorf("names = %v", got)
	}
}

func TestTranslate(t *testing.T) {
	tr := &translator{inputs: map[string]input{"api-key": {ID: "api-key", Description: "The API key"}}, workspace: "/w"}
	tests := []struct {
		in, want string
		notes    int
	}{
		{"plain $HOME", "plain $HOME", 0},
		{"${env:TOKEN}", "${env:TOKEN}", 0},
		{"${oc.env:TOKEN,default}", "${oc.env:TOKEN,default}", 0},
		{"${TOKEN}", "${TOKEN}", 0},
		{"${TOKEN:-x}", "${TOKEN:-x}", 0},
		{"Bearer ${input:api-key}", "Bearer ${oc.env:API_KEY}", 1},
		{"${input:apiKey}", "${oc.env:API_KEY}", 1},
		{"${input:1st}", "${oc.env:_1ST}", 1},
		{"${userHome}/bin${pathSeparator}x", "${env:HOME}/bin/x", 0},
		{"${workspaceFolder}/a ${workspaceFolderBasename}", "/w/a w", 0},
		{"${command:pickFile}", `\${command:pickFile}`, 1},
		{"pa${ss word}", `pa\${ss word}`, 1},
		{"open ${ only", `open \${ only`, 1},
		{`already \${literal}`, `already \${literal}`, 0},
	}
	for _, tt := range tests {
		var notes []Note
		got := tr.translate(tt.in, "env", "K", &notes)
		if got != tt.want || len(notes) != tt.notes {
			t.Errorf("translate(%q) = %q with %d notes %v; want %q with %d", tt.in, got, len(notes), notes, tt.want, tt.notes)
		}
		for _, n := range notes {
			if strings.Contains(n.Text, "ss word") {
				t.Errorf("note shows a value: %q", n.Text)
			}
		}
		// Whatever comes out must be expandable by mcpmux.
		if _, err := config.Expand(got, func(string) (string, bool) { return "v", true }); err != nil {
			t.Errorf("translate(%q) = %q does not expand: %v", tt.in, got, err)
		}
	}
}

func TestStripJSONC(t *testing.T) {
	in := `{ // comment
  "url": "http://x//y", /* block
  comment */ "s": "a,}", "list": [1, 2,],
  "esc": "quote \" // not a comment",
}`
	out := string(stripJSONC([]byte(in)))
	if len(out) != len(in) || strings.Count(out, "\n") != strings.Count(in, "\n") {
		t.Fatal("stripJSONC must keep offsets and lines")
	}
	for _, keep := range []string{`"http://x//y"`, `"a,}"`, `"quote \" // not a comment"`} {
		if !strings.Contains(out, keep) {
			t.Errorf("lost %s in %s", keep, out)
		}
	}
	for _, gone := range []string{"comment */", "// comment", "2,]", "\",\n}"} {
		if strings.Contains(out, gone) {
			t.Errorf("kept %q in %s", gone, out)
		}
	}
}
