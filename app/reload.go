package app

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/upstream"
)

// Reload applies a new snapshot: only the difference. Unchanged servers are
// not touched; settings apply to the next call without restarting anything.
func (in *Instance) Reload(ctx context.Context, snap *config.Snapshot) {
	MaskSecrets(in.mask, snap)
	// A change seen during start-up is applied right after it.
	select {
	case <-in.started:
	case <-ctx.Done():
		return
	}
	in.reloadMu.Lock()
	defer in.reloadMu.Unlock()
	d := resolve(in.running, snap)
	if in.front != nil {
		// Last, once the aggregator has the settings the front reads; and
		// also when nothing else changed, for a rotated token file.
		defer in.front.Reload(d.settings)
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
		in.metrics.Reload(reloadResult(snap, false, upstream.Changes{}))
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
		if in.mode != WithSessions && d.settings.Stateless != in.running.settings.Stateless {
			in.log.Warn("stateless in mcpmux.yaml changed: it applies from the next start", "stateless_now", in.load.Stateless)
		}
		in.agg.SetSettings(d.settings)
		in.applyTracing(d.settings)
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
	in.metrics.Reload(reloadResult(snap, true, ch))
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

// follow reloads the config on SIGHUP and, if watch is set, on every
// change in the directory, until ctx ends. Reloads wait for Start.
func (in *Instance) follow(ctx context.Context, watch bool) error {
	// Without a watcher, SIGHUP reads the directory itself; with one, it
	// asks the watcher for a snapshot now.
	rescan := func() {
		snap, err := config.Load(in.dir, in.load)
		if err != nil {
			in.log.Error("config directory unreadable; keeping the running configuration", "error", err)
			return
		}
		in.Reload(ctx, snap)
	}
	if watch {
		w, err := config.Watch(ctx, in.dir, &config.WatchOptions{Logger: in.log, Load: in.load})
		if err != nil {
			return err
		}
		rescan = w.Rescan
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case snap := <-w.Snapshots():
					in.Reload(ctx, snap)
				}
			}
		}()
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				in.log.Info("SIGHUP: reloading the config")
				rescan()
			}
		}
	}()
	return nil
}
