package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Start describes a client's call as it begins.
type Start struct {
	Task, Session, Profile string
	Client                 *Client
	Tool                   string          // the exposed name called
	Arguments              json.RawMessage // as the client sent them
	// Catalog returns the tools the session is listed, for a task whose
	// file has no catalog of the profile yet; nil records none.
	Catalog func() []Server
}

// Call collects what happens to one client call on its way through the
// pipeline, for its line. Its methods may be called on nil (no journal),
// and do nothing then. The steps of a call run one after another, so a
// Call is not safe for concurrent use.
type Call struct {
	rec     *record
	derived bool // a call the client's call made (a fallback, mcpmux__call_tool's)
}

// record is the state shared by a call and the calls it derives.
type record struct {
	j       *Journal // nil: the line goes only to frozen
	start   time.Time
	line    CallLine
	catalog func() []Server
	answers []Answer
	// frozen is the journal a replay with miss: record appends to: the
	// line goes there too when a server answered the call (live).
	frozen *Journal
	live   bool
}

// Begin starts the record of a client's call; nil if the journal is off.
func (j *Journal) Begin(s Start) *Call { return j.BeginFrozen(s, nil) }

// BeginFrozen starts the record of a client's call for j, if it is on,
// and for frozen, the journal a replay with miss: record answers from,
// if it is on: the call's line is appended to frozen too when a server
// answered it (not a replay) and mcpmux saw no failure (a timeout, a lost
// connection: nothing to answer again). Nil if neither is on.
func (j *Journal) BeginFrozen(s Start, frozen *Journal) *Call {
	if !frozen.On() {
		frozen = nil
	}
	if !j.On() {
		if frozen == nil {
			return nil
		}
		j = nil
	}
	now := time.Now()
	r := &record{j: j, frozen: frozen, start: now, catalog: s.Catalog}
	r.line.Header = Header{Kind: KindCall, Time: now.UTC(), Task: s.Task, Session: s.Session, Client: s.Client, Profile: s.Profile}
	r.line.Tool, r.line.Arguments = s.Tool, s.Arguments
	return &Call{rec: r}
}

// Derived returns the record of a call c makes through the pipeline: its
// rule hits and answers belong to c's line; its route and failure do not.
func (c *Call) Derived() *Call {
	if c == nil {
		return nil
	}
	return &Call{rec: c.rec, derived: true}
}

// Routed records the server the call went to, and the exposed name
// auto-correction chose instead of the one called ("" if none).
func (c *Call) Routed(server, correctedTo string) {
	if c == nil || c.derived {
		return
	}
	c.rec.line.Server = server
	if correctedTo != "" {
		c.rec.line.CorrectedTo = correctedTo
	}
}

// Hit records an action of a rule (refused, redacted, fallback) on the
// call or on a call it made.
func (c *Call) Hit(rule, action string) {
	if c == nil {
		return
	}
	l := &c.rec.line
	if l.Rule == "" {
		l.Rule, l.Action = rule, action
	}
	l.Hits = append(l.Hits, Hit{Rule: rule, Action: action})
}

// Failed records the kind of a failure of the call (a metrics outcome:
// timeout, lost, ...) and, for a timeout, the limit it ran into.
func (c *Call) Failed(kind string, timeout time.Duration) {
	if c == nil || c.derived {
		return
	}
	c.rec.line.Failure = kind
	c.rec.line.Timeout = ""
	if timeout > 0 {
		c.rec.line.Timeout = timeout.String()
	}
}

// Answered records what a run step answered for a call of tool (exposed
// name) with args: a server's result, or a replayed one, encoded.
func (c *Call) Answered(tool string, args, result json.RawMessage, replayed bool) {
	if c == nil {
		return
	}
	if replayed {
		c.rec.line.Replayed = true
	} else {
		c.rec.live = true
	}
	c.rec.answers = append(c.rec.answers, Answer{Tool: tool, Arguments: args, Result: result})
}

// Charged adds the price of a server's call (or, free, the reason a
// priced call cost nothing: "replayed") to the call's cost.
func (c *Call) Charged(amount float64, currency, free string) {
	if c == nil {
		return
	}
	l := &c.rec.line
	if l.Cost == nil {
		l.Cost = &Cost{Currency: currency}
	}
	if free != "" {
		if l.Cost.Amount == 0 {
			l.Cost.Free = free
		}
		return
	}
	l.Cost.Amount += amount
	l.Cost.Free = ""
}

// Drifted records what changed in the called tool's definition since it
// was pinned.
func (c *Call) Drifted(what string) {
	if c == nil || c.derived {
		return
	}
	c.rec.line.Drift = what
}

// End writes the call's line, with result, what the client gets, encoded,
// and whether it is an error result. It returns at once for a derived
// call, whose client call writes the line.
func (c *Call) End(result json.RawMessage, isError bool) {
	if c == nil || c.derived {
		return
	}
	r := c.rec
	l := &r.line
	l.DurationMS = float64(time.Since(r.start).Microseconds()) / 1000
	l.IsError = isError
	l.Result = result
	if len(l.Hits) < 2 {
		l.Hits = nil
	}
	routed := l.Tool
	if l.CorrectedTo != "" {
		routed = l.CorrectedTo
	}
	if len(r.answers) != 1 || r.answers[0].Tool != routed || !bytes.Equal(r.answers[0].Arguments, l.Arguments) || !bytes.Equal(r.answers[0].Result, l.Result) {
		l.Answers = &r.answers
		if r.answers == nil {
			l.Answers = &[]Answer{}
		}
	}
	if r.j != nil {
		r.j.writeCall(r)
	}
	if r.frozen != nil && r.live && l.Failure == "" {
		r.frozen.writeCall(r)
	}
}

// writeCall writes a call's line, masked, after the task's catalog of the
// profile if its file has none yet.
func (j *Journal) writeCall(r *record) {
	l := r.line
	l.Arguments = maskJSON(j.mask, l.Arguments)
	l.Result = maskJSON(j.mask, l.Result)
	if l.Answers != nil {
		answers := make([]Answer, len(*l.Answers))
		for i, a := range *l.Answers {
			answers[i] = Answer{Tool: a.Tool, Arguments: maskJSON(j.mask, a.Arguments), Result: maskJSON(j.mask, a.Result)}
		}
		l.Answers = &answers
	}
	j.maskHeader(&l.Header)
	line, ok := j.encodeCall(&l)
	if !ok {
		return
	}
	var before func(*file) []byte
	if r.catalog != nil {
		before = func(f *file) []byte {
			if _, has := f.catalogs[l.Profile]; has {
				return nil
			}
			return j.catalogLine(f, l.Header, r.catalog())
		}
	}
	j.write(l.Task, line, before)
}

// Catalog records the tools a session of the task was listed, unless the
// task's file already has this catalog as the profile's latest.
func (j *Journal) Catalog(h Header, servers []Server) {
	if !j.On() {
		return
	}
	h.Kind = KindCatalog
	j.maskHeader(&h)
	j.write(h.Task, nil, func(f *file) []byte { return j.catalogLine(f, h, servers) })
}

// catalogLine is the line of a catalog for f, or nil if f's latest
// catalog of the profile is the same; the caller holds f's lock and
// writes the line.
func (j *Journal) catalogLine(f *file, h Header, servers []Server) []byte {
	h.Kind = KindCatalog
	if servers == nil {
		servers = []Server{}
	}
	tools, err := json.Marshal(servers)
	if err != nil {
		j.log.Warn("journal: tool catalog not recorded", "error", err)
		return nil
	}
	sum := sha256.Sum256(tools)
	hash := hex.EncodeToString(sum[:])
	if f.catalogs[h.Profile] == hash {
		return nil
	}
	line, ok := j.encode(struct {
		Header
		Servers json.RawMessage `json:"servers"`
	}{h, maskJSON(j.mask, tools)})
	if !ok {
		return nil
	}
	f.catalogs[h.Profile] = hash
	return line
}

func (j *Journal) maskHeader(h *Header) {
	h.Task, h.Session = j.mask.Mask(h.Task), j.mask.Mask(h.Session)
	if h.Client != nil {
		h.Client = &Client{Name: j.mask.Mask(h.Client.Name), Version: j.mask.Mask(h.Client.Version)}
	}
}

// encodeCall is the JSON line of a call, newline included. The result,
// which may be big, is copied in as it is (EncodeResult's output is
// compact JSON) rather than validated and compacted again by
// json.Marshal; the arguments, as the client sent them, are compacted.
func (j *Journal) encodeCall(l *CallLine) ([]byte, bool) {
	head, ok := j.encode(struct {
		Header
		Tool   string `json:"tool"`
		Server string `json:"server"`
	}{l.Header, l.Tool, l.Server})
	if !ok {
		return nil, false
	}
	rest, ok := j.encode(struct {
		IsError     bool      `json:"is_error"`
		DurationMS  float64   `json:"duration_ms"`
		Rule        string    `json:"rule,omitempty"`
		Action      string    `json:"action,omitempty"`
		Hits        []Hit     `json:"hits,omitempty"`
		CorrectedTo string    `json:"corrected_to,omitempty"`
		Failure     string    `json:"failure,omitempty"`
		Timeout     string    `json:"timeout,omitempty"`
		Replayed    bool      `json:"replayed,omitempty"`
		Cost        *Cost     `json:"cost,omitempty"`
		Drift       string    `json:"drift,omitempty"`
		Answers     *[]Answer `json:"answers,omitempty"`
	}{l.IsError, l.DurationMS, l.Rule, l.Action, l.Hits, l.CorrectedTo, l.Failure, l.Timeout, l.Replayed, l.Cost, l.Drift, l.Answers})
	if !ok {
		return nil, false
	}
	args := compactOrNull(l.Arguments)
	result := l.Result
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	line := make([]byte, 0, len(head)+len(args)+len(result)+len(rest)+32)
	line = append(line, head[:len(head)-2]...) // without "}\n"
	line = append(line, `,"arguments":`...)
	line = append(line, args...)
	line = append(line, `,"result":`...)
	line = append(line, result...)
	line = append(line, ',')
	line = append(line, rest[1:]...) // without "{"
	return line, true
}

// compactOrNull is raw on one line, or null if it is absent or not JSON.
// Arguments come from a request the SDK has parsed, so they are JSON; a
// raw line break in them can only be insignificant space (JSON strings
// escape theirs), and only then are they compacted.
func compactOrNull(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("null")
	}
	if !bytes.ContainsAny(raw, "\r\n") {
		return raw
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return []byte("null")
	}
	return b.Bytes()
}

// encode is the JSON line of v, newline included.
func (j *Journal) encode(v any) ([]byte, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a value that JSON cannot hold gets here; count it as lost.
		j.log.Error("journal: cannot encode a line", "error", err)
		if j.onError != nil {
			j.onError()
		}
		return nil, false
	}
	return append(b, '\n'), true
}
