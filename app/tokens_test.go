package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/config"
)

func parseSecurity(t *testing.T, args ...string) *httpSecurity {
	t.Helper()
	t.Setenv("MCPMUX_TOKEN", "")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sec := registerHTTPSecurity(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return sec
}

func TestHTTPTokenSources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flagFile := write("flag.token", "  from-flag-file \n")
	cfgFile := write("cfg.token", "# tokens, one per line\nalice-token\n\n  bob-token\n")
	settings := &config.Settings{TokenFile: cfgFile, File: "mcpmux.yaml"}

	for _, c := range []struct {
		what     string
		args     []string
		settings *config.Settings
		want     []string
		file     string
	}{
		{"--token wins", []string{"--token", "from-flag", "--token-file", flagFile}, settings, []string{"from-flag"}, ""},
		{"--token-file over token_file, trimmed", []string{"--token-file", flagFile}, settings, []string{"from-flag-file"}, flagFile},
		{"token_file", nil, settings, []string{"alice-token", "bob-token"}, cfgFile},
		{"no token", nil, &config.Settings{}, nil, ""},
	} {
		sec := parseSecurity(t, c.args...)
		opts, err := sec.options(c.settings)
		if err != nil || !slices.Equal(sec.accepted, c.want) || sec.file != c.file || hasToken(opts) != (c.want != nil) {
			t.Errorf("%s: tokens %q from %q, hasToken %v, error %v; want %q from %q", c.what, sec.accepted, sec.file, err == nil && hasToken(opts), err, c.want, c.file)
		}
	}

	for _, c := range []struct {
		args     []string
		settings *config.Settings
		want     string
	}{
		{[]string{"--token-file", filepath.Join(dir, "missing")}, &config.Settings{}, "--token-file: cannot read the token file"},
		{[]string{"--token-file", write("empty", "\n \n# none\n")}, &config.Settings{}, "holds no token"},
		{nil, &config.Settings{TokenFile: write("spaced", "two words\n"), File: "mcpmux.yaml"}, "token_file in mcpmux.yaml: " + filepath.Join(dir, "spaced") + ":1: a token must not contain whitespace"},
		{[]string{"--token", "a b"}, &config.Settings{}, "must not be blank or contain whitespace"},
		{[]string{"--allowed-origin", "evil.example"}, &config.Settings{}, "--allowed-origin: \"evil.example\" is not an origin"},
	} {
		_, err := parseSecurity(t, c.args...).options(c.settings)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
