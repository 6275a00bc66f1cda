package aggregator

import (
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// quoteName is a requested name as error messages quote it: cut after
// MaxNameLength bytes, so that an absurd name is not echoed back whole.
func quoteName(name string) string {
	if len(name) <= MaxNameLength {
		return name
	}
	return strings.ToValidUTF8(name[:MaxNameLength], "") + "…"
}

// lookup finds the visible tools a mistaken name may have meant. server is
// the server part of the name (empty for a bare name), known whether it
// names a server of the catalog, and tool the tool part looked up.
//
// It is linear in the length of name: a part longer than any prefix or
// tool name of the view is never looked up (hashing each would make a
// name full of separators cost quadratic time).
func lookup(v *view, name string) (server string, known bool, tool string, candidates []*Entry) {
	sep := v.settings.Separator
	inProfile := func(prefix string) bool {
		if len(prefix) > v.longestPrefix {
			return false
		}
		s, ok := v.cat.ServerForPrefix(prefix)
		return ok && v.hasServer(s)
	}
	named := func(tool string) []*Entry {
		if len(tool) > v.longestTool {
			return nil
		}
		return v.byTool[tool]
	}
	if prefix, rest, ok := SplitName(name, sep, inProfile); ok {
		// A known server without that tool: look for it elsewhere.
		owner, _ := v.cat.ServerForPrefix(prefix)
		return prefix, true, rest, withoutServer(named(rest), owner)
	}
	if c := named(name); len(c) > 0 {
		return "", false, name, c
	}
	// An unknown server part: try the rest after each separator.
	for i := strings.Index(name, sep); i > 0 && i+len(sep) < len(name); {
		rest := name[i+len(sep):]
		if c := named(rest); len(c) > 0 {
			return name[:i], false, rest, c
		}
		j := strings.Index(rest, sep)
		if j < 0 {
			break
		}
		i += len(sep) + j
	}
	if i := strings.Index(name, sep); i > 0 && i+len(sep) < len(name) {
		return name[:i], false, name[i+len(sep):], nil
	}
	return "", false, name, nil
}

func withoutServer(entries []*Entry, server string) []*Entry {
	return slices.DeleteFunc(slices.Clone(entries), func(e *Entry) bool { return e.Server == server })
}

// hiddenByTool returns a blacklisted entry with the server's tool name.
func hiddenByTool(v *view, tool string) *Entry {
	for _, name := range sortedKeys(v.hidden) {
		if e := v.hidden[name]; e.Tool == tool {
			return e
		}
	}
	return nil
}

// closest returns up to n visible names nearest to the requested name or
// its tool part, by edit distance.
func closest(name, tool string, v *view, n int) []string {
	type scored struct {
		name string
		d    int
	}
	var all []scored
	for exposed, e := range v.visible {
		d := min(editDistance(name, exposed), editDistance(tool, e.Tool))
		limit := max(2, len(tool)/2)
		if d <= limit || strings.Contains(e.Tool, tool) || strings.Contains(tool, e.Tool) {
			all = append(all, scored{exposed, d})
		}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sessionID(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	if id := ss.ID(); id != "" {
		return id
	}
	return "stdio"
}
