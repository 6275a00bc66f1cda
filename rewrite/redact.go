package rewrite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// redactedURL replaces a removed URL in a result's text.
const redactedURL = "[link removed]"

// redact removes blocked URLs from the results of matching tools: search
// results must not link an agent to the answers it is refused.
type redact struct {
	name  string
	tools toolSet
	urls  urlSet
}

func (r *redact) inspects(c *Call, _ bool) bool { return r.tools.match(c) }

func (r *redact) after(_ context.Context, c *Call, res *mcp.CallToolResult, env *Env) *mcp.CallToolResult {
	if !r.tools.match(c) {
		return res
	}
	n := 0
	for _, item := range res.Content {
		if t, ok := item.(*mcp.TextContent); ok {
			var k int
			t.Text, k = r.strip(t.Text)
			n += k
		}
	}
	if res.StructuredContent != nil {
		var k int
		res.StructuredContent, k = r.stripValue(res.StructuredContent)
		n += k
	}
	if n == 0 {
		return res
	}
	record(env, r.name, ActionRedacted, c, "removed", n)
	PrependNote(res, fmt.Sprintf("[Rewrite rule '%s' removed %d link(s) to blocked pages from this result] ", r.name, n))
	return res
}

// strip replaces every blocked URL in text.
func (r *redact) strip(text string) (string, int) {
	spans, _ := r.urls.findURLs(text, false)
	if len(spans) == 0 {
		return text, 0
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(text[last:sp.start])
		b.WriteString(redactedURL)
		last = sp.end
	}
	b.WriteString(text[last:])
	return b.String(), len(spans)
}

// stripValue strips blocked URLs from every string of structured
// content, keeping its shape.
func (r *redact) stripValue(v any) (any, int) {
	switch v := v.(type) {
	case string:
		return r.strip(v)
	case []any:
		n := 0
		for i, e := range v {
			var k int
			v[i], k = r.stripValue(e)
			n += k
		}
		return v, n
	case map[string]any:
		n := 0
		for key, e := range v {
			var k int
			v[key], k = r.stripValue(e)
			n += k
		}
		return v, n
	case json.RawMessage:
		var x any
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber() // numbers come back as they were
		if d.Decode(&x) != nil {
			return v, 0
		}
		x, n := r.stripValue(x)
		if n == 0 {
			return v, 0
		}
		b, err := json.Marshal(x)
		if err != nil {
			return v, 0
		}
		return json.RawMessage(b), n
	}
	return v, 0
}
