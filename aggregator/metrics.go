package aggregator

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/metrics"
)

// autoCorrectionRule names auto-correction in mcpmux_rule_hits_total.
const autoCorrectionRule = "auto-correction"

// blacklistRule names the tool blacklist in mcpmux_rule_hits_total.
const blacklistRule = "tool_blacklist"

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
	return func(ctx context.Context, req *mcp.InitializedRequest) {
		if req == nil || req.Session == nil {
			return
		}
		a.lists.clientCame(sessionFeatures(req.Session))
		cs := a.clients.get(ctx, req.Session)
		cs.whenEnded(a.metrics.SessionStarted(p.name))
		cs.mu.Lock()
		cs.initialized = true
		cs.listsAt = p.lists.generation()
		cs.mu.Unlock()
		a.sole.initialized(req.Session)
		a.clients.openOwnConnections(ctx, p, req)
	}
}
