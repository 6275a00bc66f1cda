package aggregator

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/upstream"
)

// autoCorrectionRule names auto-correction in mcpmux_rule_hits_total.
const autoCorrectionRule = "auto-correction"

// blacklistRule names the tool blacklist in mcpmux_rule_hits_total.
const blacklistRule = "tool_blacklist"

// Metrics returns the aggregator's metrics, served at /metrics.
func (a *Aggregator) Metrics() *metrics.Metrics { return a.metrics }

// RuleHit records that a rule acted on a call (see metrics.RuleHit): the
// hook for rewrite rules.
func (a *Aggregator) RuleHit(kind, rule string) { a.metrics.RuleHit(kind, rule) }

// resultOutcome is the outcome of an upstream call that answered.
func resultOutcome(isError bool) string {
	if isError {
		return metrics.OutcomeError
	}
	return metrics.OutcomeOK
}

// sessionInitialized counts a client session of p from its initialized
// notification until it ends.
func (a *Aggregator) sessionInitialized(p *profile) func(context.Context, *mcp.InitializedRequest) {
	return func(_ context.Context, req *mcp.InitializedRequest) {
		if req == nil || req.Session == nil {
			return
		}
		a.ends.on(req.Session, a.metrics.SessionStarted(p.name))
	}
}

// serverMetrics has the mcpmux_server_* metrics read the pool's servers at
// every scrape.
func serverMetrics(pool *upstream.Pool) *metrics.Options {
	states := make([]string, len(upstream.States))
	for i, s := range upstream.States {
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
