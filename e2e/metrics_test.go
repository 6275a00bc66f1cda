package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// getMetrics GETs /metrics of an HTTP mcpmux with the given Authorization.
func getMetrics(t *testing.T, p *process, auth string) (*http.Response, map[string]*dto.MetricFamily) {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), "GET", p.url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	p2 := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p2.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return resp, fams
}

// metricValue is the value of the series of family name that has (at
// least) the given labels; histograms give their sample count.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	return testkit.SeriesValue(fams[name], func(m *dto.Metric) bool {
		for i := 0; i+1 < len(labels); i += 2 {
			if !slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
				return false
			}
		}
		return true
	})
}

func TestMetricsScrapedOverHTTP(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, map[string]string{
		"mcpmux.yaml":    "tool_blacklist: [[echo, env]]\n",
		"tool/echo.yaml": fixture("echo", "echo"),
	})
	p := startHTTP(t, dir, "--token", "tok")
	auth := http.Header{"Authorization": {"Bearer tok"}}
	cs, err := connectHTTP(t, p, "/mcp", auth)
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "echo__echo", map[string]any{"text": "a"})
	callTool(t, cs, "echo__echo", map[string]any{"text": "b"})
	callTool(t, cs, "echo__env", map[string]any{"name": "HOME"})
	callTool(t, cs, "echo", map[string]any{"text": "c"}) // auto-corrected
	callTool(t, cs, "nope__nothing", nil)

	// A reload that adds a server.
	if err := os.WriteFile(filepath.Join(dir, "tool/late.yaml"), []byte(fixture("late", "echo")), 0o644); err != nil {
		t.Fatal(err)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="config reloaded" [^\n]*added=\[late\]`))
	// And one that finds an invalid file, which changes nothing else.
	if err := os.WriteFile(filepath.Join(dir, "tool/broken.yaml"), []byte("name: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.logs.waitFor(t, regexp.MustCompile(`msg="config reloaded: no change"`))

	for _, bad := range []string{"", "Bearer wrong"} {
		if resp, _ := getMetrics(t, p, bad); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /metrics with Authorization %q: %s, want 401", bad, resp.Status)
		}
	}
	resp, fams := getMetrics(t, p, "Bearer tok")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mcpmux_tool_calls_total", []string{"server", "echo", "tool", "echo", "outcome", "ok"}, 3},
		{"mcpmux_tool_calls_total", []string{"server", "echo", "tool", "env", "outcome", "refused"}, 1},
		{"mcpmux_tool_calls_total", []string{"server", "", "tool", "", "outcome", "unknown"}, 1},
		{"mcpmux_tool_call_duration_seconds", []string{"server", "echo"}, 3},
		{"mcpmux_tool_calls_in_flight", []string{"server", "echo"}, 0},
		{"mcpmux_rule_hits_total", []string{"kind", "corrected", "rule", "auto-correction"}, 1},
		{"mcpmux_rule_hits_total", []string{"kind", "refused", "rule", "tool_blacklist"}, 1},
		{"mcpmux_config_reloads_total", []string{"result", "applied"}, 1},
		{"mcpmux_config_reloads_total", []string{"result", "invalid"}, 1},
		{"mcpmux_server_state", []string{"server", "echo", "state", "up"}, 1},
		{"mcpmux_server_state", []string{"server", "late", "state", "up"}, 1},
		{"mcpmux_server_state", []string{"server", "echo", "state", "failed"}, 0},
		{"mcpmux_server_tools", []string{"server", "late"}, 6},
		{"mcpmux_server_restarts_total", []string{"server", "echo"}, 0},
	} {
		if got, ok := metricValue(fams, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := metricValue(fams, "mcpmux_tool_calls_total", "tool", "nothing"); ok {
		t.Error("a client-supplied tool name became a label value")
	}

	// A session counts from its initialized notification, which the
	// client does not wait for: poll.
	testkit.Eventually(t, `mcpmux_client_sessions{profile=""} is 1`, func() bool {
		_, fams := getMetrics(t, p, "Bearer tok")
		v, _ := metricValue(fams, "mcpmux_client_sessions", "profile", "")
		return v == 1
	})
}
