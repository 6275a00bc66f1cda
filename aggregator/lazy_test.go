package aggregator

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const lazySettings = `catalog: lazy
meta_tools: [find_tools]
always: ["*list_dir"]
tool_blacklist: [["files", "write_file"]]
profiles:
  eager: {catalog: eager}
  web: {tool_config: [web], always: []}
`

func TestLazyProfileListsOnlyMetaAndAlwaysTools(t *testing.T) {
	h := metaHarness(t, lazySettings)
	cs := h.client(DefaultProfile)
	// call_tool without meta_tools: a lazy profile needs it; status is not
	// served (meta_tools does not list it).
	if got, want := toolNames(t, cs), []string{"files__list_dir", "mcpmux__find_tools", "mcpmux__call_tool"}; !slices.Equal(got, want) {
		t.Errorf("lazy tools/list = %v, want %v", got, want)
	}
	if got, want := toolNames(t, h.client("web")), []string{"mcpmux__find_tools", "mcpmux__call_tool"}; !slices.Equal(got, want) {
		t.Errorf("lazy profile with always: [] lists %v, want %v", got, want)
	}
	if got := toolNames(t, h.client("eager")); !slices.Contains(got, "files__read_file") || slices.Contains(got, "mcpmux__call_tool") {
		t.Errorf("eager profile of a lazy config lists %v", got)
	}

	// Everything else works as for a listed tool: calls by name, through
	// call_tool, auto-correction, the blacklist.
	if res := call(t, cs, "files__read_file", map[string]any{"text": "a"}); res.IsError || text(res) != "read_file:a" {
		t.Errorf("unlisted files__read_file = %q", text(res))
	}
	if res := call(t, cs, "mcpmux__call_tool", map[string]any{"name": "web__fetch", "arguments": map[string]any{"text": "b"}}); text(res) != "fetch:b" {
		t.Errorf("call_tool web__fetch = %q", text(res))
	}
	if res := call(t, cs, "read_file", map[string]any{"text": "c"}); !strings.Contains(text(res), "Auto-corrected") {
		t.Errorf("bare read_file = %q, want auto-corrected", text(res))
	}
	if res := call(t, cs, "files__write_file", map[string]any{"text": "d"}); !res.IsError || !strings.Contains(text(res), "blacklist") {
		t.Errorf("blacklisted files__write_file = %q, want refused", text(res))
	}
	if _, found := find(t, cs, map[string]any{"query": "write text to a file"}); slices.Contains(foundNames(found), "files__write_file") {
		t.Errorf("find found the blacklisted tool: %v", foundNames(found))
	}
}

func TestExposeAddsFoundToolsToThatClientOnly(t *testing.T) {
	h := metaHarness(t, lazySettings)
	cs := h.client(DefaultProfile)
	other := h.client(DefaultProfile)

	res, found := find(t, cs, map[string]any{"query": "read a file", "limit": 1, "expose": true})
	if len(found.Tools) != 1 || found.Tools[0].Name != "files__read_file" || !strings.Contains(text(res), "1 added to your tool list") {
		t.Fatalf("find with expose = %v\n%s", foundNames(found), text(res))
	}
	if got := toolNames(t, cs); !slices.Contains(got, "files__read_file") {
		t.Errorf("after expose, tools/list = %v, want files__read_file in it", got)
	}
	if got := toolNames(t, other); slices.Contains(got, "files__read_file") {
		t.Errorf("another client's list got the exposed tool: %v", got)
	}
	// Exposing it again changes nothing.
	if res, _ := find(t, cs, map[string]any{"query": "read a file", "limit": 1, "expose": true}); !strings.Contains(text(res), "already has them") {
		t.Errorf("second expose = %q", text(res))
	}
	// expose where every tool is listed says so.
	if res, _ := find(t, h.client("eager"), map[string]any{"query": "fetch", "expose": true}); !strings.Contains(text(res), "already has every tool") {
		t.Errorf("expose in an eager profile = %q", text(res))
	}
}

// Past maxExposed, the tools used least recently leave the list first;
// a call counts as a use.
func TestExposedToolsAreBoundedLeastRecentlyUsedFirst(t *testing.T) {
	tools := map[string]string{}
	for i := range maxExposed + 6 {
		tools[fmt.Sprintf("gadget_%03d", i)] = fmt.Sprintf("Gadget number %d.", i)
	}
	h := newHarness(t, map[string]*mcp.Server{"g": describedServer(tools)}, "catalog: lazy\n", nil)
	cs := h.client(DefaultProfile)
	find(t, cs, map[string]any{"query": "gadget_000", "limit": 1, "expose": true})
	call(t, cs, "g__gadget_000", map[string]any{"text": "x"}) // used: kept
	find(t, cs, map[string]any{"query": "gadget_001", "limit": 1, "expose": true})
	for i := 2; i < maxExposed+6; i++ {
		find(t, cs, map[string]any{"query": fmt.Sprintf("gadget_%03d", i), "limit": 1, "expose": true})
		if i == maxExposed-1 {
			call(t, cs, "g__gadget_000", map[string]any{"text": "x"})
		}
	}
	got := toolNames(t, cs)
	if n := len(got) - 2; n != maxExposed {
		t.Errorf("%d tools exposed, want the bound %d", n, maxExposed)
	}
	if !slices.Contains(got, "g__gadget_000") {
		t.Error("a tool called recently left the list")
	}
	if slices.Contains(got, "g__gadget_001") {
		t.Error("the least recently used tool is still listed")
	}
	if !slices.Contains(got, fmt.Sprintf("g__gadget_%03d", maxExposed+5)) {
		t.Error("the latest exposed tool is not listed")
	}
}

// A tool a server adds is found at once: the search index follows the
// catalog.
func TestFindToolsFollowsReloads(t *testing.T) {
	dyn := describedServer(map[string]string{"one": "First tool."})
	h := newHarness(t, map[string]*mcp.Server{"dyn": dyn}, "catalog: lazy\n", nil)
	changed := make(chan struct{}, 10)
	cs := h.clientWith(DefaultProfile, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if _, found := find(t, cs, map[string]any{"query": "weather forecast"}); found.Total != 0 {
		t.Fatalf("found %v before the tool existed", foundNames(found))
	}
	dyn.AddTool(&mcp.Tool{Name: "forecast", Description: "Weather forecast for a city.", InputSchema: map[string]any{"type": "object"}}, echo("f:"))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed reached the client")
	}
	if _, found := find(t, cs, map[string]any{"query": "weather forecast"}); len(found.Tools) == 0 || found.Tools[0].Name != "dyn__forecast" {
		t.Errorf("after the server added forecast, find = %v", foundNames(found))
	}
	if got := toolNames(t, cs); slices.Contains(got, "dyn__forecast") {
		t.Errorf("a lazy list shows the new tool before it was exposed: %v", got)
	}
}

// Over Streamable HTTP, expose's tools/list_changed reaches the client on
// its GET stream, and its next tools/list has the tool.
func TestExposeNotifiesOverHTTP(t *testing.T) {
	tools := map[string]string{}
	for i := range 40 {
		tools[fmt.Sprintf("gadget_%02d", i)] = fmt.Sprintf("Gadget number %d.", i)
	}
	h := newHarness(t, map[string]*mcp.Server{"g": describedServer(tools)}, "catalog: lazy\n", nil)
	ts := httptest.NewServer(h.serveHTTP(nil))
	defer ts.Close()
	changed := make(chan struct{}, 64)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The client opens its GET stream on its own time: until it is up,
	// expose can only say that the list changed. Expose one tool after
	// another until one is announced.
	var told string
	for i := 0; i < 40 && told == ""; i++ {
		name := fmt.Sprintf("gadget_%02d", i)
		if res, _ := find(t, cs, map[string]any{"query": name, "limit": 1, "expose": true}); strings.Contains(text(res), "tools/list_changed sent") {
			told = "g__" + name
		} else if !strings.Contains(text(res), "which you get with tools/list") {
			t.Fatalf("expose = %q", text(res))
		}
	}
	if told == "" {
		t.Fatal("no expose reached the client's GET stream")
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("tools/list_changed announced but not received")
	}
	if got := toolNames(t, cs); !slices.Contains(got, told) {
		t.Errorf("tools/list after expose = %v, want %s", got, told)
	}
}

// Without sessions there is no list per client: expose says so.
func TestExposeWithoutSessions(t *testing.T) {
	h := metaHarness(t, lazySettings)
	h.agg.stateless, h.agg.meta.stateless = true, true
	res, found := find(t, h.client(DefaultProfile), map[string]any{"query": "read a file", "expose": true})
	if len(found.Tools) == 0 || !strings.Contains(text(res), "keeps no tool list per client") {
		t.Errorf("stateless expose = %q", text(res))
	}
}

// A 2026-07-28 request over HTTP is its own client: expose says that it
// keeps no list for it, as without sessions.
func TestExposeToSessionlessHTTPClient(t *testing.T) {
	h := metaHarness(t, lazySettings)
	ts := httptest.NewServer(h.serveHTTP(nil))
	defer ts.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q", v)
	}
	res, found := find(t, cs, map[string]any{"query": "read a file", "expose": true})
	if len(found.Tools) == 0 || !strings.Contains(text(res), "keeps no tool list per client") {
		t.Errorf("expose to a sessionless HTTP client = %q", text(res))
	}
}
