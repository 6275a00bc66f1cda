package config

import (
	"strings"
	"testing"
)

// Fuzz targets; seeds are in testdata/fuzz/. Run one for longer with
//
//	go test -run '^$' -fuzz '^FuzzExpand$' -fuzztime 5m ./config/

var fuzzEnv = env(map[string]string{"HOME": "/home/u", "KEY": "k-123", "EMPTY": ""})

// Expand never panics, leaves strings without references alone, and never
// leaves a reference it accepted in its output unless escaped.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{
		"", "plain", "${HOME}", "${oc.env:KEY}", "${oc.env:MISSING,def}", "${env:MISSING,'quoted'}",
		"${MISSING:-x}", "${MISSING}", "${", "${}", "${a:b}", `\${HOME}`, "$HOME", "${HOME}${KEY}", "${oc.env:EMPTY,}", "${ HOME }",
		"${oc.env:${HOME}}", "}${", "\xff${HOME}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := Expand(s, fuzzEnv)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("Expand(%q): empty error", s)
			}
			return
		}
		if !strings.Contains(s, "${") && out != s {
			t.Fatalf("Expand(%q) = %q: changed a string without references", s, out)
		}
	})
}

// Tool files: never a panic; whatever loads is valid and has a name.
func FuzzParseServer(f *testing.F) {
	for _, s := range []string{
		"tool_command: npx\nargs: [\"-y\", \"x\"]\n",
		"name: a\nurl: https://h/mcp\nheaders: {Authorization: \"Bearer ${KEY}\"}\n",
		"url: https://h/mcp\nauth: oauth\n",
		"url: https://h/mcp\nauth: {type: client_credentials, client_id: a, client_secret: \"${KEY}\", scopes: [x]}\n",
		"tool_command: x\nenv: {A: 1, B: true, C: ${HOME}}\ntimeout: 90s\ntool_timeouts: {t: 5}\n",
		"tool_command: x\nsession: per-client\nidle_timeout: 10m\nprefix: \"\"\n",
		"type: sse\nurl: http://127.0.0.1:1/sse\n",
		"- a\n- b\n", "{", "tool_command: [x]\n", "tool_command: x\ntimeout: -1\n", "&a [*a]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		srv, ferr := ParseServer("tool/fuzz.yaml", data, fuzzEnv)
		if ferr != nil {
			if ferr.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if err := srv.Validate(); err != nil || srv.Name == "" || srv.Hash == "" {
			t.Fatalf("loaded an invalid server %+v: %v", srv, err)
		}
		_ = srv.Secrets()
	})
}

// mcpmux.yaml: never a panic; whatever loads is valid.
func FuzzParseSettings(f *testing.F) {
	for _, s := range []string{
		"", "separator: \"__\"\ntimeout: 900s\n",
		"tool_blacklist: [[a, b]]\nprofiles: {p: {tool_config: [a]}}\n",
		"rewrite: [{name: r, tools: [\"*x*\"], block_urls: [\"h.co/**\"], message: no}]\n",
		"max_request_bytes: 4MiB\nmax_result_bytes: 1048576\nallowed_origins: [\"http://h:*\"]\ntoken_file: t\n",
		"max_result_bytes: 1e30\n", "profiles: {a: }\n", "rewrite: [~]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, ferr := ParseSettings("mcpmux.yaml", data, fuzzEnv)
		if ferr != nil {
			if ferr.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("loaded invalid settings: %v", err)
		}
	})
}

// Sizes and origins: never a panic, and what parses is consistent.
func FuzzParseSizeAndOrigin(f *testing.F) {
	for _, s := range []string{"4MiB", "1.5 GiB", "0", "-1", "1e9", "99999999999999999999", ".", "http://localhost:*", "https://h", "http://[::1]:8080", "http://h:", "http://%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if p, err := ParseOrigin(s); err == nil {
			if p.Scheme != "http" && p.Scheme != "https" || p.Host == "" {
				t.Fatalf("ParseOrigin(%q) = %+v", s, p)
			}
			_ = p.Matches(s)
		}
	})
}
