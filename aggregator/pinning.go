package aggregator

import (
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/journal/pin"
)

// Pinned tools (mcpmux.yaml's pin and tool_pinning; package journal/pin):
// each rebuild of the catalog compares every tool's definition with the
// trusted one. A changed tool is a drift: refused ones are hidden from
// the views and their calls answered with the diff; with pin.on_change:
// warn it is served and its calls' journal lines say what changed.

// Rule names of pinning in the journal and mcpmux_rule_hits_total.
const (
	pinRule         = "pin"
	toolPinningRule = "tool_pinning"
)

// Drift is a tool whose definition differs from the trusted one.
type Drift struct {
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Name    string `json:"name"`    // exposed
	By      string `json:"by"`      // pinRule or toolPinningRule
	Changed string `json:"changed"` // the fields that changed
	Diff    string `json:"diff"`
	refuse  bool
}

// pins checks the catalog's tools against the trusted definitions (the
// pipeline answers the calls of those it holds: quarantined). It keeps what the checks need
// between rebuilds; guarded by mu (taken under Aggregator.mu, or alone by
// a call of a quarantined tool).
//
// Like the other parts of the aggregator it holds only what it needs,
// given at construction (New), never *Aggregator.
type pins struct {
	log *slog.Logger

	mu     sync.Mutex
	from   string // pin.from the set was read from
	set    pin.Set
	err    error
	path   string // tool_pinning's state file; "" keeps it in memory
	state  *pin.State
	seen   string            // the state file's content as last read or written
	logged map[string]string // drifts logged: name → changed
	// resync is Aggregator.Sync; a field, because the call path that
	// applies an approval is itself reached from what Sync builds.
	resync func()
}

// check finds the drifts of the catalog's tools under the settings.
func (ps *pins) check(cat *Catalog, s *config.Settings) map[string]*Drift {
	if s.Pin == nil && !s.ToolPinning {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if s.Pin != nil && s.Pin.From != ps.from {
		ps.from = s.Pin.From
		ps.set, ps.err = pin.Load(s.Pin.From)
		if ps.err != nil {
			ps.log.Error("pin: cannot read the pinned tools; no tool is checked against them", "from", s.Pin.From, "error", ps.err)
		}
	}
	if s.ToolPinning {
		ps.readStateLocked(s.ToolPinningState)
	}
	out := map[string]*Drift{}
	stateChanged := false
	for _, e := range cat.Entries() {
		if e.meta != nil {
			continue
		}
		def := *e.Def
		def.Name = e.Tool
		if s.Pin != nil && ps.set != nil {
			if trusted := ps.set[pin.Key{Server: e.Server, Tool: e.Tool}]; trusted != nil {
				if changed := pin.Changed(trusted, &def); changed != "" {
					out[e.Name] = &Drift{Server: e.Server, Tool: e.Tool, Name: e.Name, By: pinRule, Changed: changed, Diff: pin.Diff(trusted, &def), refuse: s.Pin.OnChange == config.PinRefuse}
					continue
				}
			}
		}
		if s.ToolPinning && ps.state != nil {
			if ps.state.Observe(e.Server, &def) {
				stateChanged = true
			}
			if trusted := ps.state.Trusted(e.Server, e.Tool); trusted != nil {
				if changed := pin.Changed(trusted, &def); changed != "" {
					out[e.Name] = &Drift{Server: e.Server, Tool: e.Tool, Name: e.Name, By: toolPinningRule, Changed: changed, Diff: pin.Diff(trusted, &def), refuse: true}
				}
			}
		}
	}
	if stateChanged && ps.path != "" {
		if err := ps.state.Write(ps.path); err != nil {
			ps.log.Error("tool_pinning: cannot write the state file", "file", ps.path, "error", err)
		} else {
			ps.seen = fileContent(ps.path)
		}
	}
	if ps.logged == nil {
		ps.logged = map[string]string{}
	}
	for name, d := range out {
		if ps.logged[name] != d.Diff {
			what := "pin: tool changed since it was pinned; flagged"
			if d.refuse {
				what = "pin: tool changed since it was pinned; refused until it matches again"
			}
			if d.By == toolPinningRule {
				what = "tool_pinning: tool changed since it was trusted; quarantined until approved (mcpmux approve " + d.Server + " " + d.Tool + ")"
			}
			ps.log.Warn(what, "server", d.Server, "tool", d.Tool, "changed", d.Changed, "diff", d.Diff)
		}
	}
	clear(ps.logged)
	for name, d := range out {
		ps.logged[name] = d.Diff
	}
	return out
}

// readStateLocked (re)reads tool_pinning's state file when it changed
// on disk (mcpmux approve writes it).
func (ps *pins) readStateLocked(path string) {
	if path != ps.path {
		ps.path, ps.state, ps.seen = path, nil, ""
	}
	content := fileContent(path)
	if ps.state != nil && content == ps.seen {
		return
	}
	if path == "" {
		ps.state = &pin.State{Version: pin.ManifestVersion, Tools: map[string]*pin.StateTool{}}
		return
	}
	st, err := pin.ReadState(path)
	if err != nil {
		ps.log.Error("tool_pinning: cannot read the state file; the tools are trusted as seen now", "file", path, "error", err)
		st, _ = pin.ReadState("")
	}
	ps.state, ps.seen = st, content
}

// fileContent is the content of a small file, "" if it cannot be read:
// what tells a state file mcpmux approve rewrote (its modification time
// may not, within the file system's clock tick).
func fileContent(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// applyApprovals applies what mcpmux approve wrote to the state file since
// it was read, if anything: the pipeline asks before it answers a call of
// a quarantined tool, which may just have been approved.
func (ps *pins) applyApprovals() {
	if ps.stateChanged() {
		ps.resync()
	}
}

// stateChanged reports whether tool_pinning's state file changed on
// disk since it was read: an approval to apply.
func (ps *pins) stateChanged() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.path != "" && fileContent(ps.path) != ps.seen
}

// Drifts are the tools whose definitions changed since they were pinned
// or trusted, by exposed name, for mcpmux__status and /healthz.
func (a *Aggregator) Drifts() []Drift {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Drift
	for _, name := range slices.Sorted(maps.Keys(a.catalog.drift)) {
		out = append(out, *a.catalog.drift[name])
	}
	return out
}
