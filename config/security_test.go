package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]Size{
		"0": 0, "1024": 1024, "4MiB": 4 << 20, "4mib": 4 << 20, "512 KiB": 512 << 10, "16MB": 16e6,
		"1.5GiB": 3 << 29, "100B": 100, "2k": 2048, " 3 M ": 3 << 20, ".5KiB": 512,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "lots", "4 MiBs", "-1", "1e3", "4TiB", "1.2.3", "99999999999GiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func TestSizeString(t *testing.T) {
	for s, want := range map[Size]string{4 << 20: "4MiB", 1536: "1536B", 2048: "2KiB", 3 << 30: "3GiB", 0: "0B"} {
		if got := s.String(); got != want {
			t.Errorf("%d: %q, want %q", int64(s), got, want)
		}
	}
}

func TestSecuritySettings(t *testing.T) {
	s, ferr := ParseSettings("mcpmux.yaml", []byte("max_request_bytes: 1MiB\nmax_result_bytes: ${oc.env:CAP,2MiB}\nallowed_origins: [\"https://app.example.com\"]\ntoken_file: tok\n"), env(nil))
	if ferr != nil {
		t.Fatal(ferr)
	}
	if s.MaxRequestBytes != 1<<20 || s.MaxResultBytes != 2<<20 || s.TokenFile != "tok" || len(s.AllowedOrigins) != 1 {
		t.Errorf("got %+v", s)
	}
	d := DefaultSettings()
	if d.MaxRequestBytes != DefaultMaxRequestBytes || d.MaxResultBytes != DefaultMaxResultBytes {
		t.Errorf("defaults: %v %v", d.MaxRequestBytes, d.MaxResultBytes)
	}
	for doc, want := range map[string]string{
		"max_request_bytes: 10\n":                   "max_request_bytes: 10B is too small",
		"max_result_bytes: huge\n":                  `"huge" is not a size`,
		"allowed_origins: [\"https://h/app\"]\n":    `allowed_origins.0: "https://h/app" is not an origin`,
		"allowed_origins: [\"h.example.com\"]\n":    "scheme must be http or https",
		"allowed_origins: [\"http://u:p@h.com\"]\n": "nothing else",
		"max_result_bytes: -5\n":                    "out of range",
		"max_request_bytes: [1]\n":                  "max_request_bytes",
	} {
		_, ferr := ParseSettings("mcpmux.yaml", []byte(doc), env(nil))
		if ferr == nil || !strings.Contains(ferr.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", doc, ferr, want)
		}
	}
}

// The HTTP limits of issue 16: their defaults, their values, and negative
// values refused by name.
func TestHTTPLimitSettings(t *testing.T) {
	d := DefaultSettings()
	if d.MaxSessions != 1000 || d.SessionTimeout != 30*time.Minute || d.RequestBodyTimeout != 30*time.Second || d.MaxConnections != 0 {
		t.Errorf("defaults: max_sessions %d, session_timeout %v, request_body_timeout %v, max_connections %d; want 1000, 30m, 30s, 0",
			d.MaxSessions, d.SessionTimeout, d.RequestBodyTimeout, d.MaxConnections)
	}
	s, ferr := ParseSettings("mcpmux.yaml", []byte("max_sessions: 5\nsession_timeout: 90s\nrequest_body_timeout: 2s\nmax_connections: 64\n"), env(nil))
	if ferr != nil {
		t.Fatal(ferr)
	}
	if s.MaxSessions != 5 || s.SessionTimeout != 90*time.Second || s.RequestBodyTimeout != 2*time.Second || s.Connections() != 64 {
		t.Errorf("got max_sessions %d, session_timeout %v, request_body_timeout %v, connections %d", s.MaxSessions, s.SessionTimeout, s.RequestBodyTimeout, s.Connections())
	}
	for _, field := range []string{"max_sessions: -1", "max_connections: -2", "session_timeout: -1s", "request_body_timeout: -5m"} {
		name, _, _ := strings.Cut(field, ":")
		_, ferr := ParseSettings("mcpmux.yaml", []byte(field+"\n"), env(nil))
		if ferr == nil || !strings.Contains(ferr.Error(), name) || !strings.Contains(ferr.Error(), "must not be negative") {
			t.Errorf("%q: error %v, want it to name %s as negative", field, ferr, name)
		}
	}
}

// max_connections defaults to half the open-file limit, so that the other
// half stays for children, pipes and config files; at least 16, at most
// 4096.
func TestDefaultMaxConnections(t *testing.T) {
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
			t.Errorf("restoring the open-file limit: %v", err)
		}
	})
	for limit, want := range map[uint64]int{256: 128, 1024: 512, 20: 16, 16384: 4096} {
		if limit > saved.Max {
			continue
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: limit, Max: saved.Max}); err != nil {
			t.Fatal(err)
		}
		if got := (&Settings{}).Connections(); got != want {
			t.Errorf("open-file limit %d: max_connections defaults to %d, want %d", limit, got, want)
		}
	}
}

func TestOriginPatterns(t *testing.T) {

	for _, c := range []struct {
		pattern, origin string
		ok              bool
	}{
		{"http://localhost:*", "http://localhost:5173", true},
		{"http://localhost:*", "http://LOCALHOST", true},
		{"http://localhost:*", "https://localhost:5173", false},
		{"http://localhost:*", "http://localhost.evil.com:80", false},
		{"http://[::1]:*", "http://[::1]:3000", true},
		{"https://app.example.com", "https://app.example.com", true},
		{"https://app.example.com", "https://app.example.com:443", true},
		{"https://app.example.com", "https://app.example.com:8443", false},
		{"https://app.example.com", "https://evil.app.example.com", false},
		{"http://devbox:8080", "http://devbox:8080", true},
		{"http://devbox:8080", "http://devbox", false},
		{"http://localhost:*", "null", false},
		{"http://localhost:*", "http://user@localhost:1", false},
	} {
		p, err := ParseOrigin(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Matches(c.origin); got != c.ok {
			t.Errorf("%s matches %s: %v, want %v", c.pattern, c.origin, got, c.ok)
		}
	}
}

func TestSecrets(t *testing.T) {
	srv, ferr := ParseServer("tool/x.yaml", []byte(`tool_command: x
env:
  SERPER_API_KEY: abcd
  MODE: echo
  NODE_ENV: production
  OPAQUE: 9f8e7d6c5b4a39281706
  DATA_DIR: /var/lib/data2026/xyz
  DB: "postgres://app:pw-1234@db/app"
  N: 1800
`), env(nil))
	if ferr != nil {
		t.Fatal(ferr)
	}
	remote, ferr := ParseServer("tool/r.yaml", []byte("url: https://h/mcp\nheaders: {Authorization: \"Bearer tok-5678\", X-Api: k9k9}\n"), env(nil))
	if ferr != nil {
		t.Fatal(ferr)
	}
	snap := &Snapshot{Servers: []*Server{srv}, Disabled: []*Server{remote}}
	got := map[string]bool{}
	for _, s := range snap.Secrets() {
		got[s] = true
	}
	for _, want := range []string{"abcd", "9f8e7d6c5b4a39281706", "pw-1234", "Bearer tok-5678", "tok-5678", "k9k9"} {
		if !got[want] {
			t.Errorf("%q is not a secret; secrets: %v", want, got)
		}
	}
	for _, not := range []string{"echo", "production", "/var/lib/data2026/xyz", "1800"} {
		if got[not] {
			t.Errorf("%q should not be masked", not)
		}
	}
}

func TestTokenFileIsRelativeToTheConfigDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SettingsFile), []byte("token_file: secrets/t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := Load(dir, &Options{Lookup: env(nil)})
	if err != nil || len(snap.Errors) > 0 {
		t.Fatal(err, snap.Errors)
	}
	if want := filepath.Join(dir, "secrets", "t"); snap.Settings.TokenFile != want {
		t.Errorf("token_file = %q, want %q", snap.Settings.TokenFile, want)
	}
}

// A tool file that fails to load still has its secrets masked: its error
// may quote them.
func TestSecretsOfAFailedFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ToolDir), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := "tool_command: x\nenv:\n  API_KEY: ${oc.env:K}\n  OTHER: [not, a, string]\nheaders: {Authorization: \"Bearer h-777\"}\nurl: https://u:p4ss@h/mcp\n"
	if err := os.WriteFile(filepath.Join(dir, ToolDir, "bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := Load(dir, &Options{Lookup: env(map[string]string{"K": "k-secret-1"})})
	if err != nil || len(snap.Errors) != 1 {
		t.Fatalf("%v %v", err, snap.Errors)
	}
	got := strings.Join(snap.Secrets(), " ")
	for _, want := range []string{"k-secret-1", "h-777", "p4ss"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q not among the secrets %q", want, got)
		}
	}
}

// Every value a ${...} reference gives is a secret, whatever field it is
// in, in the URL-escaped forms it takes there too; in a file that failed
// to load as well.
func TestInterpolatedValuesAreSecrets(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ToolDir), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"tool/remote.yaml": "url: \"http://127.0.0.1:9/mcp?api_key=${oc.env:Q_KEY}\"\n",
		"tool/child.yaml":  "tool_command: \"${oc.env:BIN,/opt/bin/srv-4242}\"\nargs: [\"--flag=${ARG_VAL}\", plain]\n",
		"tool/broken.yaml": "tool_command: x\nargs: [\"${BROKEN_ARG}\", \"${NOT_SET}\"]\n",
		SettingsFile:       "rewrite:\n  - name: r\n    block_urls: [a.com/**]\n    message: \"key ${MSG_VAL}\"\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := Load(dir, &Options{Lookup: env(map[string]string{
		"Q_KEY": "sk-live/q+k 1", "ARG_VAL": "arg-secret-99", "BROKEN_ARG": "broken-secret-7", "MSG_VAL": "msg-secret-3",
	})})
	if err != nil || len(snap.Errors) != 1 {
		t.Fatalf("%v %v", err, snap.Errors)
	}
	got := map[string]bool{}
	for _, s := range snap.Secrets() {
		got[s] = true
	}
	for _, want := range []string{"sk-live/q+k 1", "sk-live%2Fq%2Bk+1", "sk-live%2Fq+k%201", "/opt/bin/srv-4242", "arg-secret-99", "broken-secret-7", "msg-secret-3"} {
		if !got[want] {
			t.Errorf("%q is not a secret; secrets: %q", want, snap.Secrets())
		}
	}
	if got["plain"] {
		t.Error("a literal argument is masked")
	}
}
