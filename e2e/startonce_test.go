package e2e

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// reaperWarning and cancelledProbe are what a short command used to end
// with: children left to the reaper, and a probe cut short by the exit
// logged as the server's failure.
var (
	reaperWarning  = "gone without closing its children"
	cancelledProbe = "no answer to initialize"
	everythingRuns = regexp.MustCompile(`Starting default \(STDIO\) server`)
)

// A short command or session closes its children itself (the reaper has
// nothing to end, and says nothing), and starts each server once: what a
// server lists to a client with fewer capabilities is asked only when such
// a client comes (server-everything, which lists some tools only to
// clients with roots, sampling or elicitation, used to be started three
// times for a client with roots).
func TestShortRunsCloseTheirChildren(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"tool/everything.yaml": npmServer(t, "everything", "mcp-server-everything", "stdio"),
	})
	clean := func(what, stderr string) {
		t.Helper()
		for _, bad := range []string{reaperWarning, cancelledProbe} {
			if strings.Contains(stderr, bad) {
				t.Errorf("%s: stderr has %q:\n%s", what, bad, stderr)
			}
		}
	}

	_, errOut, code := runMcpmuxIn(t, longTestContext(t), "--config", dir, "check", "--log-level", "info")
	if code != 0 {
		t.Errorf("check: exit %d\n%s", code, errOut)
	}
	clean("check", errOut)
	if n := len(everythingRuns.FindAllString(errOut, -1)); n != 1 {
		t.Errorf("check started server-everything %d times, want once:\n%s", n, errOut)
	}

	_, errOut, code = runMcpmuxIn(t, longTestContext(t), "--config", dir, "tools", "--log-level", "info")
	if code != 0 {
		t.Errorf("tools: exit %d\n%s", code, errOut)
	}
	clean("tools", errOut)

	// The go-sdk's client declares roots only: one probe session.
	cs, p := startStdio(t, dir)
	names := toolNames(t, cs)
	if !slices.Contains(names, "everything__get-roots-list") || slices.Contains(names, "everything__trigger-sampling-request") {
		t.Errorf("a client with roots only is listed %v", names)
	}
	_ = cs.Close()
	if err := p.wait(t); err != nil {
		t.Errorf("mcpmux exited with %v", err)
	}
	logs := p.logs.String()
	clean("a stdio session", logs)
	if n := len(everythingRuns.FindAllString(logs, -1)); n != 2 {
		t.Errorf("a stdio session of a client with roots started server-everything %d times, want twice (its shared connection, one probe for the client's capabilities)", n)
	}
}
