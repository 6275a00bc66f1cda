package aggregator

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// capResult keeps a tool result within limit bytes of payload, so that one
// server answering with a huge result cannot exhaust the memory of mcpmux's
// client (or mcpmux re-encoding it). Items are kept in order while they
// fit; the text item that crosses the limit is cut at a UTF-8 boundary and
// any other item that does not fit (an image, audio, an embedded resource,
// structuredContent) is replaced by a text note saying what was removed.
// truncated reports whether anything was cut.
func capResult(res *mcp.CallToolResult, limit config.Size) (out *mcp.CallToolResult, truncated bool) {
	if limit <= 0 {
		limit = config.DefaultMaxResultBytes
	}
	if res.StructuredContent == nil && fits(res.Content, int64(limit)) {
		return res, false // the common case, without a copy
	}
	left := int64(limit)
	var content []mcp.Content
	for _, c := range res.Content {
		size := contentSize(c)
		if size <= left {
			content = append(content, c)
			left -= size
			continue
		}
		truncated = true
		if t, ok := c.(*mcp.TextContent); ok && left > 0 {
			cut := cutUTF8(t.Text, int(left))
			content = append(content, &mcp.TextContent{
				Text:        cut + fmt.Sprintf("\n[mcpmux: result truncated: this text had %d bytes, %d are shown; the limit is max_result_bytes = %v]", len(t.Text), len(cut), limit),
				Meta:        t.Meta,
				Annotations: t.Annotations,
			})
			left = 0
			continue
		}
		content = append(content, &mcp.TextContent{Text: fmt.Sprintf("[mcpmux: %s of %d bytes removed: the result exceeds max_result_bytes = %v]", describe(c), size, limit)})
	}
	if !truncated && res.StructuredContent == nil {
		return res, false
	}
	structured := res.StructuredContent
	if structured != nil {
		b, err := json.Marshal(structured)
		if err != nil || int64(len(b)) > left {
			structured = nil
			truncated = true
			content = append(content, &mcp.TextContent{Text: fmt.Sprintf("[mcpmux: structuredContent of %d bytes removed: the result exceeds max_result_bytes = %v]", len(b), limit)})
		}
	}
	if !truncated {
		return res, false
	}
	return &mcp.CallToolResult{Meta: res.Meta, Content: content, StructuredContent: structured, IsError: res.IsError}, true
}

// fits reports whether the items' payloads add up to at most limit.
func fits(content []mcp.Content, limit int64) bool {
	for _, c := range content {
		if limit -= contentSize(c); limit < 0 {
			return false
		}
	}
	return true
}

// contentSize is the payload of an item: its text or data.
func contentSize(c mcp.Content) int64 {
	switch c := c.(type) {
	case *mcp.TextContent:
		return int64(len(c.Text))
	case *mcp.ImageContent:
		return int64(len(c.Data))
	case *mcp.AudioContent:
		return int64(len(c.Data))
	case *mcp.EmbeddedResource:
		if c.Resource != nil {
			return int64(len(c.Resource.Text) + len(c.Resource.Blob))
		}
	case *mcp.ResourceLink:
		return int64(len(c.URI) + len(c.Name) + len(c.Description))
	}
	b, _ := json.Marshal(c)
	return int64(len(b))
}

func describe(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.ImageContent:
		return "an image (" + c.MIMEType + ")"
	case *mcp.AudioContent:
		return "audio (" + c.MIMEType + ")"
	case *mcp.EmbeddedResource:
		if c.Resource != nil {
			return "the embedded resource " + c.Resource.URI
		}
		return "an embedded resource"
	case *mcp.ResourceLink:
		return "the resource link " + c.URI
	case *mcp.TextContent:
		return "a text item"
	}
	return "an item"
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
