package aggregator

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCapResult(t *testing.T) {
	small := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, StructuredContent: map[string]any{"a": 1}}
	if out, cut := capResult(small, 1024); cut || out != small {
		t.Errorf("a small result was changed")
	}

	// "é" is two bytes: a cut after 1025 bytes of "a" + "é"... must not
	// split it.
	long := strings.Repeat("a", 1023) + strings.Repeat("é", 100)
	res := &mcp.CallToolResult{
		Content: []mcp.Content{
			&mcp.TextContent{Text: long},
			&mcp.ImageContent{Data: make([]byte, 10), MIMEType: "image/png"},
		},
		StructuredContent: map[string]any{"big": strings.Repeat("z", 100)},
		IsError:           true,
	}
	out, cut := capResult(res, 1024)
	if !cut || !out.IsError {
		t.Fatalf("cut=%v isError=%v", cut, out.IsError)
	}
	first := out.Content[0].(*mcp.TextContent).Text
	kept, note, _ := strings.Cut(first, "\n[mcpmux: result truncated")
	if !utf8.ValidString(kept) || len(kept) != 1023 || note == "" || !strings.Contains(first, "max_result_bytes = 1KiB") {
		t.Errorf("cut text: %d bytes, valid %v, text tail %q", len(kept), utf8.ValidString(kept), first[len(first)-120:])
	}
	if img, ok := out.Content[1].(*mcp.TextContent); !ok || !strings.Contains(img.Text, "image (image/png) of 10 bytes removed") {
		t.Errorf("image not replaced by a note: %#v", out.Content[1])
	}
	if out.StructuredContent != nil || !strings.Contains(out.Content[2].(*mcp.TextContent).Text, "structuredContent") {
		t.Errorf("structured content over the limit kept")
	}
	if len(res.Content[0].(*mcp.TextContent).Text) != len(long) {
		t.Error("the original result was modified")
	}
}

// A server answering with a result over max_result_bytes: the client gets
// it truncated with a note, through a real session.
func TestHugeResultIsTruncated(t *testing.T) {
	huge := strings.Repeat("0123456789", 100_000) // 1 MB
	h := newHarness(t, map[string]*mcp.Server{
		"big": fixtureServer("big", map[string]mcp.ToolHandler{"dump": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: huge}}}, nil
		}}),
	}, "max_result_bytes: 64KiB\n", nil)
	res := call(t, h.client(DefaultProfile), "big__dump", nil)
	got := text(res)
	if len(got) > 65*1024 || !strings.HasPrefix(got, "0123456789") || !strings.Contains(got, "result truncated: this text had 1000000 bytes, 65536 are shown") {
		t.Errorf("result of %d bytes, ends %q", len(got), got[max(0, len(got)-150):])
	}
}
