package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// WriteText writes the summary for people: a table of the tasks, then a
// paragraph per task with a table of its tools.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.Tasks) == 0 {
		fmt.Fprintf(tw, "no calls in %s\n", r.Dir)
		return tw.Flush()
	}
	calls := 0
	for _, t := range r.Tasks {
		calls += t.Calls
	}
	fmt.Fprintf(tw, "%s, %s", Plural(len(r.Tasks), "task"), Plural(calls, "call"))
	if len(r.Cost) > 0 {
		fmt.Fprintf(tw, ", cost %s", r.Cost)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "TASK\tCALLS\tERRORS\tREFUSED\tFALLBACKS\tCORRECTED\tDRIFT\tCOST\tDURATION")
	for _, t := range r.Tasks {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", TaskName(t.Name), t.Calls, t.Errors, t.Refusals, t.Fallbacks, t.Corrections, t.Drift, orDash(t.Cost.String()), ms(t.DurationMS))
	}
	for _, t := range r.Tasks {
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "task %s: %s; %s\n", TaskName(t.Name), t.counts(), t.span())
		if len(t.Tools) == 0 {
			continue
		}
		fmt.Fprintln(tw, "  TOOL\tCALLS\tERRORS\tTOTAL\tSLOWEST\tCOST")
		for _, tool := range t.Tools {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\t%s\n", tool.Tool, tool.Calls, tool.Errors, ms(tool.TotalMS), ms(tool.SlowestMS), orDash(tool.Cost.String()))
		}
		// The blocked attempts, each with its arguments: what an agent
		// under evaluation tried to reach.
		for _, c := range t.Lines {
			if c.Action == "refused" {
				fmt.Fprintf(tw, "  refused by %s: %s %s\n", c.Rule, c.Tool, cutText(string(c.Arguments), 200))
			}
		}
	}
	if len(r.Cost) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "SERVER\tCALLS\tCOST")
		for _, s := range r.Servers {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", orDash(s.Server), s.Calls, orDash(s.Cost.String()))
		}
	}
	if r.Unreadable > 0 {
		fmt.Fprintf(tw, "\n%s could not be read (not JSON)\n", Plural(r.Unreadable, "line"))
	}
	for _, f := range r.SkippedFiles {
		fmt.Fprintf(tw, "\n%s\n", f)
	}
	return tw.Flush()
}

// counts are the task's counts in words, those that are zero left out
// but calls and errors.
func (t *Task) counts() string {
	parts := []string{Plural(t.Calls, "call"), Plural(t.Errors, "error")}
	for _, c := range []struct {
		n    int
		what string
	}{{t.Refusals, "refused"}, {t.Fallbacks, "fallback"}, {t.Redactions, "redacted"}, {t.Corrections, "corrected"}, {t.Timeouts, "timeout"}, {t.Replayed, "replayed"}, {t.Drift, "drifted"}} {
		if c.n == 0 {
			continue
		}
		if strings.HasSuffix(c.what, "ed") {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		} else {
			parts = append(parts, Plural(c.n, c.what))
		}
	}
	if len(t.Cost) > 0 {
		parts = append(parts, "cost "+t.Cost.String())
	}
	return strings.Join(parts, ", ")
}

// Plural is "1 call", "2 calls".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
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
		return fmt.Sprintf("no calls, %s recorded", Plural(t.Catalogs, "tool list"))
	}
	return fmt.Sprintf("%s to %s (%s)", t.Start.Format(time.RFC3339), t.End.Format(time.RFC3339), ms(t.DurationMS))
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
