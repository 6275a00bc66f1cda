package aggregator

import (
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/journal/replay"
)

// recording opens the journal and the replay the settings name, serves a
// replayed journal's catalog, and records the tool lists clients get.
// The pipeline records calls (journal.go) into the same journals and
// answers from the same replay.
//
// It holds only what it needs, given at construction (New), never
// *Aggregator.
type recording struct {
	log *slog.Logger
	// journal writes nothing unless the settings name a dir; frozen is the
	// replayed journal, appended to with replay.miss: record. Both are
	// the aggregator's, which the pipeline writes calls into.
	journal, frozen *journal.Journal
	// current is the replay the pipeline answers from (Aggregator.replay).
	current *atomic.Pointer[replay.Replay]
	// runIDOf is the run id a request names (forward.go).
	runIDOf func(meta mcp.Meta, extra *mcp.RequestExtra) string

	mu   sync.Mutex    // serializes apply's replay part
	spec config.Replay // what the replay was opened with; guarded by mu
}

// apply opens the journal and the replay the settings name. The journal
// follows every change; an unchanged replay keeps its state (how many of
// each call it answered), a changed one reads its journal anew.
func (r *recording) apply(s *config.Settings) {
	if j := s.Journal; j != nil {
		r.journal.Configure(j.Dir, int64(j.MaxBytes))
	} else {
		r.journal.Configure("", 0)
	}
	if rs := s.Replay; rs != nil && rs.Miss == config.ReplayMissRecord {
		// Never rotated: the replay keeps where each answer is.
		r.frozen.Configure(rs.From, math.MaxInt64)
	} else {
		r.frozen.Configure("", 0)
	}
	var spec config.Replay
	if s.Replay != nil {
		spec = *s.Replay
		spec.Catalog = "" // the same recording serves either way
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if spec == r.spec {
		return
	}
	r.spec = spec
	if spec.From == "" {
		r.current.Store(nil)
		return
	}
	start := time.Now()
	rp := replay.Open(replay.Options{Dir: spec.From, MissCalls: spec.Miss == config.ReplayMissCall, Record: spec.Miss == config.ReplayMissRecord})
	if err := rp.Err(); err != nil {
		r.log.Error("replay: cannot read the journal; every call is answered with this error", "from", spec.From, "error", err)
	} else {
		lines, skipped, calls := rp.Stats()
		r.log.Info("replay: journal read", "from", spec.From, "lines", lines, "calls", calls, "unreadable_lines", skipped, "recorded_servers", len(rp.Catalog()), "miss", spec.Miss, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	for _, err := range rp.SkippedFiles() {
		r.log.Error("replay: a file of the journal is not read", "from", spec.From, "error", err)
	}
	r.current.Store(rp)
}

// servers are the servers of the replayed journal's catalog, when the
// settings s serve it (replay.catalog: recorded), less any that the pool
// runs.
func (r *recording) servers(running map[string]bool, s *config.Settings) []ServerFeatures {
	rp := r.current.Load()
	if rp == nil || !s.ReplaysCatalog() {
		return nil
	}
	var out []ServerFeatures
	for _, rs := range rp.Catalog() {
		if !running[rs.Name] {
			out = append(out, ServerFeatures{Name: rs.Name, Prefix: rs.Prefix, Tools: rs.Tools})
		}
	}
	return out
}

// listed writes the tools a session was listed into its task's journal,
// when they differ from the task's latest.
func (r *recording) listed(p *profile, req *mcp.ListToolsRequest, v *view, tools []*Entry) {
	if !r.journal.On() {
		return
	}
	var meta mcp.Meta
	if req.Params != nil {
		meta = req.Params.Meta
	}
	r.journal.Catalog(journal.Header{
		Time: time.Now().UTC(), Task: r.runIDOf(meta, req.Extra), Session: sessionID(req.Session), Client: clientOf(req.Session), Profile: p.name,
	}, catalogOf(v, tools))
}
