package aggregator

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// describedServer returns a tool server whose tools (name → description)
// echo "<name>:<text>".
func describedServer(tools map[string]string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "described", Version: "1"}, nil)
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		s.AddTool(&mcp.Tool{
			Name:        name,
			Description: tools[name],
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		}, echo(name+":"))
	}
	return s
}

const allMetaTools = "meta_tools: [status, find_tools, call_tool]\n"

func metaHarness(t *testing.T, settings string) *harness {
	return newHarness(t, map[string]*mcp.Server{
		"files": describedServer(map[string]string{
			"read_file":  "Reads a text file from disk and returns its content.",
			"write_file": "Writes text to a file.",
			"list_dir":   "Lists the entries of a directory.",
		}),
		"web": describedServer(map[string]string{
			"fetch": "Fetches a URL and returns the page as Markdown.",
		}),
	}, settings, nil)
}

func find(t *testing.T, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, FindResult) {
	t.Helper()
	res := call(t, cs, "mcpmux__find_tools", args)
	var out FindResult
	if err := json.Unmarshal([]byte(testkit.JSON(t, res.StructuredContent)), &out); err != nil {
		t.Fatalf("structuredContent of find_tools: %v", err)
	}
	return res, out
}

func foundNames(r FindResult) []string {
	var names []string
	for _, ft := range r.Tools {
		names = append(names, ft.Name)
	}
	return names
}

func TestMetaToolsAreOptIn(t *testing.T) {
	h := metaHarness(t, "")
	cs := h.client(DefaultProfile)
	for _, name := range toolNames(t, cs) {
		if strings.HasPrefix(name, "mcpmux__") {
			t.Errorf("%s listed without meta_tools", name)
		}
	}
	if res := call(t, cs, "mcpmux__status", nil); !res.IsError {
		t.Errorf("mcpmux__status answered without meta_tools: %q", text(res))
	}
}

func TestFindToolsRanksByWordsAndRespectsTheProfile(t *testing.T) {
	h := metaHarness(t, allMetaTools+`tool_blacklist: [["files", "write_file"]]
profiles:
  web-only: {tool_config: [web]}
`)
	cs := h.client(DefaultProfile)
	names := toolNames(t, cs)
	for _, want := range []string{"mcpmux__status", "mcpmux__find_tools", "mcpmux__call_tool"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools = %v, want %s", names, want)
		}
	}

	res, found := find(t, cs, map[string]any{"query": "read a file"})
	if res.IsError || len(found.Tools) == 0 || found.Tools[0].Name != "files__read_file" {
		t.Fatalf("find 'read a file' = %v (%q), want files__read_file first", foundNames(found), text(res))
	}
	if slices.Contains(foundNames(found), "files__write_file") {
		t.Errorf("find lists the blacklisted files__write_file: %v", foundNames(found))
	}
	if schema, _ := found.Tools[0].InputSchema.(map[string]any); schema["type"] != "object" {
		t.Errorf("input schema = %v", found.Tools[0].InputSchema)
	}
	if !strings.Contains(text(res), "files__read_file: Reads a text file") || !strings.Contains(text(res), `"properties"`) {
		t.Errorf("text lacks the name, description or schema:\n%s", text(res))
	}

	// Words in any case and form; a description word counts.
	if _, found := find(t, cs, map[string]any{"query": "MARKDOWN"}); !slices.Equal(foundNames(found), []string{"web__fetch"}) {
		t.Errorf("find MARKDOWN = %v", foundNames(found))
	}
	if res, found := find(t, cs, map[string]any{"query": "zebra"}); found.Total != 0 || !strings.Contains(text(res), "No tool matches") {
		t.Errorf("find zebra = %v %q", foundNames(found), text(res))
	}
	// An empty query lists everything the caller may call, but no meta tool.
	if _, found := find(t, cs, nil); !slices.Equal(foundNames(found), []string{"files__list_dir", "files__read_file", "web__fetch"}) {
		t.Errorf("find all = %v", foundNames(found))
	}
	if _, found := find(t, cs, map[string]any{"limit": 1}); len(found.Tools) != 1 || found.Total != 3 {
		t.Errorf("find with limit 1 = %v, total %d", foundNames(found), found.Total)
	}
	if res := call(t, cs, "mcpmux__find_tools", map[string]any{"query": 3}); !res.IsError || !strings.Contains(text(res), "mcpmux__find_tools was not run") {
		t.Errorf("find with a number query = %q, want an error", text(res))
	}

	narrow := h.client("web-only")
	if _, found := find(t, narrow, map[string]any{"query": "file"}); found.Total != 0 {
		t.Errorf("web-only profile finds %v", foundNames(found))
	}
}

func TestCallToolGoesThroughThePipeline(t *testing.T) {
	h := metaHarness(t, allMetaTools+`tool_blacklist: [["files", "write_file"]]
profiles:
  web-only: {tool_config: [web]}
`)
	cs := h.client(DefaultProfile)
	callVia := func(cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		return call(t, cs, "mcpmux__call_tool", args)
	}
	if res := callVia(cs, map[string]any{"name": "files__read_file", "arguments": map[string]any{"text": "a.txt"}}); res.IsError || text(res) != "read_file:a.txt" {
		t.Errorf("call_tool files__read_file = %q (isError %v)", text(res), res.IsError)
	}
	if res := callVia(cs, map[string]any{"name": "files__list_dir"}); res.IsError || text(res) != "list_dir:" {
		t.Errorf("call_tool without arguments = %q (isError %v)", text(res), res.IsError)
	}
	if res := callVia(cs, map[string]any{"name": "files__write_file", "arguments": map[string]any{}}); !res.IsError || !strings.Contains(text(res), "blacklist") {
		t.Errorf("call_tool of a blacklisted tool = %q, want refused", text(res))
	}
	if res := callVia(cs, map[string]any{"name": "read_file", "arguments": map[string]any{"text": "b"}}); res.IsError || !strings.HasPrefix(text(res), "[Auto-corrected:") || !strings.HasSuffix(text(res), "read_file:b") {
		t.Errorf("call_tool of a bare name = %q, want auto-corrected", text(res))
	}
	if res := callVia(cs, map[string]any{"name": "files__read_file", "arguments": []any{1}}); !res.IsError || !strings.Contains(text(res), "must be a JSON object") {
		t.Errorf("call_tool with array arguments = %q", text(res))
	}
	if res := callVia(cs, map[string]any{"arguments": map[string]any{}}); !res.IsError || !strings.Contains(text(res), "needs name") {
		t.Errorf("call_tool without name = %q", text(res))
	}
	if res := callVia(cs, map[string]any{"name": "mcpmux__call_tool"}); !res.IsError || !strings.Contains(text(res), "cannot call itself") {
		t.Errorf("call_tool of itself = %q", text(res))
	}
	if res := callVia(cs, map[string]any{"name": "mcpmux__status"}); res.IsError || !strings.Contains(text(res), "servers up") {
		t.Errorf("call_tool of mcpmux__status = %q", text(res))
	}
	narrow := h.client("web-only")
	if res := callVia(narrow, map[string]any{"name": "files__read_file"}); !res.IsError || !strings.Contains(text(res), "Unknown tool") {
		t.Errorf("call_tool outside the profile = %q, want unknown", text(res))
	}
}

func TestStatusToolShowsTheProfilesServers(t *testing.T) {
	h := metaHarness(t, "meta_tools: [status]\nprofiles:\n  web-only: {tool_config: [web]}\n")
	res := call(t, h.client(DefaultProfile), "mcpmux__status", nil)
	var out StatusResult
	if err := json.Unmarshal([]byte(testkit.JSON(t, res.StructuredContent)), &out); err != nil {
		t.Fatal(err)
	}
	if res.IsError || !out.Ready || len(out.Servers) != 2 || out.Servers[0].Name != "files" || out.Servers[0].State != "up" || out.Servers[0].Tools != 3 || out.Servers[0].Protocol != "2026-07-28" {
		t.Errorf("status = %+v (%q)", out, text(res))
	}
	if want := "mcpmux is ready: 2 of 2 servers up.\n- files: up, 3 tools, stdio (MCP 2026-07-28), shared session"; !strings.HasPrefix(text(res), want) {
		t.Errorf("status text = %q, want it to start with %q", text(res), want)
	}
	res = call(t, h.client("web-only"), "mcpmux__status", nil)
	if !strings.Contains(text(res), "1 of 1 servers up") || strings.Contains(text(res), "files") {
		t.Errorf("web-only status = %q, want only web", text(res))
	}
}

func TestMetaToolsFollowSettingsAndBlacklist(t *testing.T) {
	h := metaHarness(t, "meta_tools: [status]\n")
	cs := h.client(DefaultProfile)
	has := func(name string) bool { return slices.Contains(toolNames(t, cs), name) }
	if !has("mcpmux__status") || has("mcpmux__find_tools") {
		t.Fatalf("tools = %v, want status only", toolNames(t, cs))
	}
	set := func(yaml string) {
		t.Helper()
		s, ferr := config.ParseSettings("mcpmux.yaml", []byte(yaml), nil)
		if ferr != nil {
			t.Fatal(ferr)
		}
		h.agg.SetSettings(s)
	}
	set(allMetaTools + `tool_blacklist: [["mcpmux", "status"]]`)
	if has("mcpmux__status") || !has("mcpmux__find_tools") || !has("mcpmux__call_tool") {
		t.Errorf("after enabling all and blacklisting status: %v", toolNames(t, cs))
	}
	if res := call(t, cs, "mcpmux__status", nil); !res.IsError || !strings.Contains(text(res), "blacklist") {
		t.Errorf("blacklisted status = %q", text(res))
	}
	set("")
	for _, name := range toolNames(t, cs) {
		if strings.HasPrefix(name, "mcpmux__") {
			t.Errorf("%s still listed after meta_tools was removed", name)
		}
	}
}

// A server named mcpmux keeps its tools, except one whose name a meta
// tool takes.
func TestMetaToolWinsOverAServerToolOfItsName(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"mcpmux": describedServer(map[string]string{"status": "A server's own status tool.", "other": "Another tool."}),
	}, "meta_tools: [status]\nseparator: \"-\"\n", nil)
	cs := h.client(DefaultProfile)
	if got, want := toolNames(t, cs), []string{"mcpmux-other", "mcpmux-status"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if res := call(t, cs, "mcpmux-status", nil); !strings.HasPrefix(text(res), "mcpmux is ready") {
		t.Errorf("mcpmux-status = %q, want mcpmux's status", text(res))
	}
	if res := call(t, cs, "mcpmux-other", map[string]any{"text": "x"}); text(res) != "other:x" {
		t.Errorf("mcpmux-other = %q", text(res))
	}
}

// A rebuild must not register meta tools again (AddTool notifies clients
// even for an identical tool): their hash is the same in every view.
func TestMetaToolsAreStableAcrossRebuilds(t *testing.T) {
	h := metaHarness(t, allMetaTools)
	before := h.agg.profile(DefaultProfile).view.Load()
	h.agg.Sync()
	after := h.agg.profile(DefaultProfile).view.Load()
	if before == after {
		t.Fatal("Sync published no new view")
	}
	for _, name := range []string{"mcpmux__status", "mcpmux__find_tools", "mcpmux__call_tool"} {
		if b, a := before.visible[name], after.visible[name]; b == nil || a == nil || b.hash != a.hash {
			t.Errorf("%s: hash changed across a rebuild (or missing)", name)
		}
	}
}

// metaTable is the one table of meta tools: the names mcpmux.yaml's
// meta_tools accepts (config.MetaToolNames) and the enum of its schema are
// its names, in its order, and those a lazy profile serves regardless
// (config.LazyMetaTools) are its entries marked lazy, so that a new meta
// tool left out of any fails here, naming what to add.
func TestMetaToolsAreDefinedOnce(t *testing.T) {
	var names []string
	for _, m := range metaTable {
		names = append(names, m.def.Name)
		if m.handle == nil || m.def.Description == "" || m.def.Title == "" {
			t.Errorf("meta tool %q needs a handler, a title and a description", m.def.Name)
		}
		if s, _ := m.def.InputSchema.(map[string]any); s["type"] != "object" {
			t.Errorf("meta tool %q: input schema %v, want an object schema", m.def.Name, m.def.InputSchema)
		}
	}
	if !slices.Equal(config.MetaToolNames, names) {
		t.Errorf("config.MetaToolNames = %q, want the names of metaTable, %q", config.MetaToolNames, names)
	}
	var lazy []string
	for _, m := range metaTable {
		if m.lazy {
			lazy = append(lazy, m.def.Name)
		}
	}
	if !slices.Equal(config.LazyMetaTools, lazy) {
		t.Errorf("config.LazyMetaTools = %q, want the names of metaTable marked lazy, %q", config.LazyMetaTools, lazy)
	}
	data, err := os.ReadFile(filepath.Join("..", "config", "schema", "mcpmux.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			MetaTools struct {
				Description string
				Items       struct{ Enum []string }
			} `json:"meta_tools"`
			Catalog struct{ Description string }
		}
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	mt := schema.Properties.MetaTools
	if !slices.Equal(mt.Items.Enum, names) {
		t.Errorf("config/schema/mcpmux.schema.json: meta_tools.items.enum = %q, want the names of metaTable, %q", mt.Items.Enum, names)
	}
	for _, n := range names {
		if !strings.Contains(mt.Description, n+" (") {
			t.Errorf("config/schema/mcpmux.schema.json: the description of meta_tools does not say what %s does", n)
		}
	}
	for _, n := range lazy {
		if !strings.Contains(schema.Properties.Catalog.Description, "mcpmux__"+n) {
			t.Errorf("config/schema/mcpmux.schema.json: the description of catalog does not name mcpmux__%s, which a lazy catalog lists", n)
		}
	}
}

// Each call of a meta tool is counted once, under server mcpmux and its
// short name, whichever way its handler answered; mcpmux__call_tool's
// call is counted under its own server too.
func TestMetaToolCallsAreCountedOnce(t *testing.T) {
	h := metaHarness(t, allMetaTools)
	cs := h.client(DefaultProfile)
	call(t, cs, "mcpmux__status", nil)
	call(t, cs, "mcpmux__find_tools", map[string]any{"query": "read"})
	call(t, cs, "mcpmux__find_tools", map[string]any{"limit": "many"}) // bad arguments
	call(t, cs, "mcpmux__call_tool", map[string]any{})                 // no name
	call(t, cs, "mcpmux__call_tool", map[string]any{"name": "mcpmux__call_tool"})
	call(t, cs, "mcpmux__call_tool", map[string]any{"name": "files__read_file", "arguments": map[string]any{"text": "x"}})
	gathered, err := h.agg.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]*dto.MetricFamily{}
	for _, f := range gathered {
		fams[f.GetName()] = f
	}
	wantSample(t, fams, "mcpmux_tool_calls_total", calls(MetaServer, "status", "ok"), 1)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls(MetaServer, "find_tools", "ok"), 1)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls(MetaServer, "find_tools", "error"), 1)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls(MetaServer, "call_tool", "error"), 2)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls(MetaServer, "call_tool", "ok"), 1)
	wantSample(t, fams, "mcpmux_tool_calls_total", calls("files", "read_file", "ok"), 1)
}
