package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmux/mcpmux/upstream"
)

// states are the values of the state label of mcpmux_server_state: every
// state is exported for every server (1 for the current one, 0 for the
// others), so that a query need not know which ones exist.
var states = []upstream.State{
	upstream.StateStarting, upstream.StateUp, upstream.StateRestarting, upstream.StateFailed, upstream.StateNeedsLogin, upstream.StateStopped,
}

var (
	stateDesc = prometheus.NewDesc("mcpmux_server_state",
		"State of each configured tool server: 1 for its current state, 0 for the others.",
		[]string{"server", "state"}, nil)
	restartsDesc = prometheus.NewDesc("mcpmux_server_restarts_total",
		"Times a tool server's connection was lost and restarted, since its current config was applied (a reload that changes the server starts it again from 0).",
		[]string{"server"}, nil)
	toolsDesc = prometheus.NewDesc("mcpmux_server_tools",
		"Tools a tool server lists.",
		[]string{"server"}, nil)
	connsDesc = prometheus.NewDesc("mcpmux_server_client_connections",
		"Open per-client connections of a session: per-client server.",
		[]string{"server"}, nil)
)

// serverCollector reads the servers' statuses at scrape time: they live in
// the pool, which stays the one place that knows them.
type serverCollector struct {
	statuses func() []upstream.Status
}

var _ prometheus.Collector = (*serverCollector)(nil)

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stateDesc
	ch <- restartsDesc
	ch <- toolsDesc
	ch <- connsDesc
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.statuses() {
		for _, s := range states {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, st.Name, string(s))
		}
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(st.Restarts), st.Name)
		ch <- prometheus.MustNewConstMetric(toolsDesc, prometheus.GaugeValue, float64(st.Tools), st.Name)
		ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(len(st.Connections)), st.Name)
	}
}
