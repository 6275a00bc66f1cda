package aggregator

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/tracing"
)

// The pipeline's hooks for the journal and replay (mcpmux.yaml's journal
// and replay; packages journal and journal/replay). A client's call is
// recorded from its entry (clientCall) to its end, each step noting on
// c.rec what it decided; replay answers in the run step, so that
// everything else the pipeline does applies to a replayed call too.

// clientCall runs a client's tools/call through the pipeline and writes
// its journal line when it ends.
func (a *Aggregator) clientCall(ctx context.Context, p *profile, req *mcp.CallToolRequest) *result {
	c := a.newToolCall(req)
	c.span = tracing.FromContext(ctx)
	if a.journal.On() || a.frozen.On() {
		c.rec = a.journal.BeginFrozen(journal.Start{
			Task: c.runID, Session: sessionID(c.session), Profile: p.name, Client: clientOf(c.session),
			Tool: c.name, Arguments: c.args,
			Catalog: func() []journal.Server {
				v := p.view.Load()
				return catalogOf(v, a.sessionTools(ctx, v, c.session))
			},
		}, a.frozen)
	}
	res := a.callTool(ctx, p, c)
	traceResult(c.span, res)
	if c.rec != nil {
		_, span := tracing.StartInternal(ctx, "mcpmux.journal")
		c.rec.End(res.journaled(), res.isError())
		span.End("", "")
	}
	return res
}

// replayed answers a call routed to e from the replayed journal: the
// recorded answer, or (miss: error) the error that there is none. nil
// means the server is to answer.
func (a *Aggregator) replayed(c *toolCall, e *Entry) *result {
	rp := a.replay.Load()
	if rp == nil {
		return nil
	}
	c.span.Event("mcpmux.replay", "tool", e.Name)
	res, replayed := rp.Answer(c.runID, e.Name, c.args)
	switch {
	case replayed:
		a.answered(c, e.Server, e.Tool, metrics.OutcomeReplayed)
		c.rec.Answered(e.Name, c.args, journal.EncodeResult(res), true)
		if srv := a.pool.Get(e.Server); srv != nil {
			a.charge(c, srv.Config(), e, "replayed")
		}
	case res != nil:
		a.answered(c, e.Server, e.Tool, metrics.OutcomeNotRecorded)
		c.rec.Failed(metrics.OutcomeNotRecorded, 0)
	default:
		return nil
	}
	return decoded(res)
}

// charge adds the price of a call of e (its server's cost: or
// tool_costs:) to the metrics and the call's journal line; free, the
// reason it cost nothing ("replayed"), records only that.
func (a *Aggregator) charge(c *toolCall, cfg *config.Server, e *Entry, free string) {
	if cfg == nil {
		return
	}
	p := cfg.CallPrice(e.Tool)
	if p == nil {
		return
	}
	if free == "" {
		a.metrics.Charged(e.Server, p.Currency, p.PerCall)
	}
	c.rec.Charged(p.PerCall, p.Currency, free)
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
