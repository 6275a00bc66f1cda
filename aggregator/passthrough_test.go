package aggregator

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resourceServer serves one static resource at uri whose text names the
// server, and one prompt "greet".
func resourceServer(name, uri string) *mcp.Server {
	s := fixtureServer(name, nil)
	s.AddResource(&mcp.Resource{URI: uri, Name: "doc", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "from " + name}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello from " + name}}}}, nil
	})
	return s
}

// A URI one server uses is exposed as is; a URI two servers use is
// prefixed mcpmux://<server>/ for each, and every exposed URI reads back
// from the server it belongs to, with the client's URI in the answer.
func TestResourceURIsStayReversible(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"a": resourceServer("a", "file:///shared.txt"),
		"b": resourceServer("b", "file:///shared.txt"),
		"c": resourceServer("c", "file:///own.txt"),
	}, "", nil)
	cs := h.client("")
	ctx := context.Background()

	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	want := []string{"file:///own.txt", "mcpmux://a/file:///shared.txt", "mcpmux://b/file:///shared.txt"}
	if !slices.Equal(uris, want) {
		t.Fatalf("resources = %v, want %v", uris, want)
	}
	for uri, owner := range map[string]string{want[0]: "c", want[1]: "a", want[2]: "b"} {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].Text != "from "+owner || res.Contents[0].URI != uri {
			t.Errorf("read %s = %+v, want the text of %s under the URI asked for", uri, res.Contents, owner)
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mcpmux://nope/file:///shared.txt"}); err == nil {
		t.Error("a URI of no server was read")
	}

	// Prompts are namespaced like tools and routed to their server.
	for _, name := range []string{"a__greet", "c__greet"} {
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
		if err != nil {
			t.Fatalf("prompt %s: %v", name, err)
		}
		if got := res.Messages[0].Content.(*mcp.TextContent).Text; got != "hello from "+name[:1] {
			t.Errorf("prompt %s = %q", name, got)
		}
	}
}
