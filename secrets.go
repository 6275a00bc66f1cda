package main

import (
	"log/slog"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
)

// maskSecrets teaches the logger's masker (see commonFlags.logger) the
// secrets of a snapshot, before anything from it is started or logged.
func maskSecrets(log *slog.Logger, snap *config.Snapshot) {
	logs.MaskerOf(log).Add(snap.Secrets()...)
}
