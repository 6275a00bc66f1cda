package main

import (
	"context"
	"maps"
	"slices"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/upstream"
)

// desired is the configuration the pool should run after a reload: each
// new snapshot's valid files, but a file that no longer parses keeps its
// previous version (Caddy-style: a bad edit never takes a working server
// away), and so does a broken mcpmux.yaml.
type desired struct {
	settings *config.Settings
	servers  []*config.Server
	failed   []*config.FileError // files whose previous version was kept (or that never worked)
}

// resolve computes what to run given the running state and a new snapshot.
func resolve(running *desired, snap *config.Snapshot) *desired {
	d := &desired{settings: snap.Settings, failed: snap.Errors}
	byName := map[string]*config.Server{}
	for _, s := range snap.Servers {
		byName[s.Name] = s
	}
	for _, fe := range snap.Errors {
		if running == nil {
			continue
		}
		if fe.File == running.settings.File && running.settings.File != "" {
			d.settings = running.settings
			continue
		}
		for _, old := range running.servers {
			if old.File == fe.File && byName[old.Name] == nil {
				byName[old.Name] = old
			}
		}
	}
	// A disabled server is gone on purpose, even if an old version lingers.
	for _, s := range snap.Disabled {
		delete(byName, s.Name)
	}
	if d.settings.ReplaysCatalog() {
		// The tools are the replayed journal's: no server is to run.
		return d
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		d.servers = append(d.servers, byName[name])
	}
	return d
}

// same reports whether d describes what running already runs.
func (d *desired) same(running *desired) bool {
	if running == nil || d.settings.Hash != running.settings.Hash || len(d.servers) != len(running.servers) {
		return false
	}
	for i, s := range d.servers {
		if s.Name != running.servers[i].Name || s.Hash != running.servers[i].Hash {
			return false
		}
	}
	return true
}

// reload applies a new snapshot: only the difference. Unchanged servers are
// not touched; settings apply to the next call without restarting anything.
func (in *instance) reload(ctx context.Context, snap *config.Snapshot) {
	maskSecrets(in.log, snap)
	// A change seen during start-up is applied right after it.
	select {
	case <-in.started:
	case <-ctx.Done():
		return
	}
	in.reloadMu.Lock()
	defer in.reloadMu.Unlock()
	d := resolve(in.running, snap)
	if in.tokens != nil {
		in.tokens.reload(d.settings)
	}
	for _, fe := range snap.Errors {
		if in.lastErrors[fe.Error()] {
			continue // already reported
		}
		in.log.Error("config file not applied; its previous version (if any) keeps running", "file", fe.File, "line", fe.Line, "error", fe.Err)
	}
	in.lastErrors = map[string]bool{}
	for _, fe := range snap.Errors {
		in.lastErrors[fe.Error()] = true
	}
	in.agg.SetInvalidFiles(snap.Errors)
	if d.same(in.running) {
		// Counted before it is logged, so that whoever reads the log line
		// finds the count.
		in.agg.Metrics().Reload(reloadResult(snap, false, upstream.Changes{}))
		in.log.Debug("config reloaded: no change")
		return
	}
	settingsChanged := d.settings.Hash != in.running.settings.Hash
	ch := in.pool.Apply(ctx, d.servers, d.settings.Timeout)
	// A restart that failed keeps the old version: remember it as running.
	for name := range ch.Failed {
		for i, s := range d.servers {
			if s.Name == name {
				d.servers[i] = in.running.server(name)
			}
		}
	}
	if settingsChanged {
		if in.mode != withSessions && d.settings.Stateless != in.running.settings.Stateless {
			in.log.Warn("stateless in mcpmux.yaml changed: it applies from the next start", "stateless_now", in.load.Stateless)
		}
		in.agg.SetSettings(d.settings)
	} else {
		in.agg.Sync()
	}
	in.running = d
	var started []*config.Server
	for _, name := range append(ch.Added, ch.Restarted...) {
		started = append(started, d.server(name))
	}
	in.explainNames(started, d.settings.Separator)
	attrs := []any{
		"added", ch.Added, "removed", ch.Removed, "restarted", ch.Restarted,
		"kept", len(ch.Kept), "settings_changed", settingsChanged, "invalid_files", len(snap.Errors),
	}
	for name, err := range ch.Failed {
		in.log.Error("server restart failed; the previous version keeps serving", "server", name, "error", err)
		attrs = append(attrs, "failed_"+name, err.Error())
	}
	in.agg.Metrics().Reload(reloadResult(snap, true, ch))
	in.log.Info("config reloaded", attrs...)
	releaseMemory()
}

// reloadResult is the result label of a reload in mcpmux_config_reloads_total.
func reloadResult(snap *config.Snapshot, applied bool, ch upstream.Changes) string {
	switch {
	case len(ch.Failed) > 0:
		return metrics.ReloadFailed
	case len(snap.Errors) > 0:
		return metrics.ReloadInvalid
	case applied:
		return metrics.ReloadApplied
	}
	return metrics.ReloadUnchanged
}

func (d *desired) server(name string) *config.Server {
	for _, s := range d.servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// watch applies every snapshot of the watcher until ctx ends.
func (in *instance) watch(ctx context.Context, w *config.Watcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case snap := <-w.Snapshots():
			in.reload(ctx, snap)
		}
	}
}
