package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheckReportsServersAndStatus(t *testing.T) {
	status, body := http.StatusOK, `{"status":"ok","ready":true,"servers":[{"name":"a","state":"up"},{"name":"b","state":"backoff"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	defer srv.Close()

	check := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(append([]string{"healthcheck"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, _ := check(srv.URL + "/healthz"); code != 0 || out != "healthy: ok, 1 of 2 servers up (b backoff)\n" {
		t.Errorf("healthy = %d %q", code, out)
	}
	t.Setenv("MCPMUX_HEALTHCHECK_URL", srv.URL+"/healthz")
	if code, out, errOut := check(); code != 0 || !strings.HasPrefix(out, "healthy: ok") {
		t.Errorf("URL from MCPMUX_HEALTHCHECK_URL = %d %q %q", code, out, errOut)
	}
	status, body = http.StatusServiceUnavailable, `{"status":"degraded"}`
	if code, _, errOut := check(srv.URL + "/healthz"); code != 1 || !strings.Contains(errOut, "503 Service Unavailable") {
		t.Errorf("503 = %d %q", code, errOut)
	}
	if code, _, errOut := check("--timeout", "1s", "a", "b"); code != 2 || !strings.Contains(errOut, "want at most one URL") {
		t.Errorf("two URLs = %d %q", code, errOut)
	}
	if code, _, errOut := check("ftp://127.0.0.1/healthz"); code != 2 || !strings.Contains(errOut, "not an http(s) URL") {
		t.Errorf("ftp URL = %d %q", code, errOut)
	}
}
