package rewrite

import "log/slog"

// Actions a rule takes, as logged.
const (
	actionRefuse   = "refuse"
	actionRedact   = "redact"
	actionFallback = "fallback"
)

// record notes that a rule acted on a call: the one place every rule hit
// goes through (logs now; a metrics counter belongs here too).
func record(env *Env, rule, action string, c *Call, attrs ...any) {
	log := slog.New(slog.DiscardHandler)
	if env != nil && env.Log != nil {
		log = env.Log
	}
	log.Info("rewrite rule applied", append([]any{"rule", rule, "action", action, "tool", c.Name, "session", c.Session, "task", c.Task}, attrs...)...)
}
