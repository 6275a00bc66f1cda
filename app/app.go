// Package app is one running mcpmux: it loads the config directory, builds
// the pool of tool servers and the aggregator that serves their tools,
// starts the servers, applies each reload as a difference (desired.go,
// reload.go), serves stdio or Streamable HTTP (stdio.go, http.go: the
// engine behind package front), and shuts down in order (shutdown.go).
//
// The command line (package cli) makes one Instance per command that needs
// servers: serving, check and tools.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/aggregator"
	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/front"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/internal/reaper"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/oauth"
	"github.com/mcpmux/mcpmux/replica"
	"github.com/mcpmux/mcpmux/tracing"
	"github.com/mcpmux/mcpmux/upstream"
)

// Mode says whether an instance's clients have sessions.
type Mode int

const (
	WithSessions     Mode = iota // stdio, check, tools
	SessionsByConfig             // --http: stateless if mcpmux.yaml says stateless: true
	Stateless                    // --http --stateless
)

// Options configure an Instance. Dir and Log are required.
type Options struct {
	// Dir is the config directory.
	Dir string
	// RunID is the evaluation task id of calls that name none themselves (--task-id).
	RunID string
	Mode  Mode
	// Log is where everything goes, through a masker (logs.Masked) that
	// New and reloads teach the config's secrets.
	Log *slog.Logger
	// Mask is Log's masker. It also hides the secrets in what is not
	// logged: /healthz, results, the journal, errors quoting a child's
	// stderr. Nil masks nothing.
	Mask *logs.Masker
	// Version is how mcpmux introduces itself to clients and servers.
	Version string
	// Replicas signs parked calls' states and forwards retries between
	// replicas (package replica); nil signs with a key of this process.
	Replicas *replica.Set
}

// Instance is one running mcpmux: its configuration, pool and aggregator.
type Instance struct {
	log     *slog.Logger
	mask    *logs.Masker // see Options.Mask
	dir     string
	snap    *config.Snapshot // as loaded at start
	pool    *upstream.Pool
	agg     *aggregator.Aggregator
	metrics *metrics.Metrics

	started    chan struct{}   // closed when Start is done
	reloadMu   sync.Mutex      // one start or reload at a time
	running    *desired        // what the pool runs; guarded by reloadMu
	lastErrors map[string]bool // file errors already logged; guarded by reloadMu
	front      *front.Front    // the HTTP front, reloaded with the rest; nil until ListenHTTP; guarded by reloadMu
	reaper     *reaper.Reaper  // ends the children's groups if mcpmux is killed; nil if it could not start
	mode       Mode
	load       *config.Options // how every snapshot is loaded; fixed at start
	closeOnce  sync.Once
	tracing    *tracing.Switch // the span exporter of tracing.go
	tracingKey *string         // the tracing config it was built from; guarded by reloadMu
	replicas   *replica.Set    // see Options.Replicas
}

// New loads the config directory and builds the pool and the aggregator;
// no server is started yet (Start). Only an unreadable directory is an
// error: bad files are logged and skipped.
func New(opts *Options) (*Instance, error) {
	log, mask, mode := opts.Log, opts.Mask, opts.Mode
	load := &config.Options{Stateless: mode == Stateless}
	snap, err := config.Load(opts.Dir, load)
	if err == nil && mode == SessionsByConfig && snap.Settings.Stateless {
		// Read again, now refusing the servers that need sessions.
		load.Stateless = true
		snap, err = config.Load(opts.Dir, load)
	}
	if err != nil {
		return nil, err
	}
	MaskSecrets(mask, snap)
	in := &Instance{replicas: opts.Replicas, log: log, mask: mask, dir: opts.Dir, snap: snap, lastErrors: map[string]bool{}, started: make(chan struct{}), mode: mode, load: load}
	for _, fe := range snap.Errors {
		in.lastErrors[fe.Error()] = true // reloads report only new ones
	}
	in.reaper = startReaper(log)
	in.pool = upstream.NewPool(&upstream.Options{
		Tokens:         TokenStore(opts.Dir, log, mask),
		Groups:         groupTracker(in.reaper),
		Logger:         log,
		Mask:           mask,
		ClientInfo:     &mcp.Implementation{Name: "mcpmux", Version: opts.Version},
		ConnectTimeout: snap.Settings.ConnectTimeout,
		ManyClients:    mode == SessionsByConfig && !load.Stateless,
		MaxResultBytes: func() config.Size { return in.agg.Settings().MaxResultBytes },
	})
	in.metrics = metrics.New(upstream.MetricsOf(in.pool))
	in.tracing = &tracing.Switch{}
	in.applyTracing(snap.Settings)
	in.agg = aggregator.New(&aggregator.Options{
		Pool:      in.pool,
		Metrics:   in.metrics,
		Settings:  snap.Settings,
		Logger:    log,
		Mask:      mask,
		Version:   opts.Version,
		RunID:     opts.RunID,
		Stateless: load.Stateless,
		Tracing:   in.tracing,
		Replicas:  opts.Replicas,
	})
	in.agg.SetInvalidFiles(snap.Errors)
	in.explainNames(snap.Servers, snap.Settings.Separator)
	return in, nil
}

// Snapshot is the configuration as loaded by New.
func (in *Instance) Snapshot() *config.Snapshot { return in.snap }

// Pool is the instance's tool servers.
func (in *Instance) Pool() *upstream.Pool { return in.pool }

// Aggregator is the MCP server that serves the pool's tools.
func (in *Instance) Aggregator() *aggregator.Aggregator { return in.agg }

// NameNotes explains the tool names of the servers whose names are no
// valid tool-name prefix (see aggregator.PrefixNote), one line each.
func NameNotes(servers []*config.Server, sep string) []string {
	var notes []string
	for _, s := range servers {
		if note := aggregator.PrefixNote(s.NamePrefix(), sep); note != "" {
			notes = append(notes, fmt.Sprintf("server %q: %s", s.Name, note))
		}
	}
	return notes
}

// explainNames logs NameNotes for servers.
func (in *Instance) explainNames(servers []*config.Server, sep string) {
	for _, note := range NameNotes(servers, sep) {
		in.log.Warn("tool names with a hash: " + note)
	}
}

// LogFileErrors logs the config files that were skipped as invalid. check
// reports them itself.
func (in *Instance) LogFileErrors() {
	for _, fe := range in.snap.Errors {
		in.log.Error("config file skipped", "file", fe.File, "line", fe.Line, "error", fe.Err)
	}
	for _, fe := range in.snap.Offline {
		in.log.Debug("replay: server file not read; catalog: recorded starts no server", "file", fe.File, "reason", fe.Err)
	}
}

// Start starts every configured server in parallel, waits for each one's
// first connection attempt, and publishes the catalog. Call it once;
// reloads wait for it.
func (in *Instance) Start(ctx context.Context) {
	in.reloadMu.Lock()
	defer in.reloadMu.Unlock()
	defer close(in.started)
	start := time.Now()
	in.running = resolve(nil, in.snap)
	ch := in.pool.Apply(ctx, in.running.servers, in.running.settings.Timeout)
	in.agg.Sync()
	in.agg.MarkReady()
	up := 0
	for _, st := range in.pool.Statuses() {
		if st.State == upstream.StateUp {
			up++
		}
	}
	tools, _ := in.agg.Tools(aggregator.DefaultProfile)
	in.log.Info("servers started", "up", up, "configured", len(ch.Added), "tools", len(tools), "elapsed", time.Since(start).Round(time.Millisecond))
	releaseMemory()
}

// releaseMemory collects and returns to the system what starting or
// reloading servers left behind (their lists as they were read, decoded
// and encoded again): the collector's headroom (cli/gc.go) would
// otherwise keep it, and an idle mcpmux never collects.
func releaseMemory() { debug.FreeOSMemory() }

// Close stops every server, giving running calls up to grace to finish,
// and then the reaper, which has nothing left to end. Only the first
// Close (or shutdown of a front) does anything.
func (in *Instance) Close(grace time.Duration) {
	in.closeBy(time.Now().Add(grace+10*time.Second), grace)
}

// closeBy is Close for a shutdown whose grace began earlier (an HTTP
// drain): running calls may go on until deadline, and those cut short are
// told the whole grace they had.
func (in *Instance) closeBy(deadline time.Time, grace time.Duration) {
	in.closeOnce.Do(func() {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		in.pool.Close(ctx, grace)
		in.reaper.Close()
		if err := in.tracing.Close(ctx); err != nil {
			in.log.Warn("tracing: spans not flushed at exit", "error", err)
		}
	})
}

// TokenStore is the store of the OAuth tokens of servers with auth: oauth,
// in the state directory ($MCPMUX_STATE_DIR, else $XDG_STATE_HOME/mcpmux),
// never in the config directory dir: the one that serving and mcpmux
// login share. mask is the masker of log.
func TokenStore(dir string, log *slog.Logger, mask *logs.Masker) *oauth.Store {
	return oauth.NewStore("", &oauth.StoreOptions{ConfigDir: dir, Mask: mask, Logger: log})
}

// MaskSecrets teaches mask, the logger's masker (see logs.Masked), the
// secrets of a snapshot, before anything from it is started or logged.
func MaskSecrets(mask *logs.Masker, snap *config.Snapshot) {
	mask.Add(snap.Secrets()...)
}

// startReaper starts the process that ends the children's process groups
// should mcpmux be killed (see internal/reaper). Without it mcpmux still
// runs: a killed mcpmux then leaves its grandchildren behind.
func startReaper(log *slog.Logger) *reaper.Reaper {
	self, err := os.Executable()
	if err == nil {
		var r *reaper.Reaper
		if r, err = reaper.Start(self, os.Stderr, log); err == nil {
			return r
		}
	}
	log.Warn("child reaper not started: should mcpmux be killed, what its children started may outlive it", "error", err)
	return nil
}

// groupTracker is r as the pool's GroupTracker; none if r is nil.
func groupTracker(r *reaper.Reaper) upstream.GroupTracker {
	if r == nil {
		return nil
	}
	return r
}
