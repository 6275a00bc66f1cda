// Package replay answers tool calls from a journal (package journal)
// instead of their servers: the same task calling the same tool with the
// same arguments gets what was recorded, so that an evaluation reruns
// without the web changing under it or a paid API being billed again.
package replay

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/journal"
)

// MetaKey marks a replayed result's _meta.
const MetaKey = "mcpmux/replayed"

// Options configure a Replay.
type Options struct {
	// Dir is the journal directory to replay.
	Dir string
	// MissCalls sends a call the journal does not hold to its server (the
	// caller's job: Answer returns nil); otherwise it gets an isError
	// result.
	MissCalls bool
	// Record is miss: record: a miss goes to the server (as with
	// MissCalls), whose answer the caller appends to the journal; and
	// an identical call made more often than recorded is a miss too (not
	// answered the last recorded answer again), so that each of them is
	// recorded in turn.
	Record bool
}

// Replay is an index of a journal's answers. It reads the journal once,
// keeping where each answer is, not the answer: a recorded run of many
// pages need not fit in memory. It is safe for concurrent use.
type Replay struct {
	dir       string
	missCalls bool
	record    bool
	err       error // why the journal could not be read; every call gets it

	mu    sync.Mutex
	calls map[key]*answers

	// Read at load, then only read.
	perTool map[string]int // task\x00tool → calls recorded
	catalog []journal.Server
	lines   int
	skipped int
	files   []error // files of the journal that are not read (not regular)
}

// key identifies a call: its task, tool and canonical arguments.
type key [sha256.Size]byte

func keyOf(task, tool string, canon []byte) key {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", task, tool)
	h.Write(canon)
	var k key
	h.Sum(k[:0])
	return k
}

// answers are the recorded answers to one call, in the order the calls
// were made, and how many were replayed.
type answers struct {
	refs []ref
	next int
}

// ref locates one answer: the line at off (n bytes) of path, and in it
// the answer at index (-1: the line's result).
type ref struct {
	time  time.Time
	seq   int // position of the line in the journal, then of the answer in it
	path  string
	off   int64
	n     int
	index int
}

// Open reads the journal in opts.Dir. A journal that cannot be read gives
// a Replay that answers every call with the reason (see Err), never one
// that silently calls the servers.
func Open(opts Options) *Replay {
	r := &Replay{dir: opts.Dir, missCalls: opts.MissCalls || opts.Record, record: opts.Record, calls: map[key]*answers{}, perTool: map[string]int{}}
	r.err = r.load()
	return r
}

// Err is why the journal could not be read, or nil.
func (r *Replay) Err() error { return r.err }

// Stats are what Open found: lines read, lines that could not be read
// (not JSON, or a call whose arguments are not), and distinct calls.
func (r *Replay) Stats() (lines, skipped, calls int) { return r.lines, r.skipped, len(r.calls) }

// SkippedFiles are the files of the journal directory that were not read,
// each an error saying why (a named pipe, a device: see journal.Files).
func (r *Replay) SkippedFiles() []error { return r.files }

// Catalog returns the servers and tools the journal's catalogs recorded,
// merged across sessions, tasks and profiles (servers by name; a server's
// tools as its latest catalog lists them, then those only older ones
// had), servers sorted by name.
func (r *Replay) Catalog() []journal.Server { return r.catalog }

func (r *Replay) load() error {
	files, skippedFiles, err := journal.Files(r.dir)
	if r.record && errors.Is(err, fs.ErrNotExist) {
		return nil // the first run of miss: record: nothing recorded yet
	}
	if err != nil {
		return err
	}
	r.files = skippedFiles
	type catalogAt struct {
		time time.Time
		seq  int
		s    journal.Server
	}
	var catalogs []catalogAt
	seq := 0
	for _, path := range files {
		err := journal.Scan(path, func(off int64, b []byte) error {
			seq++
			r.lines++
			var l journal.Line
			if err := json.Unmarshal(b, &l); err != nil {
				r.skipped++
				return nil
			}
			switch l.Kind {
			case journal.KindCatalog:
				for _, s := range l.Servers {
					catalogs = append(catalogs, catalogAt{l.Time, seq, s})
				}
			case journal.KindCall:
				at := ref{time: l.Time, path: path, off: off, n: len(b)}
				if l.Answers == nil {
					routed := cmp.Or(l.CorrectedTo, l.Tool)
					r.add(l.Task, routed, l.Arguments, at, seq*1000, -1)
					return nil
				}
				for i, a := range *l.Answers {
					r.add(l.Task, a.Tool, a.Arguments, at, seq*1000+i, i)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	}
	for _, a := range r.calls {
		slices.SortStableFunc(a.refs, func(x, y ref) int {
			if c := x.time.Compare(y.time); c != 0 {
				return c
			}
			return cmp.Compare(x.seq, y.seq)
		})
	}
	// Merge the catalogs, newest first: a server's latest tool list wins,
	// tools only older lists had are kept after it.
	slices.SortStableFunc(catalogs, func(x, y catalogAt) int {
		if c := y.time.Compare(x.time); c != 0 {
			return c
		}
		return cmp.Compare(y.seq, x.seq)
	})
	byName := map[string]*journal.Server{}
	for _, c := range catalogs {
		s := byName[c.s.Name]
		if s == nil {
			s = &journal.Server{Name: c.s.Name, Prefix: c.s.Prefix}
			byName[c.s.Name] = s
		}
		for _, t := range c.s.Tools {
			if t != nil && !slices.ContainsFunc(s.Tools, func(u *mcp.Tool) bool { return u.Name == t.Name }) {
				s.Tools = append(s.Tools, t)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		r.catalog = append(r.catalog, *byName[name])
	}
	return nil
}

func (r *Replay) add(task, tool string, args json.RawMessage, at ref, seq, index int) {
	canon, ok := journal.Canonical(args)
	if !ok {
		r.skipped++
		return
	}
	at.seq, at.index = seq, index
	k := keyOf(task, tool, canon)
	a := r.calls[k]
	if a == nil {
		a = &answers{}
		r.calls[k] = a
	}
	a.refs = append(a.refs, at)
	r.perTool[task+"\x00"+tool]++
}

// Answer answers a call of tool (its exposed name) with args in task from
// the journal: the n-th identical call gets the n-th recorded answer,
// later ones the last, with _meta MetaKey true. A call the journal does
// not hold gets nil with Options.MissCalls (the caller calls the server),
// an isError result naming the tool and task without. replayed tells
// which of the two a non-nil result is.
func (r *Replay) Answer(task, tool string, args json.RawMessage) (res *mcp.CallToolResult, replayed bool) {
	if r.err != nil {
		return toolError("Tool '%s' was not called: mcpmux replays calls from the journal in %s (mcpmux.yaml's replay), which could not be read: %v.", tool, r.dir, r.err), false
	}
	canon, ok := journal.Canonical(args)
	if !ok {
		return nil, false // not JSON: the server step says so
	}
	k := keyOf(task, tool, canon)
	r.mu.Lock()
	a := r.calls[k]
	var at ref
	switch {
	case a != nil && r.record && a.next >= len(a.refs):
		a.next++ // the n-th call, recorded as such by the caller
		a = nil
	case a != nil:
		at = a.refs[min(a.next, len(a.refs)-1)]
		a.next++
	case r.record:
		r.calls[k] = &answers{next: 1}
	}
	r.mu.Unlock()
	if a == nil {
		if r.missCalls {
			return nil, false
		}
		return r.missed(task, tool), false
	}
	res, err := read(at)
	if err != nil {
		return toolError("Tool '%s' was not called: its recorded answer in %s could not be read back (%v); the journal may have changed since mcpmux started.", tool, at.path, err), false
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta[MetaKey] = true
	return res, true
}

// missed is the answer to a call the journal does not hold.
func (r *Replay) missed(task, tool string) *mcp.CallToolResult {
	taskName := task
	if taskName == "" {
		taskName = "(none)"
	}
	other := ""
	if n := r.perTool[task+"\x00"+tool]; n > 0 {
		other = fmt.Sprintf(" It recorded %d call(s) of this tool in this task, with other arguments.", n)
	}
	return toolError("Tool '%s' was not called: mcpmux is replaying a recorded run (journal %s), and replay found no recorded call of this tool with these arguments in task '%s'.%s Call it as the recorded run did, or use another tool.", tool, r.dir, taskName, other)
}

// read reads a recorded answer back.
func read(at ref) (*mcp.CallToolResult, error) {
	b, err := journal.ReadLineAt(at.path, at.off, at.n)
	if err != nil {
		return nil, err
	}
	var l journal.CallLine
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("the line is no longer JSON: %w", err)
	}
	raw := l.Result
	if at.index >= 0 {
		if l.Answers == nil || at.index >= len(*l.Answers) {
			return nil, fmt.Errorf("the line no longer has answer %d", at.index)
		}
		raw = (*l.Answers)[at.index].Result
	}
	return journal.DecodeResult(raw)
}

func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}
