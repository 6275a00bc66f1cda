package front

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/mcpmux/mcpmux/config"
)

// loopbackOrigins are always allowed: pages served from this machine, such
// as a local inspector or IDE webview.
var loopbackOrigins = []string{"http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"}

// originAllowed reports whether a request's Origin header is acceptable:
// absent (a non-browser client), a loopback origin, or one of extra.
//
// This is the Origin validation the MCP transport spec asks for against
// DNS rebinding. The go-sdk's StreamableHTTPHandler does the other half on
// /mcp (a request reaching a loopback listener with a non-loopback Host
// gets 403); it validates no Origin unless given the deprecated
// CrossOriginProtection, whose trusted origins cannot say "any port".
func originAllowed(r *http.Request, extra []string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, list := range [][]string{loopbackOrigins, extra} {
		for _, s := range list {
			if p, err := config.ParseOrigin(s); err == nil && p.Matches(origin) {
				return true
			}
		}
	}
	return false
}

// forbidOrigin answers a request from a foreign origin.
func forbidOrigin(w http.ResponseWriter, r *http.Request) {
	http.Error(w, fmt.Sprintf("403 forbidden: origin %q is not allowed; add it to allowed_origins in mcpmux.yaml (or --allowed-origin) if it is yours", r.Header.Get("Origin")), http.StatusForbidden)
}

// rebindingHost reports a request that reached a loopback listener under a
// non-loopback Host name: a page on another site whose name was rebound to
// 127.0.0.1. The SDK refuses these on /mcp; this applies the same rule to
// every route. A request without any Host (HTTP/1.0, as HAProxy's default
// health check sends) is no browser's, which always send one: it passes
// here (the SDK still refuses it on /mcp).
func rebindingHost(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || r.Host == "" {
		return false
	}
	return IsLoopback(local.String()) && !IsLoopback(r.Host)
}

// IsLoopback reports whether a host, or host:port, names loopback only:
// localhost or a loopback IP. It is the one loopback check of mcpmux: of
// the Host a request names, and of the address mcpmux listens on (where an
// empty host, all interfaces, is not loopback).
func IsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// CheckOrigins reports the first of origins (--allowed-origin) that is no
// origin pattern.
func CheckOrigins(origins []string) error {
	for _, o := range origins {
		if _, err := config.ParseOrigin(o); err != nil {
			return fmt.Errorf("--allowed-origin: %w", err)
		}
	}
	return nil
}
