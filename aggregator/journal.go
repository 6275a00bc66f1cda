package aggregator

import (
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/journal/replay"
	"github.com/mcpmux/mcpmux/metrics"
)

// The pipeline's hooks for the journal and replay (mcpmux.yaml's journal
// and replay; packages journal and journal/replay). A client's call is
// recorded from its entry (clientCall) to its end, settle noting on c.rec
// what each step decided (outcome.go); replay answers in the run step, so
// that everything else the pipeline does applies to a replayed call too.

// applyRecording opens the journal and the replay the settings name. The
// journal follows every change; an unchanged replay keeps its state (how
// many of each call it answered), a changed one reads its journal anew.
func (a *Aggregator) applyRecording(s *config.Settings) {
	if j := s.Journal; j != nil {
		a.journal.Configure(j.Dir, int64(j.MaxBytes))
	} else {
		a.journal.Configure("", 0)
	}
	if r := s.Replay; r != nil && r.Miss == config.ReplayMissRecord {
		// Never rotated: the replay keeps where each answer is.
		a.frozen.Configure(r.From, math.MaxInt64)
	} else {
		a.frozen.Configure("", 0)
	}
	var spec config.Replay
	if s.Replay != nil {
		spec = *s.Replay
		spec.Catalog = "" // the same recording serves either way
	}
	a.replayMu.Lock()
	defer a.replayMu.Unlock()
	if spec == a.replaySpec {
		return
	}
	a.replaySpec = spec
	if spec.From == "" {
		a.replay.Store(nil)
		return
	}
	start := time.Now()
	rp := replay.Open(replay.Options{Dir: spec.From, MissCalls: spec.Miss == config.ReplayMissCall, Record: spec.Miss == config.ReplayMissRecord})
	if err := rp.Err(); err != nil {
		a.log.Error("replay: cannot read the journal; every call is answered with this error", "from", spec.From, "error", err)
	} else {
		lines, skipped, calls := rp.Stats()
		a.log.Info("replay: journal read", "from", spec.From, "lines", lines, "calls", calls, "unreadable_lines", skipped, "recorded_servers", len(rp.Catalog()), "miss", spec.Miss, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	for _, err := range rp.SkippedFiles() {
		a.log.Error("replay: a file of the journal is not read", "from", spec.From, "error", err)
	}
	a.replay.Store(rp)
}

// recordedServers are the servers of the replayed journal's catalog, when
// the settings serve it (replay.catalog: recorded), less any that the pool
// runs.
func (a *Aggregator) recordedServers(running map[string]bool) []ServerFeatures {
	rp := a.replay.Load()
	if rp == nil || !a.settings.ReplaysCatalog() {
		return nil
	}
	var out []ServerFeatures
	for _, s := range rp.Catalog() {
		if !running[s.Name] {
			out = append(out, ServerFeatures{Name: s.Name, Prefix: s.Prefix, Tools: s.Tools})
		}
	}
	return out
}

// replayed answers a call routed to e from the replayed journal: the
// recorded answer, or (miss: error) the error that there is none, with its
// outcome. A nil result means the server is to answer.
func (pl *pipeline) replayed(c *toolCall, e *Entry) (*result, outcome) {
	rp := pl.replay()
	if rp == nil {
		return nil, outcome{}
	}
	c.span.Event("mcpmux.replay", "tool", e.Name)
	res, replayed := rp.Answer(c.runID, e.Name, c.args)
	var out outcome
	switch {
	case replayed:
		out = answered(metrics.OutcomeReplayed, e.Server, e.Tool)
		if c.rec != nil {
			out.answer = &answer{tool: e.Name, args: c.args, result: journal.EncodeResult(res), replayed: true}
		}
		if srv := pl.pool.Get(e.Server); srv != nil {
			out = out.charged(srv.Config(), e, "replayed")
		}
	case res != nil:
		out = failedAs(metrics.OutcomeNotRecorded, e.Server, e.Tool, 0)
	default:
		return nil, outcome{}
	}
	return decoded(res), out
}

// recordCatalog writes the tools a session was listed into its task's
// journal, when they differ from the task's latest.
func (a *Aggregator) recordCatalog(p *profile, req *mcp.ListToolsRequest, v *view, tools []*Entry) {
	if !a.journal.On() {
		return
	}
	var meta mcp.Meta
	if req.Params != nil {
		meta = req.Params.Meta
	}
	a.journal.Catalog(journal.Header{
		Time: time.Now().UTC(), Task: a.runIDOf(meta, req.Extra), Session: sessionID(req.Session), Client: clientOf(req.Session), Profile: p.name,
	}, catalogOf(v, tools))
}

// catalogOf is what the journal records of a tool list: each server with
// its prefix and its tools under their own names, so that a replay builds
// the same exposed names. Meta tools are left out: mcpmux makes them.
func catalogOf(v *view, tools []*Entry) []journal.Server {
	prefixOf := make(map[string]string, len(v.cat.prefixes))
	for prefix, server := range v.cat.prefixes {
		prefixOf[server] = prefix
	}
	var out []journal.Server
	index := map[string]int{}
	for _, e := range tools {
		if e.meta != nil {
			continue
		}
		i, ok := index[e.Server]
		if !ok {
			i = len(out)
			index[e.Server] = i
			out = append(out, journal.Server{Name: e.Server, Prefix: prefixOf[e.Server], Hashes: map[string]string{}})
		}
		def := *e.Def
		def.Name = e.Tool
		out[i].Tools = append(out[i].Tools, &def)
		out[i].Hashes[e.Tool] = journal.ToolHash(&def)
	}
	return out
}

// clientOf names the client of a session, from its initialize.
func clientOf(ss *mcp.ServerSession) *journal.Client {
	if ss == nil {
		return nil
	}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		return &journal.Client{Name: p.ClientInfo.Name, Version: p.ClientInfo.Version}
	}
	return nil
}
