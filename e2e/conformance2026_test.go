package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The 2026-07-28 server suite (@modelcontextprotocol/conformance
// 0.2.0-alpha.12, conformance-2026 in package.json) against a plain go-sdk
// v1.8.0 stateless server (the conformance fixture) and against mcpmux
// serving that fixture: each scenario that passes directly passes through
// mcpmux, check by check.

// conformanceCLI2026 is the 2026-07-28 suite, by its path.
func conformanceCLI2026() string {
	return filepath.Join(nodeBin, "..", "conformance-2026", "dist", "index.js")
}

// runConformance2026 runs the suite's server scenarios at 2026-07-28
// against url.
func runConformance2026(t *testing.T, url string) map[string][]conformanceCheck {
	t.Helper()
	return runConformanceSuite(t, url, conformanceCLI2026(), []string{"--spec-version", "2026-07-28", "--suite", "all"}, 1)
}

// conformanceStatelessHTTP serves the conformance fixture as a plain
// go-sdk v1.8.0 server of 2026-07-28 does: from a stateless handler.
func conformanceStatelessHTTP(t *testing.T) string {
	t.Helper()
	srv := conformanceFixture()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func TestConformance2026(t *testing.T) {
	t.Parallel()
	direct := runConformance2026(t, conformanceStatelessHTTP(t))
	for s, checks := range direct {
		t.Logf("directly: %s: %d checks, failed: %v", s, len(checks), failures(checks))
	}
	for _, tc := range []struct{ name, cfg string }{
		{"http-shared", fmt.Sprintf("url: %s\n", conformanceHTTP(t))},
		{"stdio", fmt.Sprintf("tool_command: %q\nenv:\n  %s: conformance\n", fixtureBin, fixtureEnv)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startHTTP(t, writeConfig(t, map[string]string{"tool/x.yaml": "name: x\nprefix: \"\"\n" + tc.cfg}))
			via := runConformance2026(t, p.url+"/mcp")
			for s, checks := range via {
				t.Logf("via mcpmux: %s: %d checks, failed: %v", s, len(checks), failures(checks))
			}
			compareConformance(t, direct, via)
		})
	}
}
