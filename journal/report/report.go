// Package report summarises a journal directory (package journal) per
// task: as text, as JSON for scripts, and as a self-contained HTML page
// with a table and a timeline of each task's calls.
package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpmux/mcpmux/journal"
)

// Outcomes a call is shown with, the first that applies in this order.
const (
	OutcomeRefused   = "refused"   // a rule or the blacklist refused it
	OutcomeTimeout   = "timeout"   // it ran into its timeout
	OutcomeError     = "error"     // the client got an isError result
	OutcomeFallback  = "fallback"  // a fallback tool answered instead
	OutcomeCorrected = "corrected" // auto-correction chose the tool
	OutcomeOK        = "ok"
)

// Report is the summary of a journal directory.
type Report struct {
	Dir   string  `json:"dir"`
	Tasks []*Task `json:"tasks"`
	// Unreadable counts lines that are not JSON (a file edited by hand).
	Unreadable int `json:"unreadable_lines"`
	// SkippedFiles are files not read, and why (not regular files).
	SkippedFiles []string `json:"skipped_files,omitempty"`
	// Cost sums the tasks' costs, by currency.
	Cost Costs `json:"cost,omitempty"`
	// Servers and Tools sum the calls and costs over all tasks.
	Servers []*Tool `json:"servers"`
	Tools   []*Tool `json:"tools"`
}

// Costs are amounts by currency.
type Costs map[string]float64

func (c *Costs) add(cost *journal.Cost) {
	if cost == nil || cost.Currency == "" {
		return
	}
	if *c == nil {
		*c = Costs{}
	}
	(*c)[cost.Currency] += cost.Amount
}

// String writes the amounts, currencies sorted: "0.012 USD".
func (c Costs) String() string {
	var parts []string
	for _, cur := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, Amount(c[cur])+" "+cur)
	}
	return strings.Join(parts, ", ")
}

// Amount writes an amount without the noise of float sums
// (0.0030000000000000005 is 0.003).
func Amount(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e9)/1e9, 'f', -1, 64)
}

// sortKey orders by the total, whatever the currency: enough to rank.
func (c Costs) sortKey() float64 {
	var sum float64
	for _, v := range c {
		sum += v
	}
	return sum
}

// Orders of the tasks.
const (
	SortStart  = "start"  // by their first call (the default)
	SortName   = "name"   // by task id
	SortErrors = "errors" // most errors (then refusals, timeouts) first
	SortCost   = "cost"   // most expensive first
	SortTime   = "time"   // longest first
)

// SortOrders are the orders Sort knows.
var SortOrders = []string{SortStart, SortName, SortErrors, SortCost, SortTime}

// Sort orders the tasks; it reports false for an unknown order.
func (r *Report) Sort(order string) bool {
	var less func(a, b *Task) int
	switch order {
	case SortStart, "":
		less = func(a, b *Task) int { return a.Start.Compare(b.Start) }
	case SortName:
		less = func(a, b *Task) int { return 0 }
	case SortErrors:
		less = func(a, b *Task) int {
			return cmp.Or(cmp.Compare(b.Errors, a.Errors), cmp.Compare(b.Refusals, a.Refusals), cmp.Compare(b.Timeouts, a.Timeouts))
		}
	case SortCost:
		less = func(a, b *Task) int { return cmp.Compare(b.Cost.sortKey(), a.Cost.sortKey()) }
	case SortTime:
		less = func(a, b *Task) int { return cmp.Compare(b.DurationMS, a.DurationMS) }
	default:
		return false
	}
	slices.SortStableFunc(r.Tasks, func(a, b *Task) int { return cmp.Or(less(a, b), cmp.Compare(a.Name, b.Name)) })
	return true
}

// Task sums up the calls of one task.
type Task struct {
	Name        string    `json:"task"`
	Calls       int       `json:"calls"`
	Errors      int       `json:"errors"`
	Refusals    int       `json:"refusals"`
	Fallbacks   int       `json:"fallbacks"`
	Redactions  int       `json:"redactions"`
	Corrections int       `json:"corrections"`
	Timeouts    int       `json:"timeouts"`
	Replayed    int       `json:"replayed"`
	Drift       int       `json:"drift"` // calls of a tool changed since it was pinned
	Cost        Costs     `json:"cost,omitempty"`
	Start       time.Time `json:"start,omitzero"`
	End         time.Time `json:"end,omitzero"` // when its last call ended
	DurationMS  float64   `json:"duration_ms"`  // from Start to End
	TotalMS     float64   `json:"total_ms"`     // the calls' durations, summed
	Tools       []*Tool   `json:"tools"`        // by name
	Servers     []*Tool   `json:"servers"`      // by name (Tool is the server's)
	Catalogs    int       `json:"catalogs"`     // tool lists recorded
	Lines       []*Call   `json:"-"`            // the calls, by start
}

// Tool sums up the calls of one tool (or server) in a task, or in all.
type Tool struct {
	Tool      string  `json:"tool,omitempty"`
	Server    string  `json:"server,omitempty"`
	Calls     int     `json:"calls"`
	Errors    int     `json:"errors"`
	TotalMS   float64 `json:"total_ms"`
	SlowestMS float64 `json:"slowest_ms"`
	Cost      Costs   `json:"cost,omitempty"`
}

func (x *Tool) add(l *journal.CallLine) {
	x.Calls++
	x.TotalMS += l.DurationMS
	x.SlowestMS = max(x.SlowestMS, l.DurationMS)
	if l.IsError {
		x.Errors++
	}
	x.Cost.add(l.Cost)
}

// tally finds or adds the entry of a tool or server.
func tally(list *[]*Tool, tool, server string) *Tool {
	for _, x := range *list {
		if x.Tool == tool && x.Server == server {
			return x
		}
	}
	x := &Tool{Tool: tool, Server: server}
	*list = append(*list, x)
	return x
}

// Call is one call line, with the outcome it is shown with.
type Call struct {
	journal.CallLine
	Outcome string
}

// Read summarises the journal in dir.
func Read(dir string) (*Report, error) {
	files, skipped, err := journal.Files(dir)
	if err != nil {
		return nil, err
	}
	r := &Report{Dir: dir}
	for _, e := range skipped {
		r.SkippedFiles = append(r.SkippedFiles, e.Error())
	}
	byTask := map[string]*Task{}
	task := func(name string) *Task {
		t := byTask[name]
		if t == nil {
			t = &Task{Name: name}
			byTask[name] = t
			r.Tasks = append(r.Tasks, t)
		}
		return t
	}
	for _, path := range files {
		err := journal.Scan(path, func(_ int64, b []byte) error {
			var l journal.Line
			if err := json.Unmarshal(b, &l); err != nil {
				r.Unreadable++
				return nil
			}
			switch l.Kind {
			case journal.KindCatalog:
				task(l.Task).Catalogs++
			case journal.KindCall:
				task(l.Task).add(l.CallLine)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	// The default task's file often holds only the catalog of a session
	// that listed tools before naming its task: no task to show.
	r.Tasks = slices.DeleteFunc(r.Tasks, func(t *Task) bool { return t.Calls == 0 && (t.Catalogs == 0 || t.Name == "") })
	slices.SortFunc(r.Tasks, func(a, b *Task) int { return cmp.Compare(a.Name, b.Name) })
	r.Servers, r.Tools = []*Tool{}, []*Tool{}
	for _, t := range r.Tasks {
		t.finish()
		for _, c := range t.Lines {
			r.Cost.add(c.Cost)
			tally(&r.Tools, c.Tool, c.Server).add(&c.CallLine)
			tally(&r.Servers, "", c.Server).add(&c.CallLine)
		}
	}
	sortTools(r.Tools)
	sortTools(r.Servers)
	r.Sort(SortStart)
	return r, nil
}

func sortTools(list []*Tool) {
	slices.SortFunc(list, func(a, b *Tool) int { return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.Tool, b.Tool)) })
}

func (t *Task) add(l journal.CallLine) {
	c := &Call{CallLine: l, Outcome: outcomeOf(l)}
	t.Lines = append(t.Lines, c)
	t.Calls++
	t.TotalMS += l.DurationMS
	if l.IsError {
		t.Errors++
	}
	hits := l.Hits
	if len(hits) == 0 && l.Action != "" {
		hits = []journal.Hit{{Rule: l.Rule, Action: l.Action}}
	}
	for _, h := range hits {
		switch h.Action {
		case "refused":
			t.Refusals++
		case "fallback":
			t.Fallbacks++
		case "redacted":
			t.Redactions++
		}
	}
	if l.CorrectedTo != "" {
		t.Corrections++
	}
	if l.Failure == "timeout" {
		t.Timeouts++
	}
	if l.Replayed {
		t.Replayed++
	}
	if l.Drift != "" {
		t.Drift++
	}
	t.Cost.add(l.Cost)
	if t.Start.IsZero() || l.Time.Before(t.Start) {
		t.Start = l.Time
	}
	if end := c.End(); end.After(t.End) {
		t.End = end
	}
	tally(&t.Tools, l.Tool, "").add(&l)
	tally(&t.Servers, "", l.Server).add(&l)
}

func (t *Task) finish() {
	slices.SortStableFunc(t.Lines, func(a, b *Call) int { return a.Time.Compare(b.Time) })
	sortTools(t.Tools)
	sortTools(t.Servers)
	if t.Tools == nil {
		t.Tools, t.Servers = []*Tool{}, []*Tool{}
	}
	if !t.Start.IsZero() {
		t.DurationMS = float64(t.End.Sub(t.Start).Microseconds()) / 1000
	}
}

// End is when the call ended.
func (c *Call) End() time.Time {
	return c.Time.Add(time.Duration(c.DurationMS * float64(time.Millisecond)))
}

// outcomeOf is the outcome a call is shown with.
func outcomeOf(l journal.CallLine) string {
	has := func(action string) bool {
		if l.Action == action {
			return true
		}
		return slices.ContainsFunc(l.Hits, func(h journal.Hit) bool { return h.Action == action })
	}
	switch {
	case has("refused"):
		return OutcomeRefused
	case l.Failure == "timeout":
		return OutcomeTimeout
	case l.IsError:
		return OutcomeError
	case has("fallback"):
		return OutcomeFallback
	case l.CorrectedTo != "":
		return OutcomeCorrected
	}
	return OutcomeOK
}
