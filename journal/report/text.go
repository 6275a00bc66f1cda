package report

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// WriteText writes the summary for people: a paragraph per task, with a
// table of its tools.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.Tasks) == 0 {
		fmt.Fprintf(tw, "no calls in %s\n", r.Dir)
	}
	for i, t := range r.Tasks {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "task %s: %d calls, %d errors, %d refused, %d fallbacks, %d corrected, %d timeouts, %d replayed; %s\n",
			TaskName(t.Name), t.Calls, t.Errors, t.Refusals, t.Fallbacks, t.Corrections, t.Timeouts, t.Replayed, t.span())
		if len(t.Tools) == 0 {
			continue
		}
		fmt.Fprintln(tw, "  TOOL\tCALLS\tERRORS\tTOTAL\tSLOWEST")
		for _, tool := range t.Tools {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\n", tool.Tool, tool.Calls, tool.Errors, ms(tool.TotalMS), ms(tool.SlowestMS))
		}
		// The blocked attempts, each with its arguments: what an agent
		// under evaluation tried to reach.
		for _, c := range t.Lines {
			if c.Action == "refused" {
				fmt.Fprintf(tw, "  refused by %s: %s %s\n", c.Rule, c.Tool, cutText(string(c.Arguments), 200))
			}
		}
	}
	if r.Unreadable > 0 {
		fmt.Fprintf(tw, "\n%d lines could not be read (not JSON)\n", r.Unreadable)
	}
	for _, f := range r.SkippedFiles {
		fmt.Fprintf(tw, "\n%s\n", f)
	}
	return tw.Flush()
}

// WriteJSON writes the summary for scripts.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// TaskName is how a task id is shown: calls without one are "(none)".
func TaskName(task string) string {
	if task == "" {
		return "(none)"
	}
	return task
}

func (t *Task) span() string {
	if t.Start.IsZero() {
		return "no calls"
	}
	return fmt.Sprintf("%s to %s (%s)", t.Start.Format(time.RFC3339), t.End.Format(time.RFC3339), ms(float64(t.End.Sub(t.Start).Microseconds())/1000))
}

// ms writes a duration given in milliseconds.
func ms(v float64) string {
	d := time.Duration(v * float64(time.Millisecond))
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// cutText cuts s to at most n bytes, at a character, marking the cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
