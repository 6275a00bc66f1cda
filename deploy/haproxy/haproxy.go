// Package haproxy holds haproxy.cfg, the HAProxy configuration mcpmux
// ships for running replicas behind HAProxy (docs/scaling.md), and fills
// in its listening address and replicas, for the tests and the benchmark
// that run it as shipped.
package haproxy

import (
	_ "embed"
	"fmt"
	"strings"
)

// Shipped is deploy/haproxy/haproxy.cfg.
//
//go:embed haproxy.cfg
var Shipped string

// Config returns the shipped configuration with its frontend bound to bind
// (host:port) and, in each backend, one server line per replica address
// (host:port) in place of the shipped ones.
func Config(bind string, replicas []string) (string, error) {
	var out []string
	bound, backends, served := false, 0, 0
	for _, line := range strings.Split(Shipped, "\n") {
		field, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch field {
		case "bind":
			out = append(out, "    bind "+bind)
			bound = true
			continue
		case "backend":
			backends++
		case "server":
			if served < backends {
				for i, addr := range replicas {
					out = append(out, fmt.Sprintf("    server mcpmux%d %s", i+1, addr))
				}
				served = backends
			}
			continue
		}
		out = append(out, line)
	}
	if !bound || backends == 0 || served != backends {
		return "", fmt.Errorf("haproxy.cfg has no bind line, or a backend without server lines to replace")
	}
	return strings.Join(out, "\n"), nil
}
