package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.StartCall("s", "t").Done(OutcomeOK)
	m.StartCall("s", "t").Returned()
	m.CallAnswered("s", "t", OutcomeRefused)
	m.RuleHit(RuleFallback, "r")
	m.Reload(ReloadApplied)
	m.SessionStarted("p")()
	if m.Registry() != nil {
		t.Error("nil metrics have a registry")
	}
}

func TestServerMetricsAreReadAtScrapeTime(t *testing.T) {
	servers := []Server{{Name: "a", State: "failed", Restarts: 2, Tools: 3}}
	states := []string{"starting", "up", "restarting", "failed", "needs login", "stopped"}
	m := New(&Options{States: states, Servers: func() []Server { return servers }})
	m.Reload(ReloadApplied)
	m.Reload(ReloadInvalid)
	m.Reload(ReloadInvalid)
	want := `
# HELP mcpmux_config_reloads_total Config reloads by result: applied, unchanged, invalid (a file was invalid and kept its previous version), failed (a changed server did not come up).
# TYPE mcpmux_config_reloads_total counter
mcpmux_config_reloads_total{result="applied"} 1
mcpmux_config_reloads_total{result="invalid"} 2
# HELP mcpmux_server_restarts_total Times a tool server's connection was lost and restarted, since its current config was applied (a reload that changes the server starts it again from 0).
# TYPE mcpmux_server_restarts_total counter
mcpmux_server_restarts_total{server="a"} 2
# HELP mcpmux_server_state State of each configured tool server: 1 for its current state, 0 for the others.
# TYPE mcpmux_server_state gauge
mcpmux_server_state{server="a",state="failed"} 1
mcpmux_server_state{server="a",state="needs login"} 0
mcpmux_server_state{server="a",state="restarting"} 0
mcpmux_server_state{server="a",state="starting"} 0
mcpmux_server_state{server="a",state="stopped"} 0
mcpmux_server_state{server="a",state="up"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "mcpmux_config_reloads_total", "mcpmux_server_restarts_total", "mcpmux_server_state"); err != nil {
		t.Error(err)
	}
	servers[0].State = "up"
	servers = append(servers, Server{Name: "b", State: "up"})
	if n := testutil.CollectAndCount(m.Registry(), "mcpmux_server_state"); n != 12 {
		t.Errorf("%d mcpmux_server_state series for 2 servers, want 12", n)
	}
}

// Returned and CallAnswered, as the aggregator records a call whose
// outcome it settles apart, count what Done counts.
func TestReturnedThenAnsweredCountsAsDone(t *testing.T) {
	done, apart := New(nil), New(nil)
	done.StartCall("s", "t").Done(OutcomeTimeout)
	running := apart.StartCall("s", "t")
	if got := testutil.ToFloat64(apart.inFlight.WithLabelValues("s")); got != 1 {
		t.Errorf("in flight before Returned: %v, want 1", got)
	}
	running.Returned()
	apart.CallAnswered("s", "t", OutcomeTimeout)
	for _, m := range []*Metrics{done, apart} {
		if got := testutil.ToFloat64(m.inFlight.WithLabelValues("s")); got != 0 {
			t.Errorf("in flight: %v, want 0", got)
		}
		if got := testutil.ToFloat64(m.calls.WithLabelValues("s", "t", OutcomeTimeout)); got != 1 {
			t.Errorf("calls: %v, want 1", got)
		}
		if got := testutil.CollectAndCount(m.latency); got != 1 {
			t.Errorf("latency series: %v, want 1", got)
		}
	}
}
