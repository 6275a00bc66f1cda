package config

import (
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
)

// secretNameParts mark an environment variable as holding a secret.
var secretNameParts = []string{"KEY", "TOKEN", "SECRET", "PASS", "PWD", "AUTH", "CREDENTIAL", "COOKIE", "PRIVATE", "SIGNATURE"}

// Secrets returns the values of the snapshot's servers (enabled or not)
// and settings that must never appear in logs, `check` output or error
// messages:
//
//   - every value a ${...} reference gave, in any field (a key in a url's
//     query, in args, in tool_command), and its URL-escaped forms;
//   - every header value, and the credential after its scheme
//     ("Bearer abc" also gives "abc");
//   - every env value whose variable's name says it is secret (…KEY,
//     …TOKEN, …SECRET, …PASSWORD, …AUTH…, …);
//   - every other env value that looks like a credential: 16 bytes or
//     more of letters and digits (and punctuation), with no space, that is
//     not a path or URL;
//   - the password of a URL, in url or in env values.
//
// Ordinary settings (NODE_ENV: production, a mode, a path, a number) are
// not secrets: masking them would mangle every log line naming them. The
// masker ignores values shorter than 4 bytes.
func (s *Snapshot) Secrets() []string {
	out := slices.Clone(s.failedSecrets)
	if s.Settings != nil {
		out = append(out, withEscapes(s.Settings.interpolated)...)
	}
	for _, list := range [][]*Server{s.Servers, s.Disabled} {
		for _, srv := range list {
			out = append(out, srv.Secrets()...)
		}
	}
	return out
}

// Secrets returns the server's secret values; see Snapshot.Secrets.
func (s *Server) Secrets() []string {
	out := withEscapes(s.interpolated)
	for _, v := range s.Headers {
		out = append(out, v)
		if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
			out = append(out, strings.TrimSpace(cred))
		}
	}
	for name, v := range s.Env {
		if secretName(name) || credentialLike(v) {
			out = append(out, v)
		}
		out = append(out, urlPassword(v)...)
	}
	out = append(out, urlPassword(s.URL)...)
	if a := s.Auth; a != nil {
		out = append(out, a.ClientSecret, a.PrivateKey)
	}
	return out
}

// looseSecrets reads what it can of a tool file that failed to load, so
// that the secrets in it are masked too: every value its ${...} references
// give (as far as they resolve), and its env, headers and url read as
// Server.Secrets reads them.
func looseSecrets(data []byte, lookup LookupFunc) []string {
	k := koanf.New(delim)
	if err := k.Load(rawbytes.Provider(data), yamlParser{}); err != nil {
		return nil
	}
	var interpolated []string
	found := func(v string) { interpolated = append(interpolated, v) }
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			_, _ = expand(v, lookup, found)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(k.Raw())
	srv := &Server{Env: map[string]string{}, Headers: map[string]string{}, interpolated: interpolated}
	for field, m := range map[string]map[string]string{"env": srv.Env, "headers": srv.Headers} {
		values, _ := k.Get(field).(map[string]any)
		for name, v := range values {
			str, ok := v.(string)
			if !ok {
				continue
			}
			if x, err := Expand(str, lookup); err == nil {
				str = x
			}
			m[name] = str
		}
	}
	srv.URL, _ = k.Get("url").(string)
	if auth, ok := k.Get("auth").(map[string]any); ok {
		srv.Auth = &Auth{}
		srv.Auth.ClientSecret, _ = auth["client_secret"].(string)
		srv.Auth.PrivateKey, _ = auth["private_key"].(string)
	}
	return srv.Secrets()
}

// withEscapes returns values with the forms they take inside a URL, where
// a query or a path escapes them (a key with "+" or "/" in it).
func withEscapes(values []string) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		out = append(out, v)
		for _, e := range []string{url.QueryEscape(v), url.PathEscape(v)} {
			if e != v {
				out = append(out, e)
			}
		}
	}
	return out
}

func secretName(name string) bool {
	up := strings.ToUpper(name)
	for _, p := range secretNameParts {
		if strings.Contains(up, p) {
			return true
		}
	}
	return false
}

// credentialLike reports a value that looks like an API key or token.
func credentialLike(v string) bool {
	if len(v) < 16 || strings.HasPrefix(v, "/") || strings.HasPrefix(v, ".") || strings.Contains(v, "://") {
		return false
	}
	letter, digit := false, false
	for _, r := range v {
		switch {
		case unicode.IsSpace(r):
			return false
		case unicode.IsLetter(r):
			letter = true
		case unicode.IsDigit(r):
			digit = true
		}
	}
	return letter && digit
}

func urlPassword(v string) []string {
	if !strings.Contains(v, "://") {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return nil
	}
	if p, ok := u.User.Password(); ok {
		return []string{p, url.QueryEscape(p)}
	}
	return []string{u.User.Username()}
}
