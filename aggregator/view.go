package aggregator

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

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
	blocked  map[[2]string]bool  // the profile's blacklist: {server, tool} pairs
	held     map[string]*Drift   // changed since pinned, refused (pinning.go)
	byTool   map[string][]*Entry // server's tool name → visible entries
	servers  map[string]bool     // servers of the profile; nil means all

	// lazy is the profile's catalog: lazy (lazy.go); pinned are then the
	// tools every client of it is listed: the meta tools and always.
	lazy   bool
	pinned map[*Entry]bool

	// longestTool and longestPrefix are the lengths of the longest key of
	// byTool and of the profile's server prefixes: a longer part of a
	// requested name cannot be one, so resolving never hashes it.
	longestTool, longestPrefix int
	// longestName is the longest name the profile lists or hides.
	longestName int

	prompts   map[string]*Item[*mcp.Prompt]
	resources map[string]*Item[*mcp.Resource]
	templates map[string]*Item[*mcp.ResourceTemplate]

	// The lists as clients get them: servers in config order, each
	// server's items in its order, then mcpmux's meta tools.
	toolList     []*Entry
	promptList   []*Item[*mcp.Prompt]
	resourceList []*Item[*mcp.Resource]
	templateList []*Item[*mcp.ResourceTemplate]
	// matchers are templateList's templates, compiled; nil for one that
	// does not compile.
	matchers []*uritemplate.Template
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
	v.blocked = blocked
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
		if d := cat.drift[e.Name]; d != nil && d.refuse {
			if v.held == nil {
				v.held = map[string]*Drift{}
			}
			v.held[e.Name] = d
			continue
		}
		v.visible[e.Name] = e
		v.byTool[e.Tool] = append(v.byTool[e.Tool], e)
	}
	var always []string
	v.lazy, always = settings.CatalogOf(name)
	v.addMetaTools(blocked)
	v.measureNames()
	for _, e := range cat.Entries() {
		if v.visible[e.Name] == e {
			v.toolList = append(v.toolList, e)
		}
	}
	for _, m := range metaTable {
		if e := v.visible[metaName(settings.Separator, m.def.Name)]; e != nil && e.meta != nil {
			v.toolList = append(v.toolList, e)
		}
	}
	if v.lazy {
		v.pinned = pinnedTools(v.toolList, always)
	}
	v.prompts, v.promptList = inProfile(v, cat.prompts)
	v.resources, v.resourceList = inProfile(v, cat.resources)
	v.templates, v.templateList = inProfile(v, cat.templates)
	for _, it := range v.templateList {
		t, _ := uritemplate.New(it.Key)
		v.matchers = append(v.matchers, t)
	}
	return v
}

// matchTemplate returns the first template of the view that matches uri.
func (v *view) matchTemplate(uri string) (*Item[*mcp.ResourceTemplate], bool) {
	for i, t := range v.matchers {
		if t != nil && t.Match(uri) != nil {
			return v.templateList[i], true
		}
	}
	return nil, false
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

// inProfile keeps the items of the profile's servers, as a map and in list
// order.
func inProfile[T any](v *view, all map[string]*Item[T]) (map[string]*Item[T], []*Item[T]) {
	out := make(map[string]*Item[T], len(all))
	var list []*Item[T]
	for k, it := range all {
		if v.hasServer(it.Server) {
			out[k] = it
			list = append(list, it)
		}
	}
	slices.SortFunc(list, func(a, b *Item[T]) int { return a.order.compare(b.order) })
	return out, list
}

// blacklistedName is the entry a name the catalog does not hold would
// have if it did, when the profile's blacklist names its server and tool:
// a call of it gets the blacklist's answer, as when the server lists it.
// A replay with catalog: recorded needs that, since the recorded catalogs
// hold only the tools a session was listed, never the blacklisted ones.
func (v *view) blacklistedName(name string) *Entry {
	if len(v.blocked) == 0 {
		return nil
	}
	prefix, tool, ok := SplitName(name, v.settings.Separator, func(prefix string) bool {
		s, ok := v.cat.ServerForPrefix(prefix)
		return ok && v.hasServer(s)
	})
	if !ok {
		return nil
	}
	server, _ := v.cat.ServerForPrefix(prefix)
	if !v.blocked[[2]string{server, tool}] {
		return nil
	}
	return &Entry{Name: name, Server: server, Tool: tool}
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
