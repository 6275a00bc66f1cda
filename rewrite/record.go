package rewrite

import "log/slog"

// Actions a rule takes on a call, as logged and passed to Env.OnHit. They
// read like the kinds of mcpmux_rule_hits_total.
const (
	ActionRefused  = "refused"  // the call was answered with the rule's message
	ActionRedacted = "redacted" // blocked URLs were removed from the result
	ActionFallback = "fallback" // the fallback tool was called (outcome used or failed)
)

// record notes that a rule acted on a call: the one place every rule hit
// goes through, to the log and to Env.OnHit (metrics).
func record(env *Env, rule, action string, c *Call, attrs ...any) {
	if env == nil {
		return
	}
	if env.OnHit != nil {
		env.OnHit(action, rule)
	}
	if env.Log != nil {
		env.Log.Info("rewrite rule applied", append([]any{"rule", rule, "action", action, "tool", c.Name, "session", c.Session, "task", c.RunID}, attrs...)...)
	}
}

// logger is env's log, or one that discards.
func (env *Env) logger() *slog.Logger {
	if env == nil || env.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return env.Log
}
