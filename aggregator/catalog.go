package aggregator

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/aggregator/toolsearch"
)

// ServerFeatures is what the catalog needs to know of one tool server.
type ServerFeatures struct {
	Name    string // config name, used in blacklists and routing
	Prefix  string // namespace in exposed names; "" for bare names
	Tools   []*mcp.Tool
	Prompts []*mcp.Prompt
	// ToolJSON and PromptJSON hold definitions as the server listed them,
	// by name (see upstream.Features); a definition without one is
	// listed as decoded.
	ToolJSON, PromptJSON map[string]json.RawMessage
	Resources            []*mcp.Resource
	Templates            []*mcp.ResourceTemplate
	// Instructions are the server's instructions for the model; "" if none.
	Instructions string
	// Subscribe reports whether the server supports resources/subscribe.
	Subscribe bool
	// Tasks: a server of MCP 2026-07-28 with the tasks extension, whose
	// every tool may run as a task (upstream.Features.Tasks).
	Tasks bool
}

// serverRoutes is what routing needs to know of a server beyond its items:
// where to send a URI or a name that no listed item has.
type serverRoutes struct {
	name, prefix string
	subscribe    bool     // supports resources/subscribe
	resources    bool     // lists resources or templates, or takes subscriptions
	prompts      bool     // lists prompts
	uriPrefixes  []string // listed URIs, and the literal heads of its templates
}

// ServerInstructions are one server's instructions, merged into mcpmux's.
type ServerInstructions struct {
	Server string // config name
	Prefix string // namespace of its tools and prompts
	Text   string
}

// Item is one exposed prompt, resource or resource template.
type Item[T any] struct {
	Key    string          // exposed name (prompts) or URI (resources, templates)
	Server string          // config name of the server
	Orig   string          // the server's own name or URI
	Def    T               // definition, under the exposed key
	listed json.RawMessage // prompts: the server's own JSON under the exposed name; nil for others
	hash   string
	order  listOrder
}

// listOrder places an exposed item in its list: servers in config order,
// each server's items in the order the server lists them.
type listOrder struct{ server, item int }

func (o listOrder) compare(p listOrder) int {
	if c := cmp.Compare(o.server, p.server); c != 0 {
		return c
	}
	return cmp.Compare(o.item, p.item)
}

// Entry is one exposed tool.
type Entry struct {
	Name   string // exposed name
	Server string // config name of the server
	Tool   string // the server's own name for the tool
	// Def is the definition as listed to clients (Name = exposed name).
	// Its schemas are encoded once, as json.RawMessage, so that every
	// tools/list copies bytes instead of encoding maps by reflection.
	Def *mcp.Tool
	// listed is the definition as tools/list gives it: the server's own
	// JSON under the exposed name (listedAs).
	listed json.RawMessage
	hash   string // identifies the definition and route, to skip re-registering an unchanged tool
	order  listOrder

	// meta is set for mcpmux's own meta tools (meta.go), which no server
	// serves.
	meta metaHandler

	// taskSupport is the tool's execution.taskSupport; plainListed, for a
	// task-required tool, its listing for clients without tasks (see
	// mcptasks.go).
	taskSupport string
	plainListed json.RawMessage
	// extensionTasks: a tool of a 2026-07-28 server with the tasks
	// extension, listed as task-capable to clients of 2025 tasks
	// (setExtensionTasks).
	extensionTasks bool

	// params are the input schema's parameters, for mcpmux__find_tools.
	params []toolsearch.Param
}

// Catalog is an immutable index of every tool of every server. It is
// rebuilt whenever a server's tool list changes; lookups are map reads.
type Catalog struct {
	sep      string
	entries  []*Entry          // in list order (see listOrder)
	byName   map[string]*Entry // exposed name → entry
	prefixes map[string]string // prefix → server
	// Conflicts lists tools that could not be exposed (a bare-name clash).
	Conflicts []error
	// drift are the tools changed since they were pinned or trusted
	// (pinning.go), by exposed name; set once built.
	drift map[string]*Drift

	prompts   map[string]*Item[*mcp.Prompt]           // exposed name → prompt
	resources map[string]*Item[*mcp.Resource]         // exposed URI → resource
	templates map[string]*Item[*mcp.ResourceTemplate] // exposed URI template → template
	// Instructions are each server's instructions, servers in config
	// order; servers without any are left out.
	Instructions []ServerInstructions
	routes       []serverRoutes // servers in config order

	// encoded holds each listed tool's encodings, by the server's
	// definition (whose lists are never modified), for the next build.
	encoded map[*mcp.Tool]*encodedTool

	search searchIndex // see SearchIndex
}

// encodedTool is what a build encodes of a server's tool definition.
type encodedTool struct {
	input  json.RawMessage // normalized input schema
	output json.RawMessage // output schema; nil if none or not encodable
	raw    json.RawMessage // as the server listed it; nil if unknown
	sum    [sha256.Size]byte
	tasks  string             // execution.taskSupport as listed
	params []toolsearch.Param // the input schema's parameters
}

// encodeTool encodes t, listed by the server as raw (may be nil), once for
// every build that lists it.
func encodeTool(t *mcp.Tool, raw json.RawMessage) *encodedTool {
	en := &encodedTool{}
	var err error
	switch in := normalizeInputSchema(t.InputSchema).(type) {
	case json.RawMessage:
		en.input = in // shared with the server's definition
	default:
		if en.input, err = json.Marshal(in); err != nil {
			en.input = json.RawMessage(`{"type":"object"}`)
		}
	}
	if out, ok := t.OutputSchema.(json.RawMessage); ok {
		en.output = out
	} else if t.OutputSchema != nil {
		if b, err := json.Marshal(t.OutputSchema); err == nil {
			en.output = b
		}
	}
	en.raw = raw
	en.tasks = taskSupportOf(raw)
	en.params = paramsOf(en.input)
	h := sha256.New()
	if raw != nil {
		h.Write(raw) // all of it: fields the decoded t lacks too
	} else if err := json.NewEncoder(h).Encode(t); err != nil {
		fmt.Fprint(h, err)
	}
	h.Sum(en.sum[:0])
	return en
}

// hash identifies the exposed definition of the tool (a function of the
// server's definition and the exposed name) together with its route.
func (en *encodedTool) hash(name, server, tool string) string {
	h := sha256.New()
	h.Write(en.sum[:])
	fmt.Fprintf(h, "\x00%s\x00%s\x00%s", name, server, tool)
	return string(h.Sum(nil))
}

// BuildCatalog indexes the tools of servers, given in config order, which
// is the order they are listed in. Names follow ExposedName; when two tools
// still end up with one name, the one listed later (servers in name order,
// tools in their server's order) gets the hashed form, except that a
// server with bare names never displaces another: its clashing tool is left
// out and reported in Conflicts.
func BuildCatalog(servers []ServerFeatures, sep string, maxLen int) *Catalog {
	return buildCatalog(servers, sep, maxLen, nil)
}

// buildCatalog is BuildCatalog reusing the encodings of prev (may be nil)
// for definitions it already had: a rebuild encodes only new tools.
func buildCatalog(servers []ServerFeatures, sep string, maxLen int, prev *Catalog) *Catalog {
	c := &Catalog{sep: sep, byName: map[string]*Entry{}, prefixes: map[string]string{}, encoded: map[*mcp.Tool]*encodedTool{},
		prompts: map[string]*Item[*mcp.Prompt]{}, resources: map[string]*Item[*mcp.Resource]{}, templates: map[string]*Item[*mcp.ResourceTemplate]{}}
	rank := make(map[string]int, len(servers))
	for i, s := range servers {
		rank[s.Name] = i
		if s.Instructions != "" {
			c.Instructions = append(c.Instructions, ServerInstructions{Server: s.Name, Prefix: s.Prefix, Text: s.Instructions})
		}
		c.routes = append(c.routes, routesOf(s))
	}
	servers = slices.Clone(servers)
	// Prefixed servers first, so that bare names lose any clash.
	slices.SortFunc(servers, func(a, b ServerFeatures) int {
		if (a.Prefix == "") != (b.Prefix == "") {
			if a.Prefix == "" {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	for _, s := range servers {
		if s.Prefix != "" {
			c.prefixes[s.Prefix] = s.Name
		}
		for i, t := range s.Tools {
			if t == nil || t.Name == "" {
				continue
			}
			name := ExposedName(s.Prefix, sep, t.Name, maxLen)
			if prev, taken := c.byName[name]; taken {
				if s.Prefix == "" {
					c.Conflicts = append(c.Conflicts, fmt.Errorf("server %q: tool %q is not exposed: its bare name clashes with %q of server %q (set a prefix)", s.Name, t.Name, prev.Tool, prev.Server))
					continue
				}
				raw := s.Prefix + sep + t.Name
				name = hashedName(sanitize(raw), raw, limit(maxLen))
				if _, taken := c.byName[name]; taken {
					c.Conflicts = append(c.Conflicts, fmt.Errorf("server %q: tool %q is listed twice", s.Name, t.Name))
					continue
				}
			}
			en := c.encoded[t]
			if en == nil && prev != nil {
				en = prev.encoded[t]
			}
			if en == nil {
				en = encodeTool(t, s.ToolJSON[t.Name])
			}
			c.encoded[t] = en
			e := &Entry{Name: name, Server: s.Name, Tool: t.Name, Def: exposedDef(t, name, en), order: listOrder{rank[s.Name], i}}
			e.listed = listedAs(en.raw, "name", name, e.Def)
			if en.tasks == "" && s.Tasks {
				e.setExtensionTasks()
			} else {
				e.setTaskListing(en.tasks)
			}
			e.params = en.params
			e.hash = en.hash(name, s.Name, t.Name)
			c.byName[name] = e
			c.entries = append(c.entries, e)
		}
	}
	slices.SortFunc(c.entries, func(a, b *Entry) int { return a.order.compare(b.order) })
	c.indexPromptsAndResources(servers, rank, maxLen)
	if prev != nil {
		c.search.prev = prev.search.latest()
	}
	return c
}

// routesOf collects what routing needs of a server.
func routesOf(s ServerFeatures) serverRoutes {
	r := serverRoutes{name: s.Name, prefix: s.Prefix, subscribe: s.Subscribe, prompts: len(s.Prompts) > 0,
		resources: s.Subscribe || len(s.Resources)+len(s.Templates) > 0}
	for _, res := range s.Resources {
		if res != nil && res.URI != "" {
			r.uriPrefixes = append(r.uriPrefixes, res.URI)
		}
	}
	for _, t := range s.Templates {
		if t == nil {
			continue
		}
		head, _, _ := strings.Cut(t.URITemplate, "{")
		if head != "" {
			r.uriPrefixes = append(r.uriPrefixes, head)
		}
	}
	return r
}

// URIPrefix starts the exposed URI of a resource whose URI more than one
// server uses: mcpmux://<server>/<the server's URI>, so that the mapping
// stays reversible. A URI only one server uses is exposed unchanged.
const URIPrefix = "mcpmux://"

// ExposedURI returns the client-facing URI (or URI template) of a server's
// resource; shared says whether another server uses the same URI.
func ExposedURI(server, uri string, shared bool) string {
	if !shared {
		return uri
	}
	return URIPrefix + server + "/" + uri
}

// indexPromptsAndResources names prompts like tools (prefix, separator,
// name) and exposes resources and templates under their own URIs, unless
// several servers use the same one.
func (c *Catalog) indexPromptsAndResources(servers []ServerFeatures, rank map[string]int, maxLen int) {
	uses := map[string]int{}
	for _, s := range servers {
		seen := map[string]bool{}
		for _, r := range s.Resources {
			if r != nil && !seen[r.URI] {
				seen[r.URI] = true
				uses[r.URI]++
			}
		}
		for _, t := range s.Templates {
			if t != nil && !seen[t.URITemplate] {
				seen[t.URITemplate] = true
				uses[t.URITemplate]++
			}
		}
	}
	for _, s := range servers {
		for i, p := range s.Prompts {
			if p == nil || p.Name == "" {
				continue
			}
			name := ExposedName(s.Prefix, c.sep, p.Name, maxLen)
			if _, taken := c.prompts[name]; taken {
				raw := s.Prefix + c.sep + p.Name
				name = hashedName(sanitize(raw), raw, limit(maxLen))
			}
			d := *p
			d.Name = name
			listed := listedAs(s.PromptJSON[p.Name], "name", name, &d)
			c.prompts[name] = &Item[*mcp.Prompt]{Key: name, Server: s.Name, Orig: p.Name, Def: &d, listed: listed, hash: defHash(listed, s.Name, p.Name), order: listOrder{rank[s.Name], i}}
		}
		for i, r := range s.Resources {
			if r == nil || r.URI == "" {
				continue
			}
			uri := ExposedURI(s.Name, r.URI, uses[r.URI] > 1)
			d := *r
			d.URI = uri
			c.resources[uri] = &Item[*mcp.Resource]{Key: uri, Server: s.Name, Orig: r.URI, Def: &d, hash: defHash(&d, s.Name, r.URI), order: listOrder{rank[s.Name], i}}
		}
		for i, t := range s.Templates {
			if t == nil || t.URITemplate == "" {
				continue
			}
			uri := ExposedURI(s.Name, t.URITemplate, uses[t.URITemplate] > 1)
			d := *t
			d.URITemplate = uri
			c.templates[uri] = &Item[*mcp.ResourceTemplate]{Key: uri, Server: s.Name, Orig: t.URITemplate, Def: &d, hash: defHash(&d, s.Name, t.URITemplate), order: listOrder{rank[s.Name], i}}
		}
	}
}

func limit(maxLen int) int {
	if maxLen <= 0 {
		return MaxNameLength
	}
	return maxLen
}

// Entries returns all entries in list order: servers in config order, each
// server's tools in its own order. Callers must not modify them.
func (c *Catalog) Entries() []*Entry { return c.entries }

// Lookup returns the entry with the exposed name.
func (c *Catalog) Lookup(name string) (*Entry, bool) {
	e, ok := c.byName[name]
	return e, ok
}

// ServerForPrefix returns the server whose namespace is prefix.
func (c *Catalog) ServerForPrefix(prefix string) (string, bool) {
	s, ok := c.prefixes[prefix]
	return s, ok
}

// exposedDef copies a downstream tool definition under its exposed name,
// with the schemas as encoded: the input schema normalized to one the SDK
// accepts (it panics on anything but an object schema, and downstream
// servers are not always that careful), and an output schema that cannot
// be encoded dropped.
func exposedDef(t *mcp.Tool, name string, en *encodedTool) *mcp.Tool {
	d := *t
	d.Name = name
	d.InputSchema = en.input
	d.OutputSchema = nil
	if en.output != nil {
		d.OutputSchema = en.output
	}
	return &d
}

// normalizeInputSchema returns schema if it is a JSON object schema, the
// schema with "type": "object" added if it has none, and an empty object
// schema otherwise (the downstream server still validates its arguments).
func normalizeInputSchema(schema any) any {
	var m map[string]any
	switch s := schema.(type) {
	case json.RawMessage:
		// The usual case, decided without decoding the whole schema.
		var head struct {
			Type any `json:"type"`
		}
		if json.Unmarshal(s, &head) == nil && head.Type == "object" {
			return s
		}
		if json.Unmarshal(s, &m) != nil || m == nil {
			return map[string]any{"type": "object"}
		}
	case map[string]any:
		m = s
	case nil:
		return map[string]any{"type": "object"}
	default:
		b, err := json.Marshal(s)
		if err != nil || json.Unmarshal(b, &m) != nil || m == nil {
			return map[string]any{"type": "object"}
		}
	}
	switch m["type"] {
	case "object":
		return m
	case nil:
		m2 := make(map[string]any, len(m)+1)
		for k, v := range m {
			m2[k] = v
		}
		m2["type"] = "object"
		return m2
	}
	return map[string]any{"type": "object"}
}

// defHash identifies a definition together with its route: a handler
// captures the route, so a tool moving to another server must be
// registered again even if its definition is the same.
func defHash(t any, server, tool string) string {
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(t); err != nil {
		fmt.Fprint(h, err)
	}
	fmt.Fprintf(h, "\x00%s\x00%s", server, tool)
	return string(h.Sum(nil))
}
