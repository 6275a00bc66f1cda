package aggregator

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/front"
	"github.com/mcpmux/mcpmux/internal/testkit"
	"github.com/mcpmux/mcpmux/upstream"
)

// scrape reads /metrics of an HTTP front.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest("GET", url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// sample returns the value of the series of family name with exactly the
// given labels (histograms: the sample count), and whether it exists.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	return testkit.SeriesValue(fams[name], func(m *dto.Metric) bool {
		if len(m.Label) != len(labels) {
			return false
		}
		for _, l := range m.Label {
			if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
				return false
			}
		}
		return true
	})
}

func wantSample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) {
	t.Helper()
	if got, ok := sample(fams, name, labels); !ok || got != want {
		t.Errorf("%s%v = %v (present %v), want %v", name, labels, got, ok, want)
	}
}

// waitSample polls /metrics until the series has the value: sessions are
// counted when the server handles the client's initialized notification,
// which the client does not wait for.
func waitSample(t *testing.T, url, token, name string, labels map[string]string, want float64) {
	t.Helper()
	testkit.Await(t, fmt.Sprintf("%s%v is %v", name, labels, want), func() float64 {
		got, _ := sample(scrape(t, url, token), name, labels)
		return got
	}, func(got float64) bool { return got == want })
}

func calls(server, tool, outcome string) map[string]string {
	return map[string]string{"server": server, "tool": tool, "outcome": outcome}
}

func TestMetricsCountCallsSessionsAndRules(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := newHarness(t, map[string]*mcp.Server{
		"code": fixtureServer("code", map[string]mcp.ToolHandler{
			"run": echo("ran:"),
			"fail": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}}, nil
			},
			"hang": func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
			"block": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				close(started)
				<-release
				return &mcp.CallToolResult{}, nil
			},
			"download": echo("d:"),
		}),
	}, `tool_blacklist: [["code", "download"]]`, map[string]string{"code": "tool_timeouts: {hang: 20ms}\n"})
	srv := httptest.NewServer(h.serveHTTP(&front.Options{Tokens: front.NewTokens("s3cret")}))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %s, want 401", resp.Status)
	}

	cs := h.clientVersion(DefaultProfile, "2025-11-25") // a session, to count
	waitSample(t, srv.URL, "s3cret", "mcpmux_client_sessions", map[string]string{"profile": ""}, 1)
	call(t, cs, "code__run", map[string]any{"text": "x"})
	call(t, cs, "code__run", map[string]any{"text": "y"})
	call(t, cs, "code__fail", nil)
	call(t, cs, "code__hang", nil)
	call(t, cs, "code__download", nil)
	call(t, cs, "run", nil)            // auto-corrected
	call(t, cs, "no_such_tool", nil)   // unknown: no label from the client's name
	call(t, cs, "code__run", []int{1}) // bad arguments

	done := make(chan struct{})
	go func() {
		defer close(done)
		call(t, cs, "code__block", nil)
	}()
	<-started
	fams := scrape(t, srv.URL, "s3cret")
	wantSample(t, fams, "mcpmux_tool_calls_in_flight", map[string]string{"server": "code"}, 1)
	close(release)
	<-done

	fams = scrape(t, srv.URL, "s3cret")
	wantSample(t, fams, "mcpmux_tool_calls_total", calls("code", "run", "ok"), 3)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls("code", "fail", "error"), 1)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls("code", "hang", "timeout"), 1)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls("code", "download", "refused"), 1)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls("code", "run", "bad_arguments"), 1)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls("code", "block", "ok"), 1)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls("", "", "unknown"), 1)
	wantSample(t, fams, "mcpmux_tool_calls_in_flight", map[string]string{"server": "code"}, 0)
	wantSample(t, fams, "mcpmux_tool_call_duration_seconds", map[string]string{"server": "code"}, 6)
	wantSample(t, fams, "mcpmux_rule_hits_total", map[string]string{"kind": "corrected", "rule": "auto-correction"}, 1)
	wantSample(t, fams, "mcpmux_rule_hits_total", map[string]string{"kind": "refused", "rule": "tool_blacklist"}, 1)
	wantSample(t, fams, "mcpmux_server_state", map[string]string{"server": "code", "state": "up"}, 1)
	wantSample(t, fams, "mcpmux_server_state", map[string]string{"server": "code", "state": "failed"}, 0)
	if n := len(fams["mcpmux_server_state"].Metric); n != len(upstream.States) {
		t.Errorf("%d mcpmux_server_state series for one server, want one per state: %v", n, upstream.States)
	}
	wantSample(t, fams, "mcpmux_server_client_connections", map[string]string{"server": "code"}, 0)
	wantSample(t, fams, "mcpmux_server_tools", map[string]string{"server": "code"}, 5)
	wantSample(t, fams, "mcpmux_server_restarts_total", map[string]string{"server": "code"}, 0)
	wantSample(t, fams, "mcpmux_client_sessions_total", map[string]string{"profile": ""}, 1)
	for _, m := range fams["mcpmux_tool_calls_total"].Metric {
		for _, l := range m.Label {
			if l.GetValue() == "no_such_tool" {
				t.Errorf("a client-supplied name became a label: %v", m)
			}
		}
	}
	if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil {
		t.Error("no Go runtime or process metrics")
	}

	cs.Close()
	waitSample(t, srv.URL, "s3cret", "mcpmux_client_sessions", map[string]string{"profile": ""}, 0)
}
