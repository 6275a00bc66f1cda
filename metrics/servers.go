package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Server is a tool server as the mcpmux_server_* metrics show it.
type Server struct {
	Name     string
	State    string // one of Options.States
	Restarts int
	Tools    int
	// Connections counts the open per-client connections (session:
	// per-client).
	Connections int
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

// serverCollector reads the servers at scrape time (see Options.Servers).
type serverCollector struct {
	servers func() []Server
	states  []string
}

var _ prometheus.Collector = (*serverCollector)(nil)

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stateDesc
	ch <- restartsDesc
	ch <- toolsDesc
	ch <- connsDesc
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	for _, srv := range c.servers() {
		for _, s := range c.states {
			v := 0.0
			if srv.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, srv.Name, s)
		}
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(srv.Restarts), srv.Name)
		ch <- prometheus.MustNewConstMetric(toolsDesc, prometheus.GaugeValue, float64(srv.Tools), srv.Name)
		ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(srv.Connections), srv.Name)
	}
}
