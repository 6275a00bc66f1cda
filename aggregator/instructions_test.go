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
	if got := h.client(DefaultProfile).InitializeResult().Instructions; got != want {
		t.Errorf("instructions:\n%s\nwant:\n%s", got, want)
	}
	// A profile gets the instructions of its own servers only.
	wantReader := "mcpmux serves the tools and prompts of several servers, each named <server>__<name> unless said otherwise below. The instructions of those servers follow, one section per server.\n" +
		"\n## docs\n\nSearch before you read.\n"
	if got := h.client("reader").InitializeResult().Instructions; got != wantReader {
		t.Errorf("profile reader: instructions:\n%s\nwant:\n%s", got, wantReader)
	}
}
