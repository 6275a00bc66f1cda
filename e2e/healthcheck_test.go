package e2e

import (
	"strings"
	"syscall"
	"testing"
)

// The container images' HEALTHCHECK runs "mcpmux healthcheck": exit 0 while
// mcpmux serves /healthz, 1 once it does not, 2 for a mistyped URL.
func TestHealthcheckCommand(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{"tool/echo.yaml": fixture("echo", "echo")})
	p := startHTTP(t, dir)
	cs, err := connectHTTP(t, p, "/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	toolNames(t, cs) // the first tools/list waits for the start-up

	out, errOut, code := runMcpmux(t, "healthcheck", p.url+"/healthz")
	if code != 0 || strings.TrimSpace(out) != "healthy: ok, 1 of 1 servers up" {
		t.Errorf("healthcheck of a serving mcpmux = %d %q %q", code, out, errOut)
	}
	_, errOut, code = runMcpmux(t, "healthcheck", "--timeout", "20s", p.url+"/nope")
	if code != 1 || !strings.Contains(errOut, "unhealthy") || !strings.Contains(errOut, "404") {
		t.Errorf("healthcheck of a 404 = %d %q", code, errOut)
	}
	_, errOut, code = runMcpmux(t, "healthcheck", "127.0.0.1:8080/healthz")
	if code != 2 || !strings.Contains(errOut, "not an http(s) URL") {
		t.Errorf("healthcheck of a URL without scheme = %d %q", code, errOut)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.wait(t)
	_, errOut, code = runMcpmux(t, "healthcheck", p.url+"/healthz")
	if code != 1 || !strings.Contains(errOut, "unhealthy") {
		t.Errorf("healthcheck of a stopped mcpmux = %d %q", code, errOut)
	}
}
