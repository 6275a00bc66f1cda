package aggregator

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/tracing"
)

// What the pipeline's steps decide about a call, and the one place it is
// recorded.
//
// A step (route, rules before, run, unknown-tool retry) records nothing
// itself: it returns its result and an outcome, which call hands to
// settle as soon as the step is over, and settle counts it in the
// metrics, notes it on the call's span and its journal record. Settling
// each step's outcome when the step ends, not all of them when the call
// ends, keeps the journal line's order: a fallback's call, which rules
// after make, is recorded after the call it replaces. When the call is
// over, settle ends it: its span is marked with its result (and a
// fallback's span ended) and the client's call writes its journal line.
// A rule's action is settled as the rule acts (ruleCall's OnHit), in the
// rules' order. The meta tools count their calls themselves, in one
// place (metaTools.call, meta.go).

// outcome is what one step decided about a call. Its zero value decides
// nothing.
type outcome struct {
	// label is the call's outcome, a metrics.Outcome*: counted in
	// mcpmux_tool_calls_total under server and tool, and the span's
	// mcpmux.outcome. "" counts nothing.
	label        string
	server, tool string // a configured server and tool, or "": never a name the client made up
	// failed notes label on the journal line as the call's failure, with
	// timeout, the limit a timeout ran into.
	failed  bool
	timeout time.Duration
	// route is where the step sent the call, for the journal line and the
	// span; nil if it sent it nowhere.
	route *routing
	// hit is a rule's action on the call: a rewrite rule's (ruleCall), or
	// a built-in rule's refusal (tool_blacklist, pin, tool_pinning).
	hit ruleHit
	// corrected counts an auto-correction in mcpmux_rule_hits_total.
	corrected bool
	// answer is what a run step answered, for the journal; nil for none,
	// and without a journal.
	answer *answer
	// price is what the call of a priced tool costs (cost: or tool_costs:
	// of its server), free the reason it cost nothing ("replayed").
	price *config.Price
	free  string
}

// routing is where a call went: the server, the exposed name
// auto-correction chose instead of the one called (if it did), and what
// changed in the tool since it was pinned (pin.on_change: warn, or a
// quarantined tool).
type routing struct {
	server, correctedTo, drift string
}

// ruleHit is an action of a rule on a call: rule names it (the zero
// ruleHit none), action is a rewrite.Action*, which is also its kind in
// mcpmux_rule_hits_total (metrics.Rule*).
type ruleHit struct {
	rule, action string
}

// answer is a run step's answer for the journal: the tool (exposed name),
// the arguments, the result as encoded then, and whether a replay gave it.
type answer struct {
	tool     string
	args     json.RawMessage
	result   json.RawMessage
	replayed bool
}

// answered is the outcome of a call answered under label without being
// routed (labels server and tool may still name what it was meant for).
func answered(label, server, tool string) outcome {
	return outcome{label: label, server: server, tool: tool}
}

// failedAs is the outcome of a call that failed (label) before or while
// its server was called: counted, and noted on the journal line.
func failedAs(label, server, tool string, timeout time.Duration) outcome {
	return outcome{label: label, server: server, tool: tool, failed: true, timeout: timeout}
}

// How a call ends once the pipeline is done with it (settle).
type ending int

const (
	// endsWithCaller: a call mcpmux__call_tool made for its caller, whose
	// call ends with it.
	endsWithCaller ending = iota
	// endsClientCall: a client's tools/call. Its span, the request's, is
	// marked with the result (traced ends it) and its journal line is
	// written.
	endsClientCall
	// endsFallback: a fallback's call, whose span is its own: marked with
	// the result and ended. Its answers are on the client's call's line.
	endsFallback
)

// settle records out, what a step decided about c, and, once the pipeline
// is done with c (ended, the result the caller gets, is not nil), ends c
// as c.ends says. It is the only place the pipeline counts a call's
// outcome, sets its span's outcome and writes on its journal record.
func (pl *pipeline) settle(ctx context.Context, c *toolCall, out outcome, ended *result) {
	if out.label != "" {
		pl.metrics.CallAnswered(out.server, out.tool, out.label)
		c.span.Set("mcpmux.outcome", out.label)
	}
	if r := out.route; r != nil {
		c.rec.Routed(r.server, r.correctedTo)
		if r.drift != "" {
			c.rec.Drifted(r.drift)
		}
		c.span.Set("mcpmux.server", r.server)
		c.span.Set("mcpmux.corrected_to", r.correctedTo)
	}
	if h := out.hit; h.rule != "" {
		pl.metrics.RuleHit(h.action, h.rule)
		c.rec.Hit(h.rule, h.action)
		c.span.Set("mcpmux.rule", h.rule)
		c.span.Event("mcpmux.rule", "action", h.action)
	}
	if out.corrected {
		pl.metrics.RuleHit(metrics.RuleCorrected, autoCorrectionRule)
	}
	if out.failed {
		c.rec.Failed(out.label, out.timeout)
	}
	if a := out.answer; a != nil {
		c.rec.Answered(a.tool, a.args, a.result, a.replayed)
	}
	if p := out.price; p != nil {
		if out.free == "" {
			pl.metrics.Charged(out.server, p.Currency, p.PerCall)
		}
		c.rec.Charged(p.PerCall, p.Currency, out.free)
	}
	if ended == nil {
		return
	}
	switch c.ends {
	case endsClientCall:
		traceResult(c.span, ended)
		if c.rec != nil {
			_, span := tracing.StartInternal(ctx, "mcpmux.journal")
			c.rec.End(ended.journaled(), ended.isError())
			span.End("", "")
		}
	case endsFallback:
		traceResult(c.span, ended)
		c.span.End("", "")
	}
}

// charged is out with the price of a call of e on a server configured as
// cfg, free the reason it cost nothing ("replayed", "" if it did cost).
func (out outcome) charged(cfg *config.Server, e *Entry, free string) outcome {
	if cfg != nil {
		out.price, out.free = cfg.CallPrice(e.Tool), free
	}
	return out
}
