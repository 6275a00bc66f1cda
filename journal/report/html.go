package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/journal"
)

//go:embed report.html.tmpl
var pageTemplate string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":       ms,
	"taskName": TaskName,
}).Parse(pageTemplate))

// Outcomes in the order the legend shows them.
var outcomes = []string{OutcomeOK, OutcomeCorrected, OutcomeFallback, OutcomeError, OutcomeTimeout, OutcomeRefused}

// Timeline geometry, in SVG user units.
const (
	timelineWidth = 1000
	laneHeight    = 14
	laneGap       = 4
	axisHeight    = 18
	minBarWidth   = 2
	excerptLen    = 240
)

// WriteHTML writes the report as one self-contained HTML page: styles
// inline, no script, nothing fetched.
func (r *Report) WriteHTML(w io.Writer) error {
	data := pageData{Report: r, Generated: time.Now().UTC().Format(time.RFC3339), Outcomes: outcomes}
	for _, t := range r.Tasks {
		data.Tasks = append(data.Tasks, taskView(t))
		data.Calls += t.Calls
	}
	return page.Execute(w, data)
}

type pageData struct {
	*Report
	Generated string
	Outcomes  []string
	Tasks     []taskPage
	Calls     int
}

type taskPage struct {
	*Task
	ID       string // the anchor of its section
	Timeline timeline
	Rows     []row
}

type timeline struct {
	Height int // of the whole drawing
	Lanes  int // height of the lanes, without the axis
	Bars   []bar
	Ticks  []tick
}

type bar struct {
	X, Y, W, H float64
	Outcome    string
	Replayed   bool
	Title      string
}

type tick struct {
	X     float64
	Label string
}

type row struct {
	N         int
	Offset    string // start, from the task's start
	Call      *Call
	Duration  string
	Did       []string // what mcpmux did
	Arguments string
	Result    string
}

func taskView(t *Task) taskPage {
	p := taskPage{Task: t, ID: "task-" + journal.FileStem(t.Name)}
	span := t.End.Sub(t.Start)
	if span <= 0 {
		span = time.Millisecond
	}
	scale := timelineWidth / float64(span)
	var laneEnds []time.Time
	for i, c := range t.Lines {
		lane := 0
		for lane < len(laneEnds) && laneEnds[lane].After(c.Time) {
			lane++
		}
		if lane == len(laneEnds) {
			laneEnds = append(laneEnds, time.Time{})
		}
		laneEnds[lane] = c.End()
		x := float64(c.Time.Sub(t.Start)) * scale
		p.Timeline.Bars = append(p.Timeline.Bars, bar{
			X: x, Y: float64(lane * (laneHeight + laneGap)), H: laneHeight,
			W:       min(max(float64(c.End().Sub(c.Time))*scale, minBarWidth), timelineWidth-x+minBarWidth),
			Outcome: c.Outcome, Replayed: c.Replayed,
			Title: fmt.Sprintf("#%d %s: %s, %s", i+1, c.Tool, c.Outcome, ms(c.DurationMS)),
		})
		p.Rows = append(p.Rows, rowOf(i+1, t, c))
	}
	lanes := max(len(laneEnds), 1)
	p.Timeline.Lanes = lanes * (laneHeight + laneGap)
	p.Timeline.Height = p.Timeline.Lanes + axisHeight
	for i := range 5 {
		f := float64(i) / 4
		p.Timeline.Ticks = append(p.Timeline.Ticks, tick{X: f * timelineWidth, Label: "+" + ms(f*float64(span)/float64(time.Millisecond))})
	}
	return p
}

func rowOf(n int, t *Task, c *Call) row {
	r := row{N: n, Call: c, Offset: "+" + ms(float64(c.Time.Sub(t.Start).Microseconds())/1000), Duration: ms(c.DurationMS)}
	hits := c.Hits
	if len(hits) == 0 && c.Action != "" {
		hits = []journal.Hit{{Rule: c.Rule, Action: c.Action}}
	}
	for _, h := range hits {
		r.Did = append(r.Did, fmt.Sprintf("%s by rule %s", h.Action, h.Rule))
	}
	if c.CorrectedTo != "" {
		r.Did = append(r.Did, "corrected to "+c.CorrectedTo)
	}
	if c.Timeout != "" {
		r.Did = append(r.Did, "timed out after "+c.Timeout)
	} else if c.Failure != "" {
		r.Did = append(r.Did, "failed: "+c.Failure)
	}
	if c.Replayed {
		r.Did = append(r.Did, "replayed")
	}
	r.Arguments = excerpt(string(c.Arguments))
	r.Result = excerpt(string(c.Result))
	if res, err := journal.DecodeResult(c.Result); err == nil {
		var parts []string
		for _, item := range res.Content {
			if tc, ok := item.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		if len(parts) > 0 {
			r.Result = excerpt(strings.Join(parts, "\n"))
		}
	}
	return r
}

// excerpt cuts s to excerptLen bytes, at a rune boundary.
func excerpt(s string) string {
	if len(s) <= excerptLen {
		return s
	}
	cut := excerptLen
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
