package aggregator

import (
	"context"
	"errors"

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
func resultOutcome(res *mcp.CallToolResult) string {
	if res.IsError {
		return metrics.OutcomeError
	}
	return metrics.OutcomeOK
}

// failureOutcome is the outcome of an upstream call that failed; it tells
// the cases apart in the order callFailure does.
func failureOutcome(ctx, cctx context.Context, err error) string {
	var (
		unavailable *upstream.UnavailableError
		lost        *upstream.LostError
		rpc         *upstream.RPCError
		atLimit     *upstream.LimitError
		resultLost  *upstream.ResultLostError
	)
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return metrics.OutcomeTimeout
	case ctx.Err() != nil:
		return metrics.OutcomeCancelled
	case errors.As(err, &atLimit):
		return metrics.OutcomeAtLimit
	case errors.As(err, &unavailable):
		return metrics.OutcomeUnavailable
	case errors.As(err, &lost), errors.As(err, &resultLost):
		return metrics.OutcomeLost
	case errors.As(err, &rpc):
		return metrics.OutcomeRejected
	}
	return metrics.OutcomeFailed
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
