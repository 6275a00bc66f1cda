package aggregator

import (
	"context"
	"encoding/json"
	"path"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Lazy catalogs (catalog: lazy in mcpmux.yaml, globally or per profile).
//
// A lazy profile's tools/list has only the meta tools — find_tools and
// call_tool whatever meta_tools says — and the tools its always globs
// name: with many servers behind one endpoint, the full list costs a
// client tens of thousands of prompt tokens on every turn. Its clients
// find the rest with mcpmux__find_tools; expose: true adds what a search
// found to that client's list (and tells it with tools/list_changed), and
// any tool can be called, listed or not, by its name or through
// mcpmux__call_tool. Only listing is lazy: the view, and so routing,
// blacklists, rules, auto-correction, the journal and replay, are those of
// an eager profile.
//
// What a client was exposed is kept with the rest of its session's state
// (clientSession), so it ends with the session and follows however
// sessions are keyed.

// maxExposed bounds the tools expose adds to one client's list; past it
// the least recently exposed or called leave first.
const maxExposed = 64

// lazyMeta reports whether a lazy profile serves meta tool name even if
// meta_tools does not list it (metaTool.lazy): without them its clients
// could reach nothing beyond always.
func lazyMeta(name string) bool {
	i := slices.IndexFunc(metaTable, func(m metaTool) bool { return m.def.Name == name })
	return i >= 0 && metaTable[i].lazy
}

// servesMeta reports whether the view has meta tool name (the short name).
func (v *view) servesMeta(name string) bool {
	return v.settings.HasMetaTool(name) || (v.lazy && lazyMeta(name))
}

// pinnedTools are the tools of list that a lazy profile lists to every
// client: the meta tools, and the tools whose exposed or own name matches
// one of the always globs.
func pinnedTools(list []*Entry, always []string) map[*Entry]bool {
	out := map[*Entry]bool{}
	for _, e := range list {
		if e.meta != nil {
			out[e] = true
			continue
		}
		for _, g := range always {
			ok1, _ := path.Match(g, e.Name)
			ok2, _ := path.Match(g, e.Tool)
			if ok1 || ok2 {
				out[e] = true
				break
			}
		}
	}
	return out
}

// exposedTools are the exposed names expose added to one client's list,
// least recently used first.
type exposedTools []string

// use moves name to the most recent end, adding it if absent and dropping
// the least recent past maxExposed; it reports whether the set changed.
func (x *exposedTools) use(name string, add bool) bool {
	i := slices.Index(*x, name)
	switch {
	case i >= 0:
		*x = append(slices.Delete(*x, i, i+1), name)
		return false
	case !add:
		return false
	}
	*x = append(*x, name)
	if len(*x) > maxExposed {
		*x = slices.Delete(*x, 0, len(*x)-maxExposed)
	}
	return true
}

// lazyLists keeps each client's list of a lazy view: what expose added
// to it, in the client's session state (clientSession.exposed).
//
// It holds only what it needs, given at construction (New): the client
// sessions are reached through the funcs below, never through
// *Aggregator.
type lazyLists struct {
	// lookupClient is the state of session ss, nil if it has none yet
	// (clients.go).
	lookupClient func(ss *mcp.ServerSession) *clientSession
	// client is the state of session ss, made if it has none yet
	// (clients.go).
	client func(ctx context.Context, ss *mcp.ServerSession) *clientSession
	// notify sends the client of ss a notification outside any request,
	// and reports whether it could (taskfront.go).
	notify func(ss *mcp.ServerSession, method string, params json.RawMessage) bool
}

// listed keeps, of the tools a client of lazy view v may see, those it
// is listed: the pinned ones and those exposed to it.
func (l *lazyLists) listed(v *view, ss *mcp.ServerSession, tools []*Entry) []*Entry {
	var exposed map[string]bool
	if cs := l.lookupClient(ss); cs != nil {
		cs.mu.Lock()
		exposed = make(map[string]bool, len(cs.exposed))
		for _, name := range cs.exposed {
			exposed[name] = true
		}
		cs.mu.Unlock()
	}
	out := make([]*Entry, 0, len(v.pinned)+len(exposed))
	for _, e := range tools {
		if v.pinned[e] || exposed[e.Name] {
			out = append(out, e)
		}
	}
	return out
}

// expose adds found (best first) to the list of the client of session ss
// and, if that changed its list, sends it tools/list_changed. It returns
// how many tools were added and whether the client could be told.
func (l *lazyLists) expose(ctx context.Context, v *view, ss *mcp.ServerSession, found []*Entry) (added int, told bool) {
	cs := l.client(ctx, ss)
	cs.mu.Lock()
	// Worst first, so that when found is longer than the bound the best
	// are the ones kept.
	for _, e := range slices.Backward(found) {
		if !v.pinned[e] && cs.exposed.use(e.Name, true) {
			added++
		}
	}
	cs.mu.Unlock()
	if added == 0 {
		return 0, false
	}
	return added, l.notify(ss, "notifications/tools/list_changed", json.RawMessage(`{}`))
}

// touch marks a called tool as used, if it was exposed to the caller:
// the least recently used leave first.
func (l *lazyLists) touch(ss *mcp.ServerSession, name string) {
	if cs := l.lookupClient(ss); cs != nil {
		cs.mu.Lock()
		cs.exposed.use(name, false)
		cs.mu.Unlock()
	}
}
