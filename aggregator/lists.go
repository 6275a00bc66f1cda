package aggregator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/mcpmux/mcpmux/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file answers tools/list, prompts/list, resources/list and
// resources/templates/list. The SDK would list what is registered sorted
// by name; clients get each server's items in the server's own order
// instead (servers in config order), and a client's tool list leaves out
// the tools its servers would not list to a client with its capabilities.
// Items are still registered with the SDK, which routes calls, reads and
// gets to their handlers.

// listPageSize is how many items a page holds, as the SDK's default.
const listPageSize = mcp.DefaultPageSize

// listing answers a client's lists (tools, prompts, resources, templates)
// with what that client may see, and with their caching hints
// (cachehints.go). It is given by New what it uses, not the *Aggregator:
// the pool's servers, a session's client key and, for the tool list, the
// hooks of the parts that shape it (recording, lazy lists, MCP tasks).
type listing struct {
	servers  func() []*upstream.Server          // the pool's servers, sorted by name
	server   func(name string) *upstream.Server // one of them by name; nil if none
	clientID func(ctx context.Context, ss *mcp.ServerSession) upstream.ClientID

	// record notes what a client may call, listed or not, for a replay
	// of its calls (recording.listed).
	record func(p *profile, req *mcp.ListToolsRequest, v *view, tools []*Entry)
	// lazy is a lazy profile's tool list for a client: the tools expose
	// added to it (lazyLists.listed).
	lazy func(v *view, ss *mcp.ServerSession, tools []*Entry) []*Entry
	// toolDef encodes a listed tool for a client, with or without tasks
	// (mcpTasks.toolListing). Set by New once mcpTasks exists, which the
	// pipeline, and so sessionTools, comes before.
	toolDef func(ss *mcp.ServerSession) func(*Entry) json.RawMessage

	// seen are the capability sets of the clients that have come and
	// declared fewer than shared connections: what each server lists to
	// them is asked when they come, and of servers that come up later
	// (see clientCame).
	seenMu sync.Mutex
	seen   map[upstream.ClientFeatures]bool
}

// middleware answers the list requests of p's clients from p's view.
func (l *listing) middleware(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch r := req.(type) {
			case *mcp.ListToolsRequest:
				v := p.view.Load()
				tools := l.sessionTools(ctx, v, r.Session)
				var cursor string
				if r.Params != nil {
					cursor = r.Params.Cursor
				}
				if cursor == "" {
					// What the client may call, listed or not: what a
					// replay of its calls needs.
					l.record(p, r, v, tools)
				}
				if v.lazy {
					tools = l.lazy(v, r.Session, tools)
				}
				defs, next, err := page(tools, func(e *Entry) string { return e.Name }, cursor, l.toolDef(r.Session))
				if err != nil {
					return nil, err
				}
				return &listResult{field: "tools", items: defs, nextCursor: next, cache: l.cacheHints(r, v, false)}, nil
			case *mcp.ListPromptsRequest:
				var cursor string
				if r.Params != nil {
					cursor = r.Params.Cursor
				}
				v := p.view.Load()
				defs, next, err := page(v.promptList, itemKey, cursor, func(it *Item[*mcp.Prompt]) json.RawMessage { return it.listed })
				if err != nil {
					return nil, err
				}
				return &listResult{field: "prompts", items: defs, nextCursor: next, cache: l.cacheHints(r, v, false)}, nil
			case *mcp.ListResourcesRequest:
				var cursor string
				if r.Params != nil {
					cursor = r.Params.Cursor
				}
				v := p.view.Load()
				defs, next, err := page(v.resourceList, itemKey, cursor, itemDef)
				if err != nil {
					return nil, err
				}
				var own []*mcp.Resource
				if next == "" {
					own = l.clientResources(ctx, v, r.Session)
					defs = append(defs, own...)
				}
				return &mcp.ListResourcesResult{Resources: defs, NextCursor: next, Cacheable: l.cacheHints(r, v, len(own) > 0)}, nil
			case *mcp.ListResourceTemplatesRequest:
				var cursor string
				if r.Params != nil {
					cursor = r.Params.Cursor
				}
				v := p.view.Load()
				defs, next, err := page(v.templateList, itemKey, cursor, itemDef)
				if err != nil {
					return nil, err
				}
				return &mcp.ListResourceTemplatesResult{ResourceTemplates: defs, NextCursor: next, Cacheable: l.cacheHints(r, v, false)}, nil
			}
			return next(ctx, method, req)
		}
	}
}

// listResult is a page of tools or prompts, each as listed (Entry.listed):
// encoded once per catalog, copied per request.
type listResult struct {
	mcp.ResultBase
	field       string
	items       []json.RawMessage
	nextCursor  string
	cache       mcp.Cacheable // its caching hints (cachehints.go)
	sessionless bool          // see markSessionless
}

// markSessionless has the list carry a resultType and its caching hints,
// as the SDK's own lists do on the sessionless protocol.
func (r *listResult) markSessionless() { r.sessionless = true }

func (r *listResult) MarshalJSON() ([]byte, error) {
	n := len(r.field) + len(r.nextCursor) + 32
	for _, it := range r.items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"`...)
	b = append(b, r.field...)
	b = append(b, `":[`...)
	for i, it := range r.items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, ']')
	if r.nextCursor != "" {
		c, _ := json.Marshal(r.nextCursor)
		b = append(b, `,"nextCursor":`...)
		b = append(b, c...)
	}
	if r.sessionless {
		scope := r.cache.CacheScope
		if scope == "" {
			scope = "public"
		}
		b = append(b, `,"resultType":"complete","ttlMs":`...)
		b = strconv.AppendInt(b, int64(r.cache.TTLMs), 10)
		b = append(b, `,"cacheScope":"`...)
		b = append(b, scope...)
		b = append(b, '"')
	}
	if len(r.Meta) > 0 {
		m, err := json.Marshal(r.Meta)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"_meta":`...)
		b = append(b, m...)
	}
	return append(b, '}'), nil
}

func itemKey[T any](it *Item[T]) string { return it.Key }
func itemDef[T any](it *Item[T]) T      { return it.Def }

// page returns the page of items after cursor, and the cursor of the next
// page ("" after the last). A cursor names the last item of its page; if
// that item has left the list meanwhile, listing goes on from the position
// the cursor also records, so that a list changing under a client neither
// fails nor loops.
func page[T, D any](items []T, key func(T) string, cursor string, def func(T) D) ([]D, string, error) {
	start := 0
	if cursor != "" {
		c, ok := decodeCursor(cursor)
		if !ok {
			return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		start = min(c.pos, len(items))
		if i := slices.IndexFunc(items, func(t T) bool { return key(t) == c.key }); i >= 0 {
			start = i + 1
		}
	}
	end := min(start+listPageSize, len(items))
	out := make([]D, 0, end-start) // never JSON null
	for _, it := range items[start:end] {
		out = append(out, def(it))
	}
	next := ""
	if end < len(items) {
		next = encodeCursor(listCursor{key: key(items[end-1]), pos: end})
	}
	return out, next, nil
}

// listCursor is the position after the last item of a page.
type listCursor struct {
	key string // the last item's key
	pos int    // the index after it when the page was made
}

func encodeCursor(c listCursor) string {
	b := make([]byte, 0, len(c.key)+12)
	b = appendUvarint(b, uint64(c.pos))
	b = append(b, c.key...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (listCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return listCursor{}, false
	}
	pos, n := uvarint(b)
	if n <= 0 || pos > 1<<31 {
		return listCursor{}, false
	}
	return listCursor{key: string(b[n:]), pos: int(pos)}, true
}

func appendUvarint(b []byte, x uint64) []byte {
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}

// sessionTools returns the tools of v that the client of a request may
// see (its capabilities: see clientFeatures): all of them for a client
// that declared every capability mcpmux forwards; for one that
// declared fewer, only those each server lists to such a client (see
// upstream.Server.ToolsFor). A server that cannot be asked keeps its
// tools listed.
func (l *listing) sessionTools(ctx context.Context, v *view, ss *mcp.ServerSession) []*Entry {
	f := clientFeatures(ctx, ss)
	if f.ListsAll() {
		return v.toolList
	}
	servers := map[string]bool{}
	for _, e := range v.toolList {
		if e.meta == nil {
			servers[e.Server] = true
		}
	}
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		listed = map[string]map[string]bool{} // server → tools it lists to f; absent: all
	)
	for name := range servers {
		srv := l.server(name)
		if srv == nil {
			continue
		}
		wg.Go(func() {
			names, err := srv.ToolsFor(ctx, f)
			if err != nil || names == nil {
				return
			}
			mu.Lock()
			listed[name] = names
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(listed) == 0 {
		return v.toolList
	}
	out := make([]*Entry, 0, len(v.toolList))
	for _, e := range v.toolList {
		if names, ok := listed[e.Server]; ok && !names[e.Tool] {
			continue
		}
		out = append(out, e)
	}
	return out
}

// clientCame notes the capabilities f of a client that has initialized
// and, the first time a client with f comes, asks every server what it
// lists to such a client, in the background: its first tools/list, a
// round trip later, then waits less or not at all. Nothing is asked
// ahead of a client (a server starts once; see upstream.Server.ToolsFor).
func (l *listing) clientCame(f upstream.ClientFeatures) {
	if f.ListsAll() {
		return
	}
	l.seenMu.Lock()
	known := l.seen[f]
	if !known {
		if l.seen == nil {
			l.seen = map[upstream.ClientFeatures]bool{}
		}
		l.seen[f] = true // at most 2^7 sets: the features are 7 booleans
	}
	l.seenMu.Unlock()
	if known {
		return
	}
	for _, s := range l.servers() {
		s.Prefetch(f)
	}
}

// featureSets are the capability sets clientCame has seen.
func (l *listing) featureSets() []upstream.ClientFeatures {
	l.seenMu.Lock()
	defer l.seenMu.Unlock()
	out := make([]upstream.ClientFeatures, 0, len(l.seen))
	for f := range l.seen {
		out = append(out, f)
	}
	return out
}

// clientResources are the resources that servers with a connection per
// client list to ss's own connection alone (those they made for its
// session), at the end of its resources/list; read through that
// connection (unlistedMiddleware routes their URIs to their server).
func (l *listing) clientResources(ctx context.Context, v *view, ss *mcp.ServerSession) []*mcp.Resource {
	if ss == nil {
		return nil
	}
	var out []*mcp.Resource
	for _, srv := range l.servers() {
		if !srv.PerClient() || !v.hasServer(srv.Name()) {
			continue
		}
		out = append(out, srv.ClientResources(ctx, l.clientID(ctx, ss))...)
	}
	return out
}
