package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/upstream"
)

// MetaServer is the namespace of the tools mcpmux serves itself when
// mcpmux.yaml lists them in meta_tools: mcpmux<sep>status and so on. In
// blacklists they are the pairs [MetaServer, <name>].
//
// A server's tool whose exposed name is a meta tool's gives way to it (and
// an error is logged): a client reading the docs of mcpmux__status must
// get mcpmux's status, whatever servers are configured.
const MetaServer = "mcpmux"

// metaHandler answers a call of a meta tool for profile p.
type metaHandler func(a *Aggregator, ctx context.Context, p *profile, c *toolCall) *result

type metaTool struct {
	def    mcp.Tool // Name is the short name
	handle metaHandler
}

// metaTools are the meta tools, in listing order: the one table of them.
// A new meta tool is an entry here with its definition and its handler (a
// method on *Aggregator below); its name goes into config.MetaToolNames
// and the enum of meta_tools in config/schema/mcpmux.schema.json, which
// TestMetaToolsAreDefinedOnce holds to this table.
var metaTools = []metaTool{
	{
		def: mcp.Tool{
			Name:        config.MetaToolStatus,
			Title:       "mcpmux status",
			Description: "Shows the state of each tool server behind mcpmux (up, starting, restarting, failed), its number of tools, restarts and last error. Use it when a tool fails or is missing.",
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
		},
		handle: (*Aggregator).metaStatus,
	},
	{
		def: mcp.Tool{
			Name:        config.MetaToolFindTools,
			Title:       "Find tools",
			Description: "Searches all tools available to you, including tools not in your tool list and tools added after you listed them. Describe what you want to do in a few words; returns the best matches first, with their descriptions and input schemas. Call one with its name (directly, or through mcpmux__call_tool if your tool list does not have it). An empty query lists every tool.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"query":  map[string]any{"type": "string", "description": "Words to look for, e.g. \"read file\" or \"browser screenshot\"."},
					"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": maxFindLimit, "description": fmt.Sprintf("Most tools to return; default %d.", defaultFindLimit)},
					"expose": map[string]any{"type": "boolean", "description": fmt.Sprintf("Also add the tools returned to your tool list (tools/list_changed tells you), where mcpmux lists tools lazily. At most %d are added; those used least recently leave first.", maxExposed)},
				},
			},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
		},
		handle: (*Aggregator).metaFindTools,
	},
	{
		def: mcp.Tool{
			Name:        config.MetaToolCallTool,
			Title:       "Call a tool by name",
			Description: "Calls any tool available to you by its exposed name (as mcpmux__find_tools returns it) with the given arguments, and returns its result. Use it for tools that are not in your tool list yet.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":      map[string]any{"type": "string", "description": "Exposed name of the tool, e.g. \"filesystem__read_file\"."},
					"arguments": map[string]any{"type": "object", "description": "Arguments of the tool, matching its input schema."},
				},
				"required": []any{"name"},
			},
		},
		handle: (*Aggregator).metaCallTool,
	},
}

// metaName is the exposed name of a meta tool.
func metaName(sep, name string) string { return ExposedName(MetaServer, sep, name, 0) }

// addMetaTools adds the enabled meta tools to a view, unless blocked (the
// [MetaServer, name] pairs of the blacklists) hides them.
func (v *view) addMetaTools(blocked map[[2]string]bool) {
	for _, m := range metaTools {
		if !v.servesMeta(m.def.Name) {
			continue
		}
		name := metaName(v.settings.Separator, m.def.Name)
		if old := v.visible[name]; old != nil {
			delete(v.visible, name)
			v.byTool[old.Tool] = slices.DeleteFunc(slices.Clone(v.byTool[old.Tool]), func(e *Entry) bool { return e == old })
		}
		def := m.def
		def.Name = name
		e := &Entry{Name: name, Server: MetaServer, Tool: m.def.Name, Def: &def, listed: listedAs(nil, "name", name, &def), meta: m.handle}
		e.hash = defHash(e.Def, MetaServer, m.def.Name)
		if blocked[[2]string{MetaServer, m.def.Name}] {
			v.hidden[name] = e
			continue
		}
		delete(v.hidden, name)
		v.visible[name] = e
	}
}

// logShadowedByMetaTools reports server tools that a meta tool hides.
func (a *Aggregator) logShadowedByMetaTools() {
	lazy := a.anyLazy()
	for _, m := range metaTools {
		if !a.settings.HasMetaTool(m.def.Name) && !(lazy && lazyMeta(m.def.Name)) {
			continue
		}
		name := metaName(a.settings.Separator, m.def.Name)
		if e, ok := a.catalog.Lookup(name); ok {
			a.log.Error("tool not exposed: the meta tool of mcpmux.yaml's meta_tools has its name; give the server another prefix", "tool", name, "server", e.Server)
		}
	}
}

// anyLazy reports whether a profile lists its tools lazily.
func (a *Aggregator) anyLazy() bool {
	for _, name := range append([]string{DefaultProfile}, a.settings.ProfileNames()...) {
		if lazy, _ := a.settings.CatalogOf(name); lazy {
			return true
		}
	}
	return false
}

// searchable reports whether some profile serves mcpmux__find_tools.
func (a *Aggregator) searchable() bool {
	return a.settings.HasMetaTool(config.MetaToolFindTools) || a.anyLazy()
}

// metaResult is a meta tool's answer: text for every client, and the same
// as structuredContent for those that read it.
func metaResult(text string, structured any) *result {
	return decoded(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured})
}

// metaArgs decodes a meta tool's arguments into v.
func metaArgs(c *toolCall, name string, v any) *mcp.CallToolResult {
	raw, err := callArguments(c.args)
	if err == nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		return toolError("%s was not run: %v. Pass the arguments as a JSON object matching its input schema.", name, err)
	}
	return nil
}

// countMeta records a meta tool's call under server MetaServer.
func (a *Aggregator) countMeta(tool string, res *result) *result {
	a.metrics.CallAnswered(MetaServer, tool, resultOutcome(res.isError()))
	return res
}

// ServerState is one server in mcpmux__status: upstream.Status without
// the other clients' session ids.
type ServerState struct {
	Name      string    `json:"name"`
	State     string    `json:"state"`
	Error     string    `json:"error,omitempty"`
	Tools     int       `json:"tools"`
	Restarts  int       `json:"restarts"`
	Transport string    `json:"transport"`
	Protocol  string    `json:"protocol,omitempty"` // the MCP version spoken with it
	Session   string    `json:"session"`
	Clients   int       `json:"clients,omitempty"`
	Since     time.Time `json:"since"`
}

// StatusResult is the structuredContent of mcpmux__status.
type StatusResult struct {
	Ready   bool          `json:"ready"`
	Servers []ServerState `json:"servers"`
	// Drifted are the profile's tools changed since they were pinned or
	// trusted, with the diff.
	Drifted []Drift `json:"drifted_tools,omitempty"`
}

// metaStatus reports the state of the profile's servers.
func (a *Aggregator) metaStatus(_ context.Context, p *profile, _ *toolCall) *result {
	v := p.view.Load()
	h := a.Health()
	out := StatusResult{Ready: h.Ready, Servers: []ServerState{}}
	var b strings.Builder
	up := 0
	for _, st := range h.Servers {
		if !v.hasServer(st.Name) {
			continue
		}
		st.Error = a.mask.Mask(st.Error) // a child's stderr may quote its secrets
		out.Servers = append(out.Servers, ServerState{Name: st.Name, State: string(st.State), Error: st.Error, Tools: st.Tools,
			Restarts: st.Restarts, Transport: st.Transport, Protocol: st.Protocol, Session: st.Session, Clients: st.Clients, Since: st.Since})
		if st.State == upstream.StateUp {
			up++
		}
		transport := st.Transport
		if st.Protocol != "" {
			transport += " (MCP " + st.Protocol + ")"
		}
		fmt.Fprintf(&b, "\n- %s: %s, %d tools, %s, %s session, %d restarts, since %s", st.Name, st.State, st.Tools, transport, st.Session, st.Restarts, st.Since.UTC().Format(time.RFC3339))
		if st.Error != "" {
			fmt.Fprintf(&b, "; last error: %s", oneLine(st.Error))
		}
	}
	head := "mcpmux is ready"
	if !h.Ready {
		head = "mcpmux is starting"
	}
	for _, d := range h.Drifted {
		if !v.hasServer(d.Server) {
			continue
		}
		out.Drifted = append(out.Drifted, d)
		state := "flagged (pin.on_change: warn)"
		switch {
		case d.By == toolPinningRule:
			state = "quarantined until approved (mcpmux approve " + d.Server + " " + d.Tool + ")"
		case d.refuse:
			state = "refused (pin)"
		}
		fmt.Fprintf(&b, "\n- tool %s changed since it was trusted (%s): %s\n%s", d.Name, d.Changed, state, d.Diff)
	}
	text := fmt.Sprintf("%s: %d of %d servers up.%s", head, up, len(out.Servers), b.String())
	return a.countMeta(config.MetaToolStatus, metaResult(text, out))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

const (
	defaultFindLimit = 10
	maxFindLimit     = 100
)

// FoundTool is one tool in mcpmux__find_tools' structuredContent.
type FoundTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema"`
}

// FindResult is the structuredContent of mcpmux__find_tools.
type FindResult struct {
	Tools []FoundTool `json:"tools"`
	// Total is the number of matches, of which Tools are the best.
	Total int `json:"total"`
}

// metaFindTools searches the caller's current catalog and, with expose
// in a lazy profile, adds what it found to the caller's tool list.
func (a *Aggregator) metaFindTools(ctx context.Context, p *profile, c *toolCall) *result {
	name := metaName(p.view.Load().settings.Separator, config.MetaToolFindTools)
	var args struct {
		Query  string `json:"query"`
		Limit  int    `json:"limit"`
		Expose bool   `json:"expose"`
	}
	if res := metaArgs(c, name, &args); res != nil {
		return a.countMeta(config.MetaToolFindTools, decoded(res))
	}
	limit := args.Limit
	if limit <= 0 {
		limit = defaultFindLimit
	}
	limit = min(limit, maxFindLimit)
	v := p.view.Load()
	found, total := a.findTools(ctx, v, c.session, args.Query, limit)
	out := FindResult{Tools: []FoundTool{}, Total: total}
	var b strings.Builder
	switch {
	case total == 0:
		fmt.Fprintf(&b, "No tool matches %q. Try other words, or an empty query to list every tool.", args.Query)
	case total > len(found):
		fmt.Fprintf(&b, "%d tools match; the best %d:", total, len(found))
	default:
		fmt.Fprintf(&b, "%d tools match:", total)
	}
	if args.Expose && len(found) > 0 {
		b.WriteString(" ")
		b.WriteString(a.exposeNote(ctx, v, c.session, found))
	}
	for _, e := range found {
		schema, _ := json.Marshal(e.Def.InputSchema)
		out.Tools = append(out.Tools, FoundTool{Name: e.Name, Description: e.Def.Description, InputSchema: e.Def.InputSchema})
		fmt.Fprintf(&b, "\n\n%s: %s\ninput schema: %s", e.Name, oneLine(e.Def.Description), schema)
	}
	return a.countMeta(config.MetaToolFindTools, metaResult(b.String(), out))
}

// exposeNote exposes found to the caller (lazy.go) and says what came of
// it.
func (a *Aggregator) exposeNote(ctx context.Context, v *view, ss *mcp.ServerSession, found []*Entry) string {
	switch {
	case !v.lazy:
		return "(expose: your tool list already has every tool.)"
	case a.stateless || ss == nil || requestIsItsOwnClient(ctx):
		return "(expose: mcpmux serves without sessions here, so it keeps no tool list per client; call these tools through mcpmux__call_tool.)"
	}
	added, told := a.expose(ctx, v, ss, found)
	switch {
	case added == 0:
		return "(expose: your tool list already has them.)"
	case told:
		return fmt.Sprintf("(expose: %d added to your tool list; tools/list_changed sent.)", added)
	}
	return fmt.Sprintf("(expose: %d added to your tool list, which you get with tools/list; until then call them through mcpmux__call_tool.)", added)
}

// findTools returns the best limit tools (not the meta tools) the caller
// may call that match query, best first (package toolsearch), and how
// many match; an empty query matches all of them, in list order. The
// caller's tools are what its tool list would show in an eager catalog:
// not the tools its servers list only to clients with capabilities it
// lacks.
func (a *Aggregator) findTools(ctx context.Context, v *view, ss *mcp.ServerSession, query string, limit int) ([]*Entry, int) {
	callable := map[string]*Entry{}
	var all []*Entry
	for _, e := range a.sessionTools(ctx, v, ss) {
		if e.meta == nil {
			callable[e.Name] = e
			all = append(all, e)
		}
	}
	if strings.TrimSpace(query) == "" {
		return all[:min(limit, len(all))], len(all)
	}
	hits, total := v.cat.SearchIndex().Search(query, func(name string) bool { return callable[name] != nil }, limit)
	out := make([]*Entry, len(hits))
	for i, h := range hits {
		out[i] = callable[h.Name]
	}
	return out, total
}

// metaCallTool calls the named tool as if the client had called it: the
// same routing, blacklist, auto-correction and timeouts.
func (a *Aggregator) metaCallTool(ctx context.Context, p *profile, c *toolCall) *result {
	self := metaName(p.view.Load().settings.Separator, config.MetaToolCallTool)
	var args struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if res := metaArgs(c, self, &args); res != nil {
		return a.countMeta(config.MetaToolCallTool, decoded(res))
	}
	if args.Name == "" {
		return a.countMeta(config.MetaToolCallTool, decoded(toolError("%s needs name: the exposed name of the tool to call, as mcpmux__find_tools returns it.", self)))
	}
	if args.Name == self {
		return a.countMeta(config.MetaToolCallTool, decoded(toolError("%s cannot call itself; pass the name of the tool you want to call.", self)))
	}
	return a.countMeta(config.MetaToolCallTool, a.pipeline.call(ctx, p, c.derive(args.Name, args.Arguments)))
}
