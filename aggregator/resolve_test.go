package aggregator

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A name far longer than any tool's, full of separators, is unknown at
// once, directly and through mcpmux__call_tool, and is not echoed back
// whole; a long name auto-correction can resolve still resolves.
func TestOverlongNamesAreUnknownAtOnce(t *testing.T) {
	servers := map[string]*mcp.Server{}
	// More than 8 prefixes and tool names: Go maps that small compare
	// keys without hashing them, and hashing is what made this quadratic.
	for _, s := range []string{"fetch", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"} {
		servers[s] = fixtureServer(s, map[string]mcp.ToolHandler{s + "_tool": echo(s + ":"), "fetch": echo(s + " fetch:")})
	}
	h := newHarness(t, servers, "meta_tools: [call_tool]\n", nil)
	cs := h.client(DefaultProfile)

	if got := text(call(t, cs, "mcp__mcpmux__s1__s1_tool", map[string]any{"text": "q"})); !strings.HasSuffix(got, "s1:q") || !strings.Contains(got, "Auto-corrected") {
		t.Errorf("a mistaken server part that auto-correction resolves: %q", got)
	}
	long := "a" + strings.Repeat("__", 1<<19) // 1 MiB
	for _, c := range []struct {
		name string
		args any
	}{
		{long, map[string]any{}},
		{"mcpmux__call_tool", map[string]any{"name": long}},
		{"x" + strings.Repeat("_", 300) + "__s1_tool", map[string]any{}},
	} {
		res := call(t, cs, c.name, c.args)
		got := text(res)
		if !res.IsError || !strings.HasPrefix(got, "Unknown tool 'a___") && !strings.HasPrefix(got, "Unknown tool 'x___") {
			t.Errorf("a %d-byte name: isError=%v %.200q", len(c.name), res.IsError, got)
		}
		if len(got) > 1024 {
			t.Errorf("the answer to a %d-byte name has %d bytes: the name must not be echoed whole", len(c.name), len(got))
		}
	}
}

// lookup compares only parts of a name that are as short as a prefix or
// tool name of the view; it resolves what it did before.
func TestLookupOfLongNames(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"srv": fixtureServer("srv", map[string]mcp.ToolHandler{"read": echo("")}),
	}, "", nil)
	v := h.agg.profile(DefaultProfile).view.Load()
	for _, c := range []struct {
		name, server, tool string
		known              bool
		found              int
	}{
		{"srv__nope", "srv", "nope", true, 0},
		{"other__read", "other", "read", false, 1},
		{"a__b__c__read", "a__b__c", "read", false, 1},
		{"read", "", "read", false, 1},
		{"a" + strings.Repeat("__", 100) + "read", "a" + strings.Repeat("__", 99), "read", false, 1},
	} {
		server, known, tool, found := lookup(v, c.name)
		if server != c.server || known != c.known || tool != c.tool || len(found) != c.found {
			t.Errorf("lookup(%.40q) = %q, %v, %q, %d; want %q, %v, %q, %d", c.name, server, known, tool, len(found), c.server, c.known, c.tool, c.found)
		}
	}
}
