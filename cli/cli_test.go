package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/reaper/reapertest"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// A command that runs servers starts the child reaper as its own binary:
// this test binary.
func TestMain(m *testing.M) { reapertest.Main(m) }

// runCLI runs mcpmux's command line in-process.
func runCLI(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = Run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// --help, -h and help print the whole usage to stdout: every command, and
// every flag of serving; never the token of the environment.
func TestHelpPrintsTheWholeUsage(t *testing.T) {
	t.Setenv("MCPMUX_TOKEN", "s3cret-token-of-the-env")
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}, {"--config", "x", "--http", "127.0.0.1:1", "-h"}} {
		out, errOut, code := runCLI(args...)
		if code != 0 || errOut != "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
		for _, c := range commands {
			if name := c.name; c.run != nil && name != "serve" && !strings.Contains(out, "\n  mcpmux "+name) {
				t.Errorf("%q: usage lacks the command %q", args, name)
			}
		}
		for _, flag := range []string{"-http ADDR", "-token string", "-token-file FILE", "-config DIR", "-profile", "-allowed-origin"} {
			if !strings.Contains(out, "\n  "+flag) {
				t.Errorf("%q: usage lacks the flag %q:\n%s", args, flag, out)
			}
		}
		if strings.Contains(out, "s3cret") {
			t.Errorf("%q: usage shows MCPMUX_TOKEN:\n%s", args, out)
		}
	}
}

// Each command's -h (and help COMMAND) prints its synopsis and flags to
// stdout; a mistake prints the problem and where to look to stderr.
func TestCommandHelpAndFlagErrors(t *testing.T) {
	for _, c := range commands {
		name := c.name
		if c.run == nil || name == "serve" {
			continue
		}
		for _, args := range [][]string{{name, "-h"}, {name, "--help"}, {"help", name}} {
			out, errOut, code := runCLI(args...)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: mcpmux "+name) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
			}
		}
	}
	out, errOut, code := runCLI("check", "--frobnicate")
	if code != 2 || out != "" || errOut != "mcpmux check: flag provided but not defined: -frobnicate\nRun \"mcpmux check -h\" for the usage.\n" {
		t.Errorf("check --frobnicate: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = runCLI("--frobnicate")
	if code != 2 || out != "" || !strings.Contains(errOut, "Run \"mcpmux -h\" for the usage.") {
		t.Errorf("--frobnicate: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := runCLI("help", "frobnicate"); code != 2 || !strings.Contains(errOut, `no command "frobnicate"`) {
		t.Errorf("help frobnicate: exit %d, stderr %q", code, errOut)
	}
}

func TestVersionFlag(t *testing.T) {
	want, _, _ := runCLI("version")
	for _, flag := range []string{"--version", "-version"} {
		if out, errOut, code := runCLI(flag); code != 0 || out != want || errOut != "" {
			t.Errorf("%s: exit %d, %q, stderr %q; want %q as version prints", flag, code, out, errOut, want)
		}
	}
}

// Without a config directory, check, tools and serving say where they
// looked, why there, and what to do.
func TestMissingConfigDirSaysWhatToDo(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("MCPMUX_CONFIG", "")
	abs, _ := filepath.Abs("config")
	for _, tc := range []struct {
		args []string
		env  string
		want []string
	}{
		{[]string{"check"}, "", []string{"no config directory at " + abs + " (the default)", "--config DIR or MCPMUX_CONFIG=DIR", "mcpmux init\n"}},
		{[]string{"tools"}, "", []string{"no config directory at " + abs + " (the default)"}},
		{[]string{"check", "--config", "elsewhere"}, "", []string{"at " + filepath.Join(filepath.Dir(abs), "elsewhere") + " (from --config)", "mcpmux init --config elsewhere"}},
		{[]string{"check"}, "/nonexistent/mcpmux", []string{"at /nonexistent/mcpmux (from MCPMUX_CONFIG)", "mcpmux init --config /nonexistent/mcpmux"}},
		{[]string{"--log-format", "json"}, "", []string{`no config directory at ` + abs + ` (the default)`}},
	} {
		t.Setenv("MCPMUX_CONFIG", tc.env)
		_, errOut, code := runCLI(tc.args...)
		if code != 1 {
			t.Errorf("%q: exit %d, want 1", tc.args, code)
		}
		for _, want := range tc.want {
			if !strings.Contains(errOut, want) {
				t.Errorf("%q: stderr lacks %q:\n%s", tc.args, want, errOut)
			}
		}
		if strings.Contains(errOut, "stat ") {
			t.Errorf("%q: stderr quotes the system call:\n%s", tc.args, errOut)
		}
	}
}

// mcpmux init writes a starter config that loads without a mistake: the
// fetch engine runs, two examples wait disabled, and the schemas the files
// name for editors are there. It never overwrites a file unless --force.
func TestInitWritesAStarterConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	out, errOut, code := runCLI("init", "--config", dir)
	if code != 0 || errOut != "" {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "mcpmux check --config "+dir) {
		t.Errorf("init does not say what to run next:\n%s", out)
	}
	snap, err := config.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) > 0 {
		t.Errorf("the starter config has invalid files: %v", snap.Errors)
	}
	var running, disabled []string
	for _, s := range snap.Servers {
		running = append(running, s.Name)
	}
	for _, s := range snap.Disabled {
		disabled = append(disabled, s.Name)
	}
	if !slices.Equal(running, []string{"fetch"}) || !slices.Equal(disabled, []string{"everything", "remote"}) {
		t.Errorf("running %v, disabled %v; want fetch running, everything and remote disabled", running, disabled)
	}
	if snap.Settings.File == "" || snap.Settings.Rules().Len() == 0 {
		t.Errorf("the starter mcpmux.yaml was not read, or has no rules")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tool", "*.yaml"))
	for _, f := range append(files, filepath.Join(dir, "mcpmux.yaml")) {
		data, _ := os.ReadFile(f)
		first, _, _ := strings.Cut(string(data), "\n")
		schema := strings.TrimPrefix(first, "# yaml-language-server: $schema=")
		if schema == first {
			t.Errorf("%s names no schema for editors", f)
		} else if _, err := os.Stat(filepath.Join(filepath.Dir(f), schema)); err != nil {
			t.Errorf("%s: its schema: %v", f, err)
		}
	}

	fetch := filepath.Join(dir, "tool", "fetch.yaml")
	if err := os.WriteFile(fetch, []byte("edited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI("init", "--config", dir); code != 1 || !strings.Contains(errOut, fetch) || !strings.Contains(errOut, "--force") {
		t.Errorf("init over a config: exit %d, stderr %q", code, errOut)
	}
	if data, _ := os.ReadFile(fetch); string(data) != "edited\n" {
		t.Errorf("init without --force overwrote %s", fetch)
	}
	if _, _, code := runCLI("init", "--config", dir, "--force"); code != 0 {
		t.Errorf("init --force: exit %d", code)
	}
	if data, _ := os.ReadFile(fetch); string(data) == "edited\n" {
		t.Errorf("init --force left %s as it was", fetch)
	}
}

// Serving takes its token from --token, else from MCPMUX_TOKEN, which the
// usage never shows.
func TestServeTokenFromFlagOrEnvironment(t *testing.T) {
	t.Setenv("MCPMUX_TOKEN", "from-env")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--http", "127.0.0.1:0"}, "from-env"},
		{[]string{"--http", "127.0.0.1:0", "--token", "from-flag"}, "from-flag"},
	} {
		fs, f := newServeFlags(io.Discard, io.Discard)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if got := f.http().Token; got != c.want {
			t.Errorf("%q: token %q, want %q", c.args, got, c.want)
		}
	}
}

// Flags before the command are the command's, as in git and kubectl:
// mcpmux --config DIR tools is mcpmux tools --config DIR.
func TestFlagsBeforeTheCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--config", dir, "tools", "--json"},
		{"--config=" + dir, "--log-level", "error", "tools", "--json"},
		{"tools", "--config", dir, "--json"},
	} {
		if out, errOut, code := runCLI(args...); code != 0 || strings.TrimSpace(out) != "[]" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want the empty catalog", args, code, out, errOut)
		}
	}
	if out, _, code := runCLI("--config", dir, "check"); code != 0 || !strings.Contains(out, "0 servers") {
		t.Errorf("--config DIR check: exit %d, %q", code, out)
	}
	if out, _, code := runCLI("--config", dir, "help", "tools"); code != 0 || !strings.HasPrefix(out, "usage: mcpmux tools") {
		t.Errorf("--config DIR help tools: exit %d, %q", code, out)
	}
	// A flag the command does not take, and a command that is not one,
	// are mistakes that say so.
	if _, errOut, code := runCLI("--config", dir, "version"); code != 2 || !strings.Contains(errOut, "mcpmux version: flag provided but not defined: -config") {
		t.Errorf("--config DIR version: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := runCLI("--config", dir, "frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("--config DIR frobnicate: exit %d, stderr %q", code, errOut)
	}
}

// check's report is its last word: the log of a server that failed to
// start (its retries) comes before the table or not at all.
func TestCheckReportIsTheLastWord(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	// broken fails in a second, and again while check prints its table:
	// slow's first attempt, which the table waits for, ends in between.
	for name, sleep := range map[string]string{"broken": "1", "slow": "2"} {
		file := fmt.Sprintf("tool_command: sh\nargs: [-c, 'sleep %s; exit 1']\n", sleep)
		if err := os.WriteFile(filepath.Join(dir, "tool", name+".yaml"), []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out testkit.Buffer // stdout and stderr at once, in the order of the writes
	if code := Run([]string{"check", "--config", dir}, &out, &out); code != 1 {
		t.Errorf("check of a broken server: exit %d, want 1", code)
	}
	got := out.String()
	table := strings.Index(got, "SERVER")
	if table < 0 || !strings.HasSuffix(got, "2 servers, 2 not up, 0 invalid files\n") {
		t.Fatalf("check printed:\n%s", got)
	}
	if strings.Contains(got[table:], "level=") {
		t.Errorf("a log line after the table:\n%s", got)
	}
}

// Replicas: --peers needs a shared state key (a key per process could not
// be read by a peer) and an address of this replica; --advertise defaults
// to a --http address that is not a wildcard. The key never reaches the
// log.
func TestReplicaFlags(t *testing.T) {
	key := strings.Repeat("s3cr3t", 8)
	for _, c := range []struct {
		args    []string
		key     string
		wantErr string
		self    string
	}{
		{args: []string{"--http", "127.0.0.1:8081", "--peers", "127.0.0.1:8081,127.0.0.1:8082"}, wantErr: "MCPMUX_STATE_KEY"},
		{args: []string{"--http", "0.0.0.0:8080", "--peers", "r:8080"}, key: key, wantErr: "--advertise"},
		{args: []string{"--peers", "r:8080"}, key: key, wantErr: "apply to --http"},
		{args: []string{"--http", "127.0.0.1:8081"}, key: "short", wantErr: "fewer than 32"},
		{args: []string{"--http", "127.0.0.1:8081", "--peers", "127.0.0.1:8081", "--peers", "127.0.0.1:8082"}, key: key, self: "127.0.0.1:8081"},
		{args: []string{"--http", "0.0.0.0:8080", "--advertise", "10.0.0.1:8080", "--peers", "r:8080"}, key: key, self: "10.0.0.1:8080"},
		{args: []string{"--http", "127.0.0.1:8081"}},
	} {
		t.Setenv("MCPMUX_STATE_KEY", c.key)
		var logged bytes.Buffer
		fs, f := newServeFlags(io.Discard, io.Discard)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		log, mask, err := f.logger(&logged)
		if err != nil {
			t.Fatal(err)
		}
		set, err := f.replicaSet(log, mask)
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: %v, want an error with %q", c.args, err, c.wantErr)
			}
			continue
		case err != nil:
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if set.Self() != c.self || set.Shared() != (c.key != "") {
			t.Errorf("%q: self %q shared %v, want %q %v", c.args, set.Self(), set.Shared(), c.self, c.key != "")
		}
		log.Info("a line", "key", c.key)
		if c.key != "" && strings.Contains(logged.String(), c.key) {
			t.Errorf("the key was logged: %s", logged.String())
		}
	}
}
