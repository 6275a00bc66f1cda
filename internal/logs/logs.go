// Package logs holds slog helpers shared by mcpmux's packages.
package logs

import (
	"context"
	"log/slog"
)

// QuietInfo returns log with Info records demoted to Debug. It is for the
// go-sdk's own logs, which report every session connecting and
// disconnecting at Info: noise next to mcpmux's logs. Warnings and errors
// keep their level.
func QuietInfo(log *slog.Logger) *slog.Logger { return slog.New(demote{log.Handler()}) }

type demote struct{ h slog.Handler }

func (d demote) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, level(l)) }

func (d demote) Handle(ctx context.Context, r slog.Record) error {
	r.Level = level(r.Level)
	return d.h.Handle(ctx, r)
}

func (d demote) WithAttrs(as []slog.Attr) slog.Handler { return demote{d.h.WithAttrs(as)} }
func (d demote) WithGroup(name string) slog.Handler    { return demote{d.h.WithGroup(name)} }

func level(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}
