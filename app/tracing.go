package app

import (
	"context"
	"encoding/json"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/tracing"
)

// applyTracing makes the tracing provider what s.Tracing (and the
// OTEL_* environment) describe, when that changed since the last call:
// the spans of requests in flight end on the provider they started on,
// which is flushed and shut down after them. A config that cannot be
// built keeps the current provider.
func (in *Instance) applyTracing(s *config.Settings) {
	key, _ := json.Marshal(s.Tracing)
	if in.tracingKey != nil && string(key) == *in.tracingKey {
		return
	}
	p, err := tracing.New(context.Background(), s.Tracing)
	if err != nil {
		in.log.Error("tracing not changed: its configuration cannot be used", "error", err)
		return
	}
	k := string(key)
	in.tracingKey = &k
	in.tracing.Swap(p, func(old *tracing.Provider, err error) {
		if err != nil {
			in.log.Warn("the previous tracing exporter did not flush its spans", "exporter", old.String(), "error", err)
		}
	})
	if p != nil {
		in.log.Info("tracing on", "exporter", p.String())
	}
}
