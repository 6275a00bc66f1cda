package upstream

import "github.com/mcpmux/mcpmux/metrics"

// MetricsOf has the mcpmux_server_* metrics read the pool's servers at
// every scrape: pass it to metrics.New.
func MetricsOf(pool *Pool) *metrics.Options {
	states := make([]string, len(States))
	for i, s := range States {
		states[i] = string(s)
	}
	return &metrics.Options{States: states, Servers: func() []metrics.Server {
		statuses := pool.Statuses()
		servers := make([]metrics.Server, len(statuses))
		for i, st := range statuses {
			servers[i] = metrics.Server{Name: st.Name, State: string(st.State), Restarts: st.Restarts, Tools: st.Tools, Connections: len(st.Connections)}
		}
		return servers
	}}
}
