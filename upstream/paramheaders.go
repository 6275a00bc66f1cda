package upstream

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A tool's input schema may mark parameters with x-mcp-header (MCP
// 2026-07-28, SEP-2243): a client mirrors their values into Mcp-Param-*
// HTTP headers, so that gateways can route on them. A tool whose
// annotations are invalid MUST be left out by clients; the go-sdk's
// ClientSession.ListTools does that, but mcpmux lists tools with raw
// requests (see raw.go), so it applies the same rules itself.

// headerProperty is what x-mcp-header validation reads of a schema
// property.
type headerProperty struct {
	Type       json.RawMessage           `json:"type"`
	XMCPHeader json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]headerProperty `json:"properties"`
}

// paramHeaderError says why the x-mcp-header annotations of a tool's
// input schema are invalid, or nil: each must be a non-empty HTTP token,
// on a string, integer or boolean property, and unique (case-insensitive)
// across the schema's properties at every depth.
func paramHeaderError(inputSchema any) error {
	b, ok := inputSchema.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(inputSchema); err != nil {
			return nil
		}
	}
	if !strings.Contains(string(b), "x-mcp-header") {
		return nil // the common case, without decoding the schema
	}
	var root headerProperty
	if json.Unmarshal(b, &root) != nil {
		return nil
	}
	return paramHeadersIn(root.Properties, "", map[string]bool{})
}

func paramHeadersIn(props map[string]headerProperty, prefix string, seen map[string]bool) error {
	for name, p := range props {
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if p.XMCPHeader != nil {
			var typ string
			_ = json.Unmarshal(p.Type, &typ)
			if typ != "string" && typ != "integer" && typ != "boolean" {
				return fmt.Errorf("property %q: x-mcp-header is only allowed on string, integer and boolean properties, not %s", path, strings.TrimSpace(string(p.Type)))
			}
			var header string
			if json.Unmarshal(p.XMCPHeader, &header) != nil || header == "" {
				return fmt.Errorf("property %q: x-mcp-header must be a non-empty string", path)
			}
			for _, c := range header {
				if !isTokenChar(c) {
					return fmt.Errorf("property %q: x-mcp-header %q has the character %q, which an HTTP header name cannot", path, header, c)
				}
			}
			lower := strings.ToLower(header)
			if seen[lower] {
				return fmt.Errorf("property %q: x-mcp-header %q is used twice (case-insensitive)", path, header)
			}
			seen[lower] = true
		}
		if err := paramHeadersIn(p.Properties, path, seen); err != nil {
			return err
		}
	}
	return nil
}

// isTokenChar reports whether c may be in an HTTP field name (tchar, RFC
// 9110 §5.6.2).
func isTokenChar(c rune) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}
