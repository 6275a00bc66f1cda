package aggregator

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// view is what one profile sees of the catalog: the tools it lists and may
// call, the tools hidden from it by a blacklist, and an index by the
// servers' own tool names for auto-correction. Views are immutable.
type view struct {
	profile  string
	settings *config.Settings
	cat      *Catalog
	visible  map[string]*Entry   // exposed name → entry
	hidden   map[string]*Entry   // blacklisted for this profile
	byTool   map[string][]*Entry // server's tool name → visible entries
	servers  map[string]bool     // servers of the profile; nil means all

	// longestTool and longestPrefix are the lengths of the longest key of
	// byTool and of the profile's server prefixes: a longer part of a
	// requested name cannot be one, so resolving never hashes it.
	longestTool, longestPrefix int
	// longestName is the longest name the profile lists or hides.
	longestName int

	prompts   map[string]*Item[*mcp.Prompt]
	resources map[string]*Item[*mcp.Resource]
	templates map[string]*Item[*mcp.ResourceTemplate]
}

// newView computes the view of profile name (DefaultProfile for the
// unrestricted one) from the catalog and settings.
func newView(name string, cat *Catalog, settings *config.Settings) *view {
	v := &view{
		profile:  name,
		settings: settings,
		cat:      cat,
		visible:  map[string]*Entry{},
		hidden:   map[string]*Entry{},
		byTool:   map[string][]*Entry{},
	}
	blocked := pairSet(settings.ToolBlacklist)
	if p := settings.Profiles[name]; p != nil {
		if len(p.ToolConfig) > 0 {
			v.servers = map[string]bool{}
			for _, s := range p.ToolConfig {
				v.servers[s] = true
			}
		}
		for k := range pairSet(p.ToolBlacklist) {
			blocked[k] = true
		}
	}
	for _, e := range cat.Entries() {
		if !v.hasServer(e.Server) {
			continue
		}
		if blocked[[2]string{e.Server, e.Tool}] {
			v.hidden[e.Name] = e
			continue
		}
		v.visible[e.Name] = e
		v.byTool[e.Tool] = append(v.byTool[e.Tool], e)
	}
	v.addMetaTools(blocked)
	v.measureNames()
	v.prompts = inProfile(v, cat.prompts)
	v.resources = inProfile(v, cat.resources)
	v.templates = inProfile(v, cat.templates)
	return v
}

// measureNames records the lengths resolve bounds its lookups by.
func (v *view) measureNames() {
	for _, m := range []map[string]*Entry{v.visible, v.hidden} {
		for name, e := range m {
			v.longestName = max(v.longestName, len(name))
			v.longestTool = max(v.longestTool, len(e.Tool))
		}
	}
	for prefix, server := range v.cat.prefixes {
		if v.hasServer(server) {
			v.longestPrefix = max(v.longestPrefix, len(prefix))
		}
	}
}

// resolvable reports whether a requested name is short enough to be one
// that auto-correction could resolve: at most as long as the longest
// listed or own tool name plus MaxNameLength, room for a mistaken server
// part (mcp__mcpmux__fetch__fetch). Clients cannot even list longer names.
// A longer one is unknown without a lookup, so that a megabyte of
// separators costs a comparison, not a hash per separator.
func (v *view) resolvable(name string) bool {
	return len(name) <= max(v.longestName, v.longestTool)+MaxNameLength
}

// inProfile keeps the items of the profile's servers.
func inProfile[T any](v *view, all map[string]*Item[T]) map[string]*Item[T] {
	out := make(map[string]*Item[T], len(all))
	for k, it := range all {
		if v.hasServer(it.Server) {
			out[k] = it
		}
	}
	return out
}

// hasServer reports whether the profile includes the server.
func (v *view) hasServer(server string) bool { return v.servers == nil || v.servers[server] }

func pairSet(pairs [][]string) map[[2]string]bool {
	m := make(map[[2]string]bool, len(pairs))
	for _, p := range pairs {
		if len(p) == 2 {
			m[[2]string{p[0], p[1]}] = true
		}
	}
	return m
}
