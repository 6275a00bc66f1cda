package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
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
	"plural":   Plural,
	"costKey":  func(c Costs) string { return strconv.FormatFloat(c.sortKey(), 'f', -1, 64) },
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

// WriteHTML writes the report as one self-contained HTML page: styles and
// a small script (sorting the table of tasks) inline, nothing fetched,
// nothing from the journal inside the script.
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
	Breaks []gapBreak
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

// gapBreak is an idle stretch drawn narrower than its time: the calls on
// either side stay readable however long the task waited in between.
type gapBreak struct {
	X, W, Mid float64
	Label     string
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

// Idle gaps longer than both of these are drawn as a break.
const (
	gapMinimum  = time.Second
	gapFraction = 10 // of the task's span
	breakWidth  = 28
)

// scale maps the times of a task to x: linear within each stretch of
// activity, idle gaps long enough compressed to a break of breakWidth.
type scale struct {
	stretches []stretch
	perNS     float64
}

type stretch struct {
	from, to time.Time
	x        float64
}

func newScale(t *Task) (*scale, []gapBreak) {
	type span struct{ from, to time.Time }
	var busy []span
	for _, c := range t.Lines { // by start
		if n := len(busy); n > 0 && !c.Time.After(busy[n-1].to) {
			if end := c.End(); end.After(busy[n-1].to) {
				busy[n-1].to = end
			}
			continue
		}
		busy = append(busy, span{c.Time, c.End()})
	}
	total := t.End.Sub(t.Start)
	threshold := max(gapMinimum, total/gapFraction)
	sc := &scale{}
	var gaps []time.Duration
	cur := stretch{from: t.Start}
	for i := 1; i < len(busy); i++ {
		if gap := busy[i].from.Sub(busy[i-1].to); gap > threshold {
			cur.to = busy[i-1].to
			sc.stretches = append(sc.stretches, cur)
			gaps = append(gaps, gap)
			cur = stretch{from: busy[i].from}
		}
	}
	cur.to = t.End
	sc.stretches = append(sc.stretches, cur)
	var active time.Duration
	for _, s := range sc.stretches {
		active += s.to.Sub(s.from)
	}
	width := timelineWidth - float64(len(gaps))*breakWidth
	sc.perNS = width / float64(max(active, time.Millisecond))
	x := 0.0
	var breaks []gapBreak
	for i := range sc.stretches {
		s := &sc.stretches[i]
		s.x = x
		x += float64(s.to.Sub(s.from)) * sc.perNS
		if i < len(gaps) {
			breaks = append(breaks, gapBreak{X: x, W: breakWidth, Mid: x + breakWidth/2, Label: ms(float64(gaps[i].Milliseconds())) + " idle"})
			x += breakWidth
		}
	}
	return sc, breaks
}

// at is the x of a time of the task.
func (sc *scale) at(t time.Time) float64 {
	s := sc.stretches[0]
	for _, x := range sc.stretches[1:] {
		if t.Before(x.from) {
			break
		}
		s = x
	}
	if t.After(s.to) {
		t = s.to
	}
	return s.x + float64(t.Sub(s.from))*sc.perNS
}

// ticks label the start of each stretch and, in a wide one, points
// within it, as offsets from the task's start.
func (sc *scale) ticks(start time.Time) []tick {
	var out []tick
	label := func(t time.Time) string { return "+" + ms(float64(t.Sub(start).Microseconds())/1000) }
	for _, s := range sc.stretches {
		w := float64(s.to.Sub(s.from)) * sc.perNS
		n := max(1, int(w/250))
		for i := range n {
			t := s.from.Add(time.Duration(float64(s.to.Sub(s.from)) * float64(i) / float64(n)))
			out = append(out, tick{X: sc.at(t), Label: label(t)})
		}
	}
	last := sc.stretches[len(sc.stretches)-1]
	if end := sc.at(last.to); end-out[len(out)-1].X > 60 {
		out = append(out, tick{X: end, Label: label(last.to)})
	}
	return out
}

func taskView(t *Task) taskPage {
	p := taskPage{Task: t, ID: "task-" + journal.FileStem(t.Name)}
	if len(t.Lines) == 0 {
		return p
	}
	sc, breaks := newScale(t)
	p.Timeline.Breaks = breaks
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
		x := sc.at(c.Time)
		p.Timeline.Bars = append(p.Timeline.Bars, bar{
			X: x, Y: float64(lane * (laneHeight + laneGap)), H: laneHeight,
			W:       min(max(sc.at(c.End())-x, minBarWidth), timelineWidth-x+minBarWidth),
			Outcome: c.Outcome, Replayed: c.Replayed,
			Title: fmt.Sprintf("#%d %s: %s, %s", i+1, c.Tool, c.Outcome, ms(c.DurationMS)),
		})
		p.Rows = append(p.Rows, rowOf(i+1, t, c))
	}
	lanes := max(len(laneEnds), 1)
	p.Timeline.Lanes = lanes * (laneHeight + laneGap)
	p.Timeline.Height = p.Timeline.Lanes + axisHeight
	p.Timeline.Ticks = sc.ticks(t.Start)
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
	if c.Drift != "" {
		r.Did = append(r.Did, "tool changed since pinned: "+c.Drift)
	}
	if c.Cost != nil {
		cost := Amount(c.Cost.Amount) + " " + c.Cost.Currency
		if c.Cost.Free != "" {
			cost += " (" + c.Cost.Free + ")"
		}
		r.Did = append(r.Did, "cost "+cost)
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
