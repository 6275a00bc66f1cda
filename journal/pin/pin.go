// Package pin checks tool definitions against the ones trusted before:
// a recorded run or a manifest (mcpmux.yaml's pin, `mcpmux pin write`),
// or the definitions first seen (tool_pinning, kept in a state file until
// `mcpmux approve`). A changed tool is described by a diff a person can
// read.
package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/journal/replay"
)

// Manifest is the file `mcpmux pin write` makes: each server's tools as
// trusted, with their hashes (journal.ToolHash).
type Manifest struct {
	Version int              `json:"version"`
	Servers []journal.Server `json:"servers"`
}

// ManifestVersion is the version of Manifest this mcpmux writes.
const ManifestVersion = 1

// Key names a tool: its server and its own name.
type Key struct{ Server, Tool string }

// Set is trusted definitions by tool.
type Set map[Key]*mcp.Tool

// Load reads trusted definitions from a journal directory (its recorded
// catalogs, a server's latest list first) or a manifest file.
func Load(path string) (Set, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var servers []journal.Server
	if st.IsDir() {
		rp := replay.Open(replay.Options{Dir: path})
		if err := rp.Err(); err != nil {
			return nil, err
		}
		servers = rp.Catalog()
		if len(servers) == 0 {
			return nil, fmt.Errorf("%s: the journal records no tool catalog", path)
		}
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var m Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: not a pin manifest (mcpmux pin write makes one): %v", path, err)
		}
		if m.Version != ManifestVersion {
			return nil, fmt.Errorf("%s: manifest version %d, this mcpmux reads %d", path, m.Version, ManifestVersion)
		}
		servers = m.Servers
	}
	set := Set{}
	for _, s := range servers {
		for _, t := range s.Tools {
			if t != nil {
				set[Key{s.Name, t.Name}] = t
			}
		}
	}
	return set, nil
}

// WriteManifest writes servers as a manifest, each tool with its hash.
func WriteManifest(path string, servers []journal.Server) error {
	for i := range servers {
		servers[i].Hashes = map[string]string{}
		for _, t := range servers[i].Tools {
			servers[i].Hashes[t.Name] = journal.ToolHash(t)
		}
	}
	b, err := json.MarshalIndent(Manifest{Version: ManifestVersion, Servers: servers}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Changed says what differs between a trusted definition and the current
// one ("" if nothing pinning watches): the fields, for a journal line.
func Changed(trusted, now *mcp.Tool) string {
	if journal.ToolHash(trusted) == journal.ToolHash(now) {
		return ""
	}
	var fields []string
	a, b := fieldsOf(trusted), fieldsOf(now)
	for _, f := range fieldOrder {
		if a[f] != b[f] {
			fields = append(fields, f)
		}
	}
	return strings.Join(fields, ", ")
}

var fieldOrder = []string{"name", "title", "description", "inputSchema", "outputSchema"}

// fieldsOf is each watched field as indented canonical JSON.
func fieldsOf(t *mcp.Tool) map[string]string {
	p := journal.Pinned(t)
	out := map[string]string{}
	for f, v := range map[string]any{"name": p.Name, "title": p.Title, "description": p.Description, "inputSchema": p.InputSchema, "outputSchema": p.OutputSchema} {
		b, _ := json.Marshal(v)
		if canon, ok := journal.Canonical(b); ok && !bytes.Equal(b, []byte("null")) {
			b = canon
		}
		var ind bytes.Buffer
		if json.Indent(&ind, b, "", "  ") == nil {
			b = ind.Bytes()
		}
		out[f] = string(b)
	}
	return out
}

// Diff is a readable diff of the watched fields of two definitions: per
// changed field, the lines removed (-) and added (+).
func Diff(trusted, now *mcp.Tool) string {
	a, b := fieldsOf(trusted), fieldsOf(now)
	var out strings.Builder
	for _, f := range fieldOrder {
		if a[f] == b[f] {
			continue
		}
		fmt.Fprintf(&out, "%s:\n", f)
		for _, l := range lineDiff(strings.Split(a[f], "\n"), strings.Split(b[f], "\n")) {
			fmt.Fprintf(&out, "  %s\n", l)
		}
	}
	return strings.TrimRight(out.String(), "\n")
}

// lineDiff is the changed lines of a and b, by their longest common
// subsequence: "- line" for a's, "+ line" for b's. Definitions are small;
// beyond maxDiffLines a side is shown whole.
func lineDiff(a, b []string) []string {
	const maxDiffLines = 400
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		var out []string
		for _, l := range a {
			out = append(out, "- "+l)
		}
		for _, l := range b {
			out = append(out, "+ "+l)
		}
		return out
	}
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	return out
}

// State is tool_pinning's state file: per tool, the definition first
// seen (trusted) and, for a tool that changed since, the new one waiting
// for `mcpmux approve`.
type State struct {
	Version int                   `json:"version"`
	Tools   map[string]*StateTool `json:"tools"` // by "server/tool"
}

// StateTool is one tool of State.
type StateTool struct {
	Server  string    `json:"server"`
	Tool    string    `json:"tool"`
	Trusted *mcp.Tool `json:"trusted"`
	Hash    string    `json:"hash"`
	Pending *mcp.Tool `json:"pending,omitempty"` // quarantined until approved
}

func stateKey(server, tool string) string { return server + "/" + tool }

// ReadState reads a state file; a missing one is an empty state.
func ReadState(path string) (*State, error) {
	s := &State{Version: ManifestVersion, Tools: map[string]*StateTool{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: not a tool_pinning state file: %v", path, err)
	}
	if s.Tools == nil {
		s.Tools = map[string]*StateTool{}
	}
	return s, nil
}

// Write writes the state, replacing the file in one rename.
func (s *State) Write(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Observe records the current definition of a tool: trusted if it is
// the first seen, pending if it differs from the trusted one (or from
// the pending one, replaced). It reports whether the state changed.
func (s *State) Observe(server string, t *mcp.Tool) bool {
	k := stateKey(server, t.Name)
	st := s.Tools[k]
	h := journal.ToolHash(t)
	switch {
	case st == nil:
		s.Tools[k] = &StateTool{Server: server, Tool: t.Name, Trusted: t, Hash: h}
		return true
	case st.Hash == h:
		changed := st.Pending != nil
		st.Pending = nil // changed back to what was trusted
		return changed
	case st.Pending != nil && journal.ToolHash(st.Pending) == h:
		return false
	}
	st.Pending = t
	return true
}

// Trusted is the definition of a tool trusted by the state, nil if none.
func (s *State) Trusted(server, tool string) *mcp.Tool {
	if st := s.Tools[stateKey(server, tool)]; st != nil {
		return st.Trusted
	}
	return nil
}

// Approve trusts the pending definitions of a server's tools (tool ""
// for all of them) and returns the tools approved.
func (s *State) Approve(server, tool string) []string {
	var done []string
	for _, k := range slices.Sorted(maps.Keys(s.Tools)) {
		st := s.Tools[k]
		if st.Server != server || (tool != "" && st.Tool != tool) || st.Pending == nil {
			continue
		}
		st.Trusted, st.Hash, st.Pending = st.Pending, journal.ToolHash(st.Pending), nil
		done = append(done, st.Tool)
	}
	return done
}
