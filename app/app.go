package main

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
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/internal/reaper"
	"github.com/mcpmux/mcpmux/oauth"
	"github.com/mcpmux/mcpmux/upstream"
)

// instance is one running mcpmux: its configuration, pool and aggregator.
// The serve, check and tools commands all build one.
type instance struct {
	log  *slog.Logger
	snap *config.Snapshot // as loaded at start
	pool *upstream.Pool
	agg  *aggregator.Aggregator

	started    chan struct{}   // closed when startServers is done
	reloadMu   sync.Mutex      // one start or reload at a time
	running    *desired        // what the pool runs; guarded by reloadMu
	lastErrors map[string]bool // file errors already logged
	tokens     *tokenRotation  // HTTP tokens from a file, re-read on reload; nil otherwise
	reaper     *reaper.Reaper  // ends the children's groups if mcpmux is killed; nil if it could not start
	mode       sessionMode
	load       *config.Options // how every snapshot is loaded; fixed at start
}

// sessionMode says whether an instance's clients have sessions.
type sessionMode int

const (
	withSessions     sessionMode = iota // stdio, check, tools
	sessionsByConfig                    // --http: stateless if mcpmux.yaml says stateless: true
	stateless                           // --http --stateless
)

// newInstance loads the config directory and builds the pool and the
// aggregator; no server is started yet. Only an unreadable directory is an
// error: bad files are logged and skipped.
func newInstance(dir, task string, mode sessionMode, log *slog.Logger) (*instance, error) {
	load := &config.Options{Stateless: mode == stateless}
	snap, err := config.Load(dir, load)
	if err == nil && mode == sessionsByConfig && snap.Settings.Stateless {
		// Read again, now refusing the servers that need sessions.
		load.Stateless = true
		snap, err = config.Load(dir, load)
	}
	if err != nil {
		return nil, err
	}
	maskSecrets(log, snap)
	in := &instance{log: log, snap: snap, lastErrors: map[string]bool{}, started: make(chan struct{}), mode: mode, load: load}
	for _, fe := range snap.Errors {
		in.lastErrors[fe.Error()] = true // reloads report only new ones
	}
	in.reaper = startReaper(log)
	in.pool = upstream.NewPool(&upstream.Options{
		Tokens:         tokenStore(dir, log),
		Groups:         groupTracker(in.reaper),
		Logger:         log,
		ClientInfo:     &mcp.Implementation{Name: "mcpmux", Version: buildVersion()},
		ConnectTimeout: snap.Settings.ConnectTimeout,
	})
	in.agg = aggregator.New(&aggregator.Options{
		Pool:      in.pool,
		Settings:  snap.Settings,
		Logger:    log,
		Version:   buildVersion(),
		TaskID:    task,
		Stateless: load.Stateless,
	})
	in.agg.SetInvalidFiles(snap.Errors)
	in.explainNames(snap.Servers, snap.Settings.Separator)
	return in, nil
}

// nameNotes explains the tool names of the servers whose names are no
// valid tool-name prefix (see aggregator.PrefixNote), one line each.
func nameNotes(servers []*config.Server, sep string) []string {
	var notes []string
	for _, s := range servers {
		if note := aggregator.PrefixNote(s.NamePrefix(), sep); note != "" {
			notes = append(notes, fmt.Sprintf("server %q: %s", s.Name, note))
		}
	}
	return notes
}

// explainNames logs nameNotes for servers.
func (in *instance) explainNames(servers []*config.Server, sep string) {
	for _, note := range nameNotes(servers, sep) {
		in.log.Warn("tool names with a hash: " + note)
	}
}

// logFileErrors logs the config files that were skipped as invalid. check
// reports them itself.
func (in *instance) logFileErrors() {
	for _, fe := range in.snap.Errors {
		in.log.Error("config file skipped", "file", fe.File, "line", fe.Line, "error", fe.Err)
	}
}

// startServers starts every configured server in parallel, waits for each
// one's first connection attempt, and publishes the catalog.
func (in *instance) startServers(ctx context.Context) {
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
// and encoded again): the collector's headroom (gc.go) would otherwise
// keep it, and an idle mcpmux never collects.
func releaseMemory() { debug.FreeOSMemory() }

// close stops every server, giving running calls up to grace to finish,
// and then the reaper, which has nothing left to end.
func (in *instance) close(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace+10*time.Second)
	defer cancel()
	in.pool.Close(ctx, grace)
	in.reaper.Close()
}

// closeBy is close for a shutdown whose grace began earlier (an HTTP
// drain): running calls may go on until deadline, and those cut short are
// told the whole grace they had.
func (in *instance) closeBy(deadline time.Time, grace time.Duration) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	in.pool.Close(ctx, grace)
	in.reaper.Close()
}

// tokenStore is the store of the OAuth tokens of servers with auth: oauth,
// in the state directory ($MCPMUX_STATE_DIR, else $XDG_STATE_HOME/mcpmux),
// never in the config directory dir.
func tokenStore(dir string, log *slog.Logger) *oauth.Store {
	return oauth.NewStore("", &oauth.StoreOptions{ConfigDir: dir, Mask: logs.MaskerOf(log), Logger: log})
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
