package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

func env(vars map[string]string) LookupFunc {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestExpand(t *testing.T) {
	lookup := env(map[string]string{"KEY": "secret", "EMPTY": "", "URL": "https://x"})
	tests := []struct {
		in, want string
		err      string
	}{
		{in: "plain", want: "plain"},
		{in: "${oc.env:KEY}", want: "secret"},
		{in: "${oc.env:MISSING,fallback}", want: "fallback"},
		{in: "${oc.env:MISSING,}", want: ""},
		{in: "${oc.env:MISSING, 'quoted, with comma'}", want: "quoted, with comma"},
		{in: "${oc.env:OPENAI_BASE_URL,https://api.openai.com/v1}", want: "https://api.openai.com/v1"},
		{in: "${oc.env:EMPTY,default}", want: ""}, // set but empty wins, as in OmegaConf
		{in: "${env:KEY}", want: "secret"},
		{in: "${env:MISSING,d}", want: "d"},
		{in: "${KEY}", want: "secret"},
		{in: "${MISSING:-d}", want: "d"},
		{in: "Bearer ${env:KEY} and ${URL}/mcp", want: "Bearer secret and https://x/mcp"},
		{in: `\${KEY}`, want: "${KEY}"},
		{in: "$KEY stays", want: "$KEY stays"},
		{in: "${oc.env:MISSING}", err: "MISSING is not set"},
		{in: "${MISSING}", err: "MISSING is not set"},
		{in: "${oc.decode:x}", err: `unknown resolver "oc.decode"`},
		{in: "${not a name}", err: "invalid variable name"},
		{in: "${KEY", err: "unterminated"},
	}
	for _, tt := range tests {
		got, err := Expand(tt.in, lookup)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Expand(%q) = %q, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	var mv *MissingVarError
	if _, err := Expand("${oc.env:NOPE}", lookup); !errors.As(err, &mv) || mv.Name != "NOPE" {
		t.Errorf("missing variable error = %v, want a *MissingVarError naming NOPE", err)
	}
}

// MiroFlow's tool configs, in their shapes: Hydra-style ${oc.env:...},
// comments inside env, empty env, unquoted scalars, type/url/headers.
var miroflowShaped = map[string]string{
	"tool/tool-searching.yaml": `name: "tool-searching"
tool_command: "python"
args:
  - "-m"
  - "src.tool.mcp_servers.searching_mcp_server"
env:
# Search API keys - loaded from the .env file at runtime
  SERPER_API_KEY: "${oc.env:SERPER_API_KEY}"
  JINA_API_KEY: "${oc.env:JINA_API_KEY,}"
  REMOVE_SNIPPETS: "${oc.env:REMOVE_SNIPPETS,false}"
`,
	"tool/tool-code.yaml": `name: "tool-code"
tool_command: "python"
args:
  - "-m"
  - "src.tool.mcp_servers.python_server"
env:
  E2B_API_KEY: "${oc.env:E2B_API_KEY}"
  LOGS_DIR: "./logs"
  DEFAULT_TIMEOUT: 1800
`,
	"tool/tool-markitdown.yaml": `name: "tool-markitdown"
tool_command: "markitdown-mcp"`,
	"tool/tool-browser.yaml": `name: "tool-browser"
tool_command: "npx"
args:
  - "@playwright/mcp@latest"
env:
`,
	"tool/tool-docs.yaml": `name: "tool-docs"
type: "http"
url: "https://docs.example.com/mcp"
headers:
  DOCS_API_KEY: "${oc.env:DOCS_API_KEY}"
env:
`,
}

func TestLoadMiroFlowShapedFiles(t *testing.T) {
	dir := testkit.WriteDir(t, miroflowShaped)
	lookup := env(map[string]string{"SERPER_API_KEY": "s", "E2B_API_KEY": "e", "DOCS_API_KEY": "d"})
	snap, err := Load(dir, &Options{Lookup: lookup})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) > 0 {
		t.Fatalf("errors: %v", snap.Errors)
	}
	var names []string
	for _, s := range snap.Servers {
		names = append(names, s.Name)
	}
	if want := []string{"tool-browser", "tool-code", "tool-docs", "tool-markitdown", "tool-searching"}; !slices.Equal(names, want) {
		t.Fatalf("servers = %v, want %v", names, want)
	}
	s := snap.Server("tool-searching")
	if s.Command != "python" || !slices.Equal(s.Args, []string{"-m", "src.tool.mcp_servers.searching_mcp_server"}) {
		t.Errorf("command = %q %q", s.Command, s.Args)
	}
	if s.Env["SERPER_API_KEY"] != "s" || s.Env["JINA_API_KEY"] != "" || s.Env["REMOVE_SNIPPETS"] != "false" {
		t.Errorf("env = %v", s.Env)
	}
	if got := snap.Server("tool-code").Env["DEFAULT_TIMEOUT"]; got != "1800" {
		t.Errorf("unquoted number in env = %q, want 1800", got)
	}
	docs := snap.Server("tool-docs")
	if docs.Type != TransportStreamable || docs.URL != "https://docs.example.com/mcp" || docs.Headers["DOCS_API_KEY"] != "d" {
		t.Errorf("http server = %+v", docs)
	}
	for _, srv := range snap.Servers {
		if srv.Session != SessionAuto || srv.NamePrefix() != srv.Name || srv.CallTimeout("x", 0) != DefaultTimeout {
			t.Errorf("%s: defaults session=%q prefix=%q timeout=%v", srv.Name, srv.Session, srv.NamePrefix(), srv.CallTimeout("x", 0))
		}
	}
}

func TestLoadReportsBadFilesAndKeepsTheRest(t *testing.T) {
	files := map[string]string{
		"tool/good.yaml":        "tool_command: echo\n",
		"tool/missing-var.yaml": "name: mv\ntool_command: x\nenv:\n  # a comment\n  KEY: \"${oc.env:NOT_SET_ANYWHERE}\"\n",
		"tool/unknown-key.yaml": "name: uk\ntool_command: x\ntool_comand: typo\n",
		"tool/bad-yaml.yaml":    "name: by\n  tool_command: x\n",
		"tool/bad-type.yaml":    "name: bt\ntool_command: x\nargs:\n  - ok\n  - {nested: map}\n",
		"tool/no-command.yaml":  "name: nc\nenv: {A: b}\n",
		"tool/both.yaml":        "name: both\ntool_command: x\nurl: http://localhost/mcp\n",
		"tool/bad-url.yaml":     "name: bu\nurl: ftp://x\n",
		"tool/bad-session.yaml": "name: bs\ntool_command: x\nsession: sometimes\n",
		"tool/bad-timeout.yaml": "name: bd\ntool_command: x\ntimeout: forever\n",
		"tool/zz-dup.yaml":      "name: good\ntool_command: y\n",
		"tool/.hidden.yaml":     "garbage: [",
		"tool/notes.txt":        "not yaml at all",
	}
	snap, err := Load(testkit.WriteDir(t, files), &Options{Lookup: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Servers) != 1 || snap.Servers[0].Name != "good" {
		t.Fatalf("servers = %v, want only good", snap.Servers)
	}
	want := map[string]struct {
		line int
		text string
	}{
		"missing-var.yaml": {5, "env.KEY: environment variable NOT_SET_ANYWHERE is not set"},
		"unknown-key.yaml": {3, `unknown field "tool_comand"`},
		"bad-yaml.yaml":    {2, "invalid YAML"},
		"bad-type.yaml":    {5, "args[1]: expected type 'string'"},
		"no-command.yaml":  {0, "tool_command: missing"},
		"both.yaml":        {2, "set either tool_command or url"},
		"bad-url.yaml":     {2, "not an http(s) URL"},
		"bad-session.yaml": {3, `unknown session mode "sometimes"`},
		"bad-timeout.yaml": {3, `"forever" is not a duration`},
		"zz-dup.yaml":      {1, `server "good" is already defined`},
	}
	if len(snap.Errors) != len(want) {
		t.Errorf("got %d errors, want %d: %v", len(snap.Errors), len(want), snap.Errors)
	}
	for _, fe := range snap.Errors {
		w, ok := want[filepath.Base(fe.File)]
		if !ok {
			t.Errorf("unexpected error %v", fe)
			continue
		}
		if !strings.Contains(fe.Error(), w.text) {
			t.Errorf("%s: %q does not contain %q", filepath.Base(fe.File), fe.Error(), w.text)
		}
		if w.line != 0 && fe.Line != w.line {
			t.Errorf("%s: line %d, want %d (%v)", filepath.Base(fe.File), fe.Line, w.line, fe)
		}
	}
}

func TestSettings(t *testing.T) {
	dir := testkit.WriteDir(t, map[string]string{
		"mcpmux.yaml": `separator: "--"
timeout: 30m
tool_blacklist:
  - ["tool-code", "download_file_from_sandbox_to_local"]
profiles:
  browsing-agent:
    tool_config: [tool-searching, playwright]
    tool_blacklist: [["tool-searching", "google_search"]]
`,
		"tool/playwright.yaml": "tool_command: npx\nargs: [\"@playwright/mcp\"]\ntool_timeouts: {browser_navigate: 2m}\n",
	})
	snap, err := Load(dir, nil)
	if err != nil || len(snap.Errors) > 0 {
		t.Fatal(err, snap.Errors)
	}
	s := snap.Settings
	if s.Separator != "--" || s.Timeout != 30*time.Minute || s.ConnectTimeout != DefaultConnectTimeout {
		t.Errorf("settings = %+v", s)
	}
	if len(s.ToolBlacklist) != 1 || s.ToolBlacklist[0][1] != "download_file_from_sandbox_to_local" {
		t.Errorf("blacklist = %v", s.ToolBlacklist)
	}
	p := s.Profiles["browsing-agent"]
	if p == nil || !slices.Equal(p.ToolConfig, []string{"tool-searching", "playwright"}) || len(p.ToolBlacklist) != 1 {
		t.Errorf("profile = %+v", p)
	}
	pw := snap.Server("playwright")
	if pw == nil || !pw.PerClient() {
		t.Fatalf("a server named playwright must default to per-client sessions: %+v", pw)
	}
	if pw.CallTimeout("browser_navigate", s.Timeout) != 2*time.Minute || pw.CallTimeout("other", s.Timeout) != 30*time.Minute {
		t.Errorf("timeouts: %v %v", pw.CallTimeout("browser_navigate", s.Timeout), pw.CallTimeout("other", s.Timeout))
	}
}

func TestBrokenSettingsFileKeepsDefaults(t *testing.T) {
	dir := testkit.WriteDir(t, map[string]string{
		"mcpmux.yaml":     "tool_blacklist: [[\"only-one\"]]\n",
		"tool/a.yaml":     "tool_command: x\n",
		"tool/b.yml":      "tool_command: y\nprefix: \"\"\n",
		"tool/off.yaml":   "tool_command: z\nenabled: false\n",
		"tool/remote.yml": "url: http://127.0.0.1:1/mcp\ntype: sse\n",
	})
	snap, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) != 1 || !strings.Contains(snap.Errors[0].Error(), "tool_blacklist") {
		t.Errorf("errors = %v, want the blacklist entry", snap.Errors)
	}
	if snap.Settings.Separator != DefaultSeparator {
		t.Errorf("settings not defaulted: %+v", snap.Settings)
	}
	if len(snap.Servers) != 3 || len(snap.Disabled) != 1 {
		t.Errorf("servers %v disabled %v", snap.Servers, snap.Disabled)
	}
	if b := snap.Server("b"); b == nil || b.NamePrefix() != "" {
		t.Errorf("prefix \"\" must expose bare names: %+v", b)
	}
	if r := snap.Server("remote"); r == nil || r.Type != TransportSSE || !r.IsRemote() {
		t.Errorf("remote = %+v", r)
	}
}

func TestHashIgnoresCosmeticEdits(t *testing.T) {
	a, ferr := ParseServer("a.yaml", []byte("name: a\ntool_command: x\nargs: [1, 2]\n"), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	b, _ := ParseServer("a.yaml", []byte("# comment\nargs:\n  - 1\n  - 2\ntool_command: \"x\"\nname: a\n"), nil)
	c, _ := ParseServer("a.yaml", []byte("name: a\ntool_command: x\nargs: [1, 3]\n"), nil)
	if a.Hash != b.Hash {
		t.Error("a comment or key order changed the hash")
	}
	if a.Hash == c.Hash {
		t.Error("a changed argument kept the hash")
	}
}

func TestMissingDirectory(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope"), nil); err == nil {
		t.Error("loading a missing directory succeeded")
	}
	snap, err := Load(t.TempDir(), nil) // exists, no tool/ yet
	if err != nil || len(snap.Servers) != 0 {
		t.Errorf("empty dir: %v, %v", snap, err)
	}
}

func TestSettingsValidation(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"connect_timeout: -1s\n", "connect_timeout: must not be negative"},
		{"timeout: -5\n", "timeout: must not be negative"},
		{"rewrite: [null]\n", "rewrite.0: empty rule"},
		{"separator: \"::\"\n", "separator"},
		{"profiles:\n  \"bad name\": {}\n", "not a valid profile name"},
		{"meta_tools:\n  - status\n  - stats\n", "mcpmux.yaml:3: meta_tools.1: unknown meta tool \"stats\" (status, find_tools, call_tool)"},
		{"meta_tools: [call_tool, call_tool]\n", "meta_tools.1: \"call_tool\" is listed twice"},
		{"catalog: lazy\nalways: [\"[fetch\"]\n", "always.0: \"[fetch\": syntax error in pattern"},
		{"profiles: {a: {catalog: later}}\n", `profiles.a.catalog: "later" is not a catalog mode (eager, lazy)`},
		{"catalog: lazy\ntool_blacklist: [[mcpmux, find_tools]]\n", "tool_blacklist: the default profile lists tools lazily (catalog: lazy) and needs mcpmux__find_tools"},
		{"profiles: {a: {catalog: lazy, tool_blacklist: [[mcpmux, call_tool]]}}\n", "profiles.a.tool_blacklist: profile a lists tools lazily"},
	} {
		_, ferr := ParseSettings("mcpmux.yaml", []byte(tt.yaml), nil)
		if ferr == nil || !strings.Contains(ferr.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.yaml, ferr, tt.want)
		}
	}
}

func TestCatalogOfInheritsTheGlobalMode(t *testing.T) {
	_, ferr := ParseSettings("mcpmux.yaml", []byte(`catalog: lazy
always: ["fs__*"]
tool_blacklist: [[mcpmux, find_tools]]
profiles:
  own: {always: [fetch]}
  eager: {catalog: eager}
  none: {always: []}
`), nil)
	if ferr == nil {
		t.Fatal("a lazy default profile without find_tools was accepted")
	}
	s, ferr := ParseSettings("mcpmux.yaml", []byte(`catalog: lazy
always: ["fs__*"]
profiles:
  own: {always: [fetch]}
  eager: {catalog: eager}
  none: {always: []}
`), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	for _, c := range []struct {
		profile string
		lazy    bool
		always  []string
	}{{"", true, []string{"fs__*"}}, {"own", true, []string{"fetch"}}, {"eager", false, []string{"fs__*"}}, {"none", true, []string{}}, {"missing", true, []string{"fs__*"}}} {
		lazy, always := s.CatalogOf(c.profile)
		if lazy != c.lazy || !slices.Equal(always, c.always) {
			t.Errorf("CatalogOf(%q) = %v, %q; want %v, %q", c.profile, lazy, always, c.lazy, c.always)
		}
	}
}

// What the loader checks of journal and replay beyond the schema: sizes,
// and a journal that would append to the journal it replays.
func TestRecordingSettings(t *testing.T) {
	for doc, want := range map[string]string{
		"journal: {dir: j, max_bytes: 10}\n":                 "journal.max_bytes: 10B is too small",
		"journal: {dir: runs}\nreplay: {from: ./runs/}\n":    `replay.from: "./runs/" is also journal.dir`,
		"replay: {from: r, catalog: recorded, miss: call}\n": `replay.miss: "call" needs the servers`,
		"replay: {from: r, miss: later}\n":                   `replay.miss: unknown value "later" (error, call, record)`,
		"journal: {max_bytes: 1MiB}\n":                       "journal.dir: missing",
	} {
		_, ferr := ParseSettings("mcpmux.yaml", []byte(doc), env(nil))
		if ferr == nil || !strings.Contains(ferr.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", doc, ferr, want)
		}
	}
	s, ferr := ParseSettings("mcpmux.yaml", []byte("journal: {dir: j}\nreplay: {from: r}\n"), env(nil))
	if ferr != nil {
		t.Fatal(ferr)
	}
	if s.Journal.MaxBytes != DefaultJournalMaxBytes || s.Replay.Miss != ReplayMissError || s.Replay.Catalog != ReplayCatalogLive || s.ReplaysCatalog() {
		t.Errorf("defaults: journal %+v, replay %+v", s.Journal, s.Replay)
	}
}

// Both directories are relative to the config directory.
func TestRecordingDirsAreRelativeToTheConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SettingsFile), []byte("journal: {dir: runs/today}\nreplay: {from: /abs/yesterday, catalog: recorded}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := Load(dir, &Options{Lookup: env(nil)})
	if err != nil || len(snap.Errors) > 0 {
		t.Fatal(err, snap.Errors)
	}
	if got := snap.Settings.Journal.Dir; got != filepath.Join(dir, "runs/today") {
		t.Errorf("journal.dir = %q", got)
	}
	if got := snap.Settings.Replay.From; got != "/abs/yesterday" || !snap.Settings.ReplaysCatalog() {
		t.Errorf("replay = %+v", snap.Settings.Replay)
	}
}

// Offline replay starts no server: a server file naming an unset variable
// is no error then (it is when the servers run).
func TestOfflineReplayNeedsNoServerVariables(t *testing.T) {
	for _, tc := range []struct {
		catalog         string
		errors, offline int
	}{{"recorded", 0, 1}, {"live", 1, 0}} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, SettingsFile), []byte("replay: {from: runs, catalog: "+tc.catalog+"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, ToolDir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ToolDir, "search.yaml"), []byte("tool_command: x\nenv: {KEY: \"${oc.env:SERPER_API_KEY}\"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		snap, err := Load(dir, &Options{Lookup: env(nil)})
		if err != nil || len(snap.Errors) != tc.errors || len(snap.Offline) != tc.offline {
			t.Errorf("catalog %s: %v, errors %v, offline %v", tc.catalog, err, snap.Errors, snap.Offline)
		}
	}
}

// protocol: takes the eras as written, quoted or not (YAML reads an
// unquoted 2025-11-25 as a date), defaults to auto, and refuses others.
func TestServerProtocol(t *testing.T) {
	for _, c := range []struct{ yaml, want, err string }{
		{"", ProtocolAuto, ""},
		{"protocol: auto\n", ProtocolAuto, ""},
		{"protocol: 2025-11-25\n", Protocol2025, ""},
		{"protocol: 2026-07-28\n", Protocol2026, ""},
		{"protocol: \"2026-07-28\"\n", Protocol2026, ""},
		{"protocol: 2024-11-05\n", "", `unknown protocol "2024-11-05"`},
		{"protocol: 2026-07-28\ntype: sse\nurl: http://x/sse\n", "", "no legacy SSE transport"},
	} {
		body := "name: x\n" + c.yaml
		if !strings.Contains(c.yaml, "url:") {
			body += "tool_command: x\n"
		}
		s, err := ParseServer("x.yaml", []byte(body), nil)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.yaml, err, c.err)
			}
		case err != nil:
			t.Errorf("%q: %v", c.yaml, err)
		case s.Protocol != c.want:
			t.Errorf("%q: protocol %q, want %q", c.yaml, s.Protocol, c.want)
		}
	}
}
