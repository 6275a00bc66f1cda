package aggregator

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/metrics"
)

// The pipeline's hooks for the journal and replay (mcpmux.yaml's journal
// and replay; packages journal and journal/replay). A client's call is
// recorded from its entry (clientCall) to its end, settle noting on c.rec
// what each step decided (outcome.go); replay answers in the run step, so
// that everything else the pipeline does applies to a replayed call too.

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
