package config

import (
	"net/url"
	"strings"
	"unicode"
)

// secretNameParts mark an environment variable as holding a secret.
var secretNameParts = []string{"KEY", "TOKEN", "SECRET", "PASS", "PWD", "AUTH", "CREDENTIAL", "COOKIE", "PRIVATE", "SIGNATURE"}

// Secrets returns the values of the snapshot's servers (enabled or not)
// that must never appear in logs, `check` output or error messages:
//
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
	var out []string
	for _, list := range [][]*Server{s.Servers, s.Disabled} {
		for _, srv := range list {
			out = append(out, srv.Secrets()...)
		}
	}
	return out
}

// Secrets returns the server's secret values; see Snapshot.Secrets.
func (s *Server) Secrets() []string {
	var out []string
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
