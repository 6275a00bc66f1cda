package aggregator

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestInitializeMergesServerInstructions(t *testing.T) {
	withInstructions := func(name, text string) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{Instructions: text})
	}
	h := newHarness(t, map[string]*mcp.Server{
		"docs":  withInstructions("docs", "Search before you read.\n"),
		"bare":  withInstructions("bare", "Bare names here."),
		"quiet": withInstructions("quiet", ""),
		"web":   withInstructions("web", "Fetch one page at a time."),
	}, `profiles: {reader: {tool_config: [docs, quiet]}}`, map[string]string{"bare": `prefix: ""`, "web": "prefix: www"})

	want := "mcpmux serves the tools and prompts of several servers, each named <server>__<name> unless said otherwise below. The instructions of those servers follow, one section per server.\n" +
		"\n## bare (its tools and prompts keep their own names)\n\nBare names here.\n" +
		"\n## docs\n\nSearch before you read.\n" +
		"\n## web (its tools and prompts are named www__<name>)\n\nFetch one page at a time.\n"
	// A profile gets the instructions of its own servers only.
	wantReader := "mcpmux serves the tools and prompts of several servers, each named <server>__<name> unless said otherwise below. The instructions of those servers follow, one section per server.\n" +
		"\n## docs\n\nSearch before you read.\n"
	// From initialize (2025-11-25) as from server/discover (2026-07-28).
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		if got := h.clientVersion(DefaultProfile, version).InitializeResult().Instructions; got != want {
			t.Errorf("%s: instructions:\n%s\nwant:\n%s", version, got, want)
		}
		if got := h.clientVersion("reader", version).InitializeResult().Instructions; got != wantReader {
			t.Errorf("%s: profile reader: instructions:\n%s\nwant:\n%s", version, got, wantReader)
		}
	}
}
