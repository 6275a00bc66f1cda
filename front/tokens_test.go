package front

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

func TestHTTPTokenSources(t *testing.T) {
	dir := t.TempDir()
	flagFile := testkit.WriteFile(t, filepath.Join(dir, "flag.token"), "  from-flag-file \n")
	cfgFile := testkit.WriteFile(t, filepath.Join(dir, "cfg.token"), "# tokens, one per line\nalice-token\n\n  bob-token\n")
	settings := &config.Settings{TokenFile: cfgFile, File: "mcpmux.yaml"}

	for _, c := range []struct {
		what     string
		src      TokenSources
		settings *config.Settings
		want     []string
		file     string
	}{
		{"--token wins", TokenSources{Flag: "from-flag", File: flagFile}, settings, []string{"from-flag"}, ""},
		{"--token-file over token_file, trimmed", TokenSources{File: flagFile}, settings, []string{"from-flag-file"}, flagFile},
		{"token_file", TokenSources{}, settings, []string{"alice-token", "bob-token"}, cfgFile},
		{"no token", TokenSources{}, &config.Settings{}, nil, ""},
	} {
		tokens, err := ReadTokens(c.src, c.settings, slog.New(slog.DiscardHandler), nil)
		if err != nil || !slices.Equal(tokens.current, c.want) || tokens.file != c.file || tokens.Empty() != (c.want == nil) {
			t.Errorf("%s: tokens %v, error %v; want %q from %q", c.what, tokens, err, c.want, c.file)
		}
	}

	for _, c := range []struct {
		src      TokenSources
		settings *config.Settings
		want     string
	}{
		{TokenSources{File: filepath.Join(dir, "missing")}, &config.Settings{}, "--token-file: cannot read the token file"},
		{TokenSources{File: testkit.WriteFile(t, filepath.Join(dir, "empty"), "\n \n# none\n")}, &config.Settings{}, "holds no token"},
		{TokenSources{}, &config.Settings{TokenFile: testkit.WriteFile(t, filepath.Join(dir, "spaced"), "two words\n"), File: "mcpmux.yaml"}, "token_file in mcpmux.yaml: " + filepath.Join(dir, "spaced") + ":1: a token must not contain whitespace"},
		{TokenSources{Flag: "a b"}, &config.Settings{}, "must not be blank or contain whitespace"},
		{TokenSources{Flag: " \t"}, &config.Settings{}, "must not be blank or contain whitespace"},
	} {
		_, err := ReadTokens(c.src, c.settings, slog.New(slog.DiscardHandler), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.src, err, c.want)
		}
	}
	if err := CheckOrigins([]string{"http://devbox:*", "evil.example"}); err == nil || !strings.Contains(err.Error(), "--allowed-origin: \"evil.example\" is not an origin") {
		t.Errorf("CheckOrigins: %v", err)
	}
}

// A rotated token file replaces the accepted tokens; a file that cannot be
// read, holds none, or is no longer named keeps the tokens in force, and
// says so once.
func TestTokenRotationKeepsTheTokensInForceOnAProblem(t *testing.T) {
	dir := t.TempDir()
	file := testkit.WriteFile(t, filepath.Join(dir, "tokens"), "first\n")
	settings := &config.Settings{TokenFile: file, File: "mcpmux.yaml"}
	var logBuf bytes.Buffer
	mask := &logs.Masker{}
	log := logs.Masked(slog.New(slog.NewTextHandler(&logBuf, nil)), mask)
	r, err := ReadTokens(TokenSources{}, settings, log, mask)
	if err != nil {
		t.Fatal(err)
	}

	testkit.WriteFile(t, file, "second\nthird\n")
	r.Reload(settings)
	if !slices.Equal(r.current, []string{"second", "third"}) {
		t.Errorf("after a rotation the tokens are %q", r.current)
	}
	for _, broken := range []string{"\n# none\n", "two words\n"} {
		testkit.WriteFile(t, file, broken)
		r.Reload(settings)
		r.Reload(settings)
	}
	r.Reload(&config.Settings{File: "mcpmux.yaml"})
	if !slices.Equal(r.current, []string{"second", "third"}) {
		t.Errorf("a problem changed the tokens to %q", r.current)
	}
	out := logBuf.String()
	for _, want := range []string{"holds no token", "a token must not contain whitespace", "mcpmux.yaml no longer names a token file"} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, out)
		}
	}
	if strings.Contains(out, "second") || strings.Contains(out, "third") {
		t.Errorf("the log shows a token:\n%s", out)
	}
}
