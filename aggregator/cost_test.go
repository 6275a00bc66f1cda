package aggregator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"

	"github.com/mcpmux/mcpmux/journal/report"
)

// Priced calls carry their cost on their journal line, in
// mcpmux_tool_cost_total, and summed by the report per task, server and
// tool; a replayed call costs nothing and says so.
func TestCostsSummed(t *testing.T) {
	dir := t.TempDir()
	servers := func() map[string]*mcp.Server {
		return map[string]*mcp.Server{
			"search": fixtureServer("search", map[string]mcp.ToolHandler{"google": echo("search"), "bing": echo("search")}),
			"free":   fixtureServer("free", map[string]mcp.ToolHandler{"echo": echo("free")}),
		}
	}
	prices := map[string]string{"search": "cost: {per_call: 0.001}\ntool_costs: {bing: {per_call: 0.25, currency: credits}}\n"}
	h := newHarness(t, servers(), fmt.Sprintf("journal: {dir: %q}\n", dir), prices)
	cs := h.client(DefaultProfile)
	for i := range 3 {
		callTask(t, cs, "t1", "search__google", map[string]any{"q": i})
	}
	callTask(t, cs, "t1", "search__bing", map[string]any{"q": 1})
	callTask(t, cs, "t1", "free__echo", map[string]any{"q": 1})
	callTask(t, cs, "t2", "search__google", map[string]any{"q": 1})

	lines := callLines(journalLines(t, dir, "t1"))
	if c := lines[`search__google {"q":0}`].Cost; c == nil || c.Amount != 0.001 || c.Currency != "USD" {
		t.Errorf("google's cost %+v", c)
	}
	if c := lines[`search__bing {"q":1}`].Cost; c == nil || c.Amount != 0.25 || c.Currency != "credits" {
		t.Errorf("bing's cost %+v", c)
	}
	if c := lines[`free__echo {"q":1}`].Cost; c != nil {
		t.Errorf("an unpriced call costs %+v", c)
	}
	var usd float64
	for _, m := range gather(t, h)["mcpmux_tool_cost_total"].GetMetric() {
		if labels(m)["currency"] == "USD" && labels(m)["server"] == "search" {
			usd = m.GetCounter().GetValue()
		}
	}
	if fmt.Sprintf("%.3f", usd) != "0.004" {
		t.Errorf("mcpmux_tool_cost_total{currency=USD} = %v", usd)
	}

	r, err := report.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Cost.String(); got != "0.004 USD, 0.25 credits" {
		t.Errorf("total %q", got)
	}
	byTask := map[string]string{}
	for _, task := range r.Tasks {
		byTask[task.Name] = task.Cost.String()
	}
	if byTask["t1"] != "0.003 USD, 0.25 credits" || byTask["t2"] != "0.001 USD" {
		t.Errorf("per task %v", byTask)
	}
	for _, tool := range r.Tools {
		if tool.Tool == "search__google" && tool.Cost.String() != "0.004 USD" {
			t.Errorf("per tool %+v", tool)
		}
	}
	if s := r.Servers; len(s) != 2 || s[1].Server != "search" || s[1].Cost.String() != "0.004 USD, 0.25 credits" || s[0].Cost != nil {
		t.Errorf("per server %+v %+v", s[0], s[1])
	}

	// Replayed: nothing billed, the line says why.
	again := t.TempDir()
	rh := newHarness(t, servers(), fmt.Sprintf("replay: {from: %q}\njournal: {dir: %q}\n", dir, again), prices)
	callTask(t, rh.client(DefaultProfile), "t2", "search__google", map[string]any{"q": 1})
	if c := callLines(journalLines(t, again, "t2"))[`search__google {"q":1}`].Cost; c == nil || c.Amount != 0 || c.Free != "replayed" {
		t.Errorf("a replayed call's cost %+v", c)
	}
	if fam := gather(t, rh)["mcpmux_tool_cost_total"]; fam != nil && len(fam.GetMetric()) > 0 {
		t.Errorf("a replay was billed: %v", fam)
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "cost 0.003 USD, 0.25 credits") {
		t.Errorf("text: %v\n%s", err, text.String())
	}
}

// gather reads the harness's metrics.
func gather(t *testing.T, h *harness) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := h.agg.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
