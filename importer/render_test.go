package importer

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/config"
)

func TestRender(t *testing.T) {
	res := parseFile(t, "vscode-mcp.json", &Options{WorkspaceFolder: "/home/bob/proj"})
	gh := byName(t, res)["github"]
	got, err := Render(gh, "/home/bob/proj/.vscode/mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	want := `# imported from /home/bob/proj/.vscode/mcp.json by mcpmux import
name: github
url: https://api.githubcopilot.com/mcp/
headers:
  Authorization: "Bearer ${oc.env:GITHUB_TOKEN}" # from VS Code input "github-token" (GitHub Personal Access Token), which mcpmux cannot prompt for: set GITHUB_TOKEN in its environment
`
	if string(got) != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}

	res = parseFile(t, "claude_desktop_config.json", nil)
	got, err = Render(byName(t, res)["Weather-Tools-python"], "claude_desktop_config.json")
	if err != nil {
		t.Fatal(err)
	}
	want = `# imported from claude_desktop_config.json by mcpmux import
# renamed from "Weather Tools (python)": mcpmux names use letters, digits, '_', '.', '-', unique ignoring case
name: Weather-Tools-python
enabled: false
tool_command: /Users/alice/.venvs/weather/bin/python
args: ["-m", "weather_mcp.server", "--units", "metric"]
env:
  CACHE_TTL: "300"
  LOG_LEVEL: debug
  OFFLINE: "false"
  OPENWEATHER_API_KEY: owm-fake-secret-5678
`
	if string(got) != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
}

// TestRoundTrip checks the promise of the importer: every file it writes
// loads with config.ParseServer, to the values it meant to write.
func TestRoundTrip(t *testing.T) {
	// Any variable resolves, to a value that shows which one it was.
	lookup := func(name string) (string, bool) { return "<" + name + ">", true }
	expand := func(s string) string {
		v, err := config.Expand(s, lookup)
		if err != nil {
			t.Fatalf("Expand(%q): %v", s, err)
		}
		return v
	}
	tricky := `{"mcpServers": {"tricky": {"command": "sh", "args": ["-c", "echo \"$HOME\" # not a comment", "multi\nline", "", "yes", "null", "~", "- dash", "key: value", "'single'", "[x]", "{y}", "${not a ref}"],
		"env": {"EMPTY": "", "NUM": "0123", "FLOAT": "1e3", "BOOL": "on", "COLON": "a: b", "HASH": "#x", "BACKSLASH": "C:\\path\\", "UNICODE": "naïve ☃", "LITERAL": "pa${ss}word"}}}}`
	sources := map[string][]byte{"tricky": []byte(tricky)}
	for _, f := range []string{"claude_desktop_config.json", "cursor-mcp.json", "vscode-mcp.json"} {
		sources[f] = nil
	}
	for src, data := range sources {
		var res *Result
		if data == nil {
			res = parseFile(t, src, &Options{WorkspaceFolder: "/home/bob/proj"})
		} else {
			var err error
			if res, err = Parse(data, nil); err != nil {
				t.Fatal(err)
			}
		}
		if len(res.Entries) == 0 {
			t.Fatalf("%s: no entries", src)
		}
		for _, e := range res.Entries {
			out, err := Render(e, src)
			if err != nil {
				t.Fatal(err)
			}
			path := "tool/" + e.Server.Name + ".yaml"
			got, ferr := config.ParseServer(path, out, lookup)
			if ferr != nil {
				t.Errorf("%s: %s does not load: %v\n%s", src, path, ferr, out)
				continue
			}
			w := e.Server
			switch {
			case got.Name != w.Name, got.Type != w.Type, got.IsEnabled() != w.IsEnabled(),
				got.Command != expand(w.Command), got.URL != expand(w.URL), got.Cwd != expand(w.Cwd):
				t.Errorf("%s: %s loads as %+v, want %+v", src, path, got, w)
			}
			if !slices.Equal(got.Args, mapSlice(w.Args, expand)) {
				t.Errorf("%s: %s args = %q, want %q\n%s", src, path, got.Args, w.Args, out)
			}
			if !maps.Equal(got.Env, mapValues(w.Env, expand)) || !maps.Equal(got.Headers, mapValues(w.Headers, expand)) {
				t.Errorf("%s: %s env/headers differ\n%s", src, path, out)
			}
			if !strings.HasPrefix(string(out), "# imported from "+src+" by mcpmux import\n") {
				t.Errorf("%s: %s lacks the header comment", src, path)
			}
		}
	}
}

func TestNothingSecretOutsideTheFiles(t *testing.T) {
	for _, f := range []string{"claude_desktop_config.json", "cursor-mcp.json", "vscode-mcp.json"} {
		res := parseFile(t, f, nil)
		var said []string
		said = append(said, res.Warnings...)
		for _, e := range append(res.Invalid, res.Ignored...) {
			said = append(said, e.Error())
		}
		for _, e := range res.Entries {
			for _, n := range e.Notes {
				said = append(said, n.String())
			}
		}
		for _, s := range said {
			for _, secret := range secrets {
				if strings.Contains(s, secret) {
					t.Errorf("%s: %q shows a secret", f, s)
				}
			}
		}
	}
}

func mapSlice(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

func mapValues(in map[string]string, f func(string) string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = f(v)
	}
	return out
}
