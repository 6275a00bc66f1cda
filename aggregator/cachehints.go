package aggregator

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caching hints of the lists a sessionless client gets (MCP 2026-07-28's
// ttlMs and cacheScope). The merged list is as fresh as the freshest
// promise of the servers behind it: its ttlMs is the smallest a server of
// the profile gave its own lists. Servers that give none (2025-11-25
// ones) announce their changes instead, which reach clients on their
// listen streams, so they do not shorten it; with no server giving one,
// it is 0. A list is "private" where it holds what only its client sees:
// the resources that per-client servers listed to that client's own
// connection (keyed by its task or token, clientkey.go); else "public" —
// the tools of a profile differ by the URL the client asked, and by the
// capabilities its request declares, not by who it is.

// listTTL is the smallest ttl the servers of v gave their lists, in
// milliseconds; 0 if none gave one.
func (l *listing) listTTL(v *view) int {
	var low time.Duration
	for _, srv := range l.servers() {
		if !v.hasServer(srv.Name()) {
			continue
		}
		if d := srv.ListTTL(); d > 0 && (low == 0 || d < low) {
			low = d
		}
	}
	return int(low.Milliseconds())
}

// cacheHints are the hints of a list of v for req: private if it holds
// its client's own items. A request of 2025-11-25 or older, which knows no
// such hints, gets the SDK's defaults, as before.
func (l *listing) cacheHints(req mcp.Request, v *view, own bool) mcp.Cacheable {
	if _, ok := sessionless(req); !ok {
		return mcp.Cacheable{CacheScope: "public"}
	}
	c := mcp.Cacheable{TTLMs: l.listTTL(v), CacheScope: "public"}
	if own {
		c.CacheScope = "private"
	}
	return c
}
