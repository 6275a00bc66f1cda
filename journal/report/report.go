// Package report summarises a journal directory (package journal) per
// task: as text, as JSON for scripts, and as a self-contained HTML page
// with a table and a timeline of each task's calls.
package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
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
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`      // when its last call ended
	TotalMS     float64   `json:"total_ms"` // the calls' durations, summed
	Tools       []*Tool   `json:"tools"`    // by name
	Catalogs    int       `json:"catalogs"` // tool lists recorded
	Lines       []*Call   `json:"-"`        // the calls, by start
}

// Tool sums up the calls of one tool in a task.
type Tool struct {
	Tool      string  `json:"tool"`
	Calls     int     `json:"calls"`
	Errors    int     `json:"errors"`
	TotalMS   float64 `json:"total_ms"`
	SlowestMS float64 `json:"slowest_ms"`
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
	for _, t := range r.Tasks {
		t.finish()
	}
	r.Tasks = slices.DeleteFunc(r.Tasks, func(t *Task) bool { return t.Calls == 0 && t.Catalogs == 0 })
	slices.SortStableFunc(r.Tasks, func(a, b *Task) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return r, nil
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
	if t.Start.IsZero() || l.Time.Before(t.Start) {
		t.Start = l.Time
	}
	if end := c.End(); end.After(t.End) {
		t.End = end
	}
	var tool *Tool
	for _, x := range t.Tools {
		if x.Tool == l.Tool {
			tool = x
		}
	}
	if tool == nil {
		tool = &Tool{Tool: l.Tool}
		t.Tools = append(t.Tools, tool)
	}
	tool.Calls++
	tool.TotalMS += l.DurationMS
	tool.SlowestMS = max(tool.SlowestMS, l.DurationMS)
	if l.IsError {
		tool.Errors++
	}
}

func (t *Task) finish() {
	slices.SortStableFunc(t.Lines, func(a, b *Call) int { return a.Time.Compare(b.Time) })
	slices.SortFunc(t.Tools, func(a, b *Tool) int { return cmp.Compare(a.Tool, b.Tool) })
	if t.Tools == nil {
		t.Tools = []*Tool{}
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
