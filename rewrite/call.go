package rewrite

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/logs"
)

// Call is one tool call as the rules see it.
type Call struct {
	Name   string          // exposed name
	Server string          // the server it is routed to
	Tool   string          // the server's own name of the tool
	Args   json.RawMessage // the client's arguments
	// For logs.
	Session string
	RunID   string

	decoded    any
	decodeOK   bool
	decodeDone bool
}

// args returns the arguments decoded (numbers as json.Number), or false
// if they are not JSON.
func (c *Call) args() (any, bool) {
	if !c.decodeDone {
		c.decodeDone = true
		raw := bytes.TrimSpace(c.Args)
		if len(raw) == 0 {
			c.decoded, c.decodeOK = map[string]any{}, true
		} else {
			d := json.NewDecoder(bytes.NewReader(raw))
			d.UseNumber()
			c.decodeOK = d.Decode(&c.decoded) == nil
		}
	}
	return c.decoded, c.decodeOK
}

// Env is what the rules need from the pipeline while a call runs.
type Env struct {
	// Log receives every action of a rule; nil discards.
	Log *slog.Logger
	// Mask is the masker of Log: it masks a failed fallback's text
	// before it is cut to be logged; nil masks nothing.
	Mask *logs.Masker
	// Call runs another tool, by exposed name, through the caller's
	// pipeline (resolution, blacklist, rules); nil disables fallbacks.
	Call func(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult
	// OnHit is told of every action of a rule (ActionRefused, ...) with
	// the rule's name, e.g. to count it; nil means nobody is.
	OnHit func(action, rule string)
}

// ResultText joins the text items of a result, one per line.
func ResultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// PrependNote puts note in front of the result's first text item, or adds
// a text item first.
func PrependNote(res *mcp.CallToolResult, note string) {
	if len(res.Content) > 0 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			t.Text = note + t.Text
			return
		}
	}
	res.Content = append([]mcp.Content{&mcp.TextContent{Text: strings.TrimSpace(note)}}, res.Content...)
}

// walkStrings calls f on every string (and object key) in v until f
// returns true, and reports whether it did.
func walkStrings(v any, f func(string) bool) bool {
	switch v := v.(type) {
	case string:
		return f(v)
	case []any:
		for _, e := range v {
			if walkStrings(e, f) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if f(k) || walkStrings(e, f) {
				return true
			}
		}
	}
	return false
}
