package config

import (
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// minLimit is the smallest request or result limit accepted: below it not
// even an initialize request fits.
const minLimit Size = 1 << 10

func (s *Settings) validateSecurity() error {
	if s.MaxRequestBytes < minLimit {
		return fieldErr("max_request_bytes", fmt.Errorf("%v is too small (at least %v)", s.MaxRequestBytes, minLimit))
	}
	if s.MaxResultBytes < minLimit {
		return fieldErr("max_result_bytes", fmt.Errorf("%v is too small (at least %v)", s.MaxResultBytes, minLimit))
	}
	for _, n := range []struct {
		field string
		v     int
	}{{"max_sessions", s.MaxSessions}, {"max_connections", s.MaxConnections}} {
		if n.v < 0 {
			return fieldErr(n.field, fmt.Errorf("must not be negative (0 means the default)"))
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"session_timeout", s.SessionTimeout}, {"request_body_timeout", s.RequestBodyTimeout}} {
		if d.v < 0 {
			return fieldErr(d.field, fmt.Errorf("must not be negative (0 means the default)"))
		}
	}
	for i, o := range s.AllowedOrigins {
		if _, err := ParseOrigin(o); err != nil {
			return fieldErr(fmt.Sprintf("allowed_origins.%d", i), err)
		}
	}
	return nil
}

// DefaultMaxConnections is the connection limit of max_connections: 0:
// half the process's open-file limit, so that the other half stays for
// children, pipes and config files, at most 4096 and at least 16.
func DefaultMaxConnections() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return int(min(max(rl.Cur/2, 16), 4096))
}

// Connections is max_connections, or DefaultMaxConnections when unset.
func (s *Settings) Connections() int {
	if s.MaxConnections > 0 {
		return s.MaxConnections
	}
	return DefaultMaxConnections()
}

// OriginPattern is an allowed browser origin: scheme, host and a port,
// which may be "*" for any port (or none).
type OriginPattern struct {
	Scheme, Host, Port string
}

// ParseOrigin reads an origin pattern such as "https://app.example.com",
// "http://localhost:*" or "http://[::1]:8080".
func ParseOrigin(s string) (OriginPattern, error) {
	bad := func(why string) (OriginPattern, error) {
		return OriginPattern{}, fmt.Errorf("%q is not an origin (%s; e.g. https://app.example.com or http://localhost:*)", s, why)
	}
	anyPort := strings.HasSuffix(s, ":*")
	u, err := url.Parse(strings.TrimSuffix(s, "*"))
	if err != nil {
		return bad("unparsable")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return bad("scheme must be http or https")
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return bad("want scheme://host[:port], nothing else")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" { // "http://:0" has a Host but no host name
		return bad("no host name")
	}
	port := u.Port()
	if anyPort {
		port = "*"
	} else if strings.HasSuffix(u.Host, ":") {
		return bad("empty port")
	}
	return OriginPattern{Scheme: u.Scheme, Host: host, Port: port}, nil
}

// Matches reports whether an Origin header value is allowed by p. Default
// ports count as written: "https://h" matches "https://h:443".
func (p OriginPattern) Matches(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != p.Scheme || u.User != nil || (u.Path != "" && u.Path != "/") {
		return false
	}
	if strings.ToLower(u.Hostname()) != p.Host {
		return false
	}
	if p.Port == "*" {
		return true
	}
	return defaultPort(u.Scheme, u.Port()) == defaultPort(p.Scheme, p.Port)
}

func defaultPort(scheme, port string) string {
	if port != "" {
		return port
	}
	if scheme == "https" {
		return "443"
	}
	return "80"
}
