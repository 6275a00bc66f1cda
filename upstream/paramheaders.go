package upstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mcp-Param-* headers (MCP 2026-07-28, Streamable HTTP transport).
//
// A tool may mark parameters of its inputSchema with x-mcp-header: a
// client that calls it over Streamable HTTP mirrors each such argument
// into the header Mcp-Param-{name}, so that what sits between them (a
// load balancer, a gateway) can route on it without reading the body; the
// server refuses a call whose headers are missing or do not match (400,
// -32020). The go-sdk's client sends them only for the calls it makes
// itself, of tools it listed itself; mcpmux's raw requests (raw.go) get
// them here: the annotations are read when the server's tools are listed
// (a tool whose annotations break the spec's rules is left out, as the
// spec has a client do), and each tools/call carries the headers of its
// arguments on its POST (wireTransport sets them from the request's context).

// paramHeaderPrefix starts the name of a parameter's header.
const paramHeaderPrefix = "Mcp-Param-"

// paramBinding is one annotated parameter: the path of properties keys
// that leads to it from the schema's root, and its header's name.
type paramBinding struct {
	path   []string
	header string
}

// schemaProperty is what paramBindings reads of a schema.
type schemaProperty struct {
	Type       json.RawMessage           `json:"type"`
	XMCPHeader json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]schemaProperty `json:"properties"`
}

// maxParamHeaders bounds the annotated parameters of one tool.
const maxParamHeaders = 64

// paramBindings returns the annotated parameters of an inputSchema, or why
// the annotations break the spec's rules: a name that is not an HTTP
// token, two names alike but for case, a parameter that is not an
// integer, string or boolean. Only annotations reachable through
// properties keys are read: the spec allows no other.
func paramBindings(schema json.RawMessage) ([]paramBinding, error) {
	if !strings.Contains(string(schema), `"x-mcp-header"`) {
		return nil, nil // nothing to decode
	}
	var root schemaProperty
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("reading the input schema: %w", err)
	}
	var out []paramBinding
	seen := map[string]bool{}
	var walk func(props map[string]schemaProperty, prefix []string) error
	walk = func(props map[string]schemaProperty, prefix []string) error {
		for name, p := range props {
			path := append(append([]string(nil), prefix...), name)
			if p.XMCPHeader != nil {
				var header string
				if err := json.Unmarshal(p.XMCPHeader, &header); err != nil || !isToken(header) {
					return fmt.Errorf("property %q: x-mcp-header %s is not an HTTP header name", strings.Join(path, "."), p.XMCPHeader)
				}
				var typ string
				if err := json.Unmarshal(p.Type, &typ); err != nil || (typ != "string" && typ != "integer" && typ != "boolean") {
					return fmt.Errorf("property %q: x-mcp-header on a parameter of type %s (only integer, string and boolean may have one)", strings.Join(path, "."), p.Type)
				}
				key := strings.ToLower(header)
				if seen[key] {
					return fmt.Errorf("property %q: x-mcp-header %q is used twice", strings.Join(path, "."), header)
				}
				seen[key] = true
				if len(out) == maxParamHeaders {
					return fmt.Errorf("more than %d x-mcp-header parameters", maxParamHeaders)
				}
				out = append(out, paramBinding{path: path, header: header})
			}
			if len(p.Properties) > 0 {
				if err := walk(p.Properties, path); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root.Properties, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// isToken reports whether s is an HTTP field name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// paramHeaders returns the Mcp-Param-* headers of a call's arguments: one
// for each annotated parameter that has a value other than null.
func paramHeaders(bindings []paramBinding, args json.RawMessage) map[string]string {
	if len(bindings) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return nil
	}
	out := map[string]string{}
	for _, b := range bindings {
		v, ok := lookupPath(obj, b.path)
		if !ok {
			continue
		}
		if s, ok := headerValue(v); ok {
			out[paramHeaderPrefix+b.header] = s
		}
	}
	return out
}

func lookupPath(obj map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	for i, key := range path {
		v, ok := obj[key]
		if !ok || string(v) == "null" {
			return nil, false
		}
		if i == len(path)-1 {
			return v, true
		}
		obj = nil
		if json.Unmarshal(v, &obj) != nil {
			return nil, false
		}
	}
	return nil, false
}

// maxSafeInteger is 2^53-1, the largest integer an annotated parameter
// may have (JavaScript's safe range).
const maxSafeInteger = 1<<53 - 1

// headerValue encodes a parameter's JSON value as its header says it: a
// string as it is, unless it is not plain printable ASCII, has spaces at
// either end or looks encoded already (then =?base64?…?=); an integer in
// decimal; a boolean as true or false. Any other value has no header.
func headerValue(v json.RawMessage) (string, bool) {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return "", false
	}
	switch x := x.(type) {
	case string:
		if needsBase64(x) {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(x)) + "?=", true
		}
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > maxSafeInteger {
			return "", false
		}
		return strconv.FormatInt(int64(x), 10), true
	}
	return "", false
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")
}

// withParamHeaders2026 reads the x-mcp-header annotations of f's tools
// into f.params, and returns f's tools without those whose annotations
// break the rules: the spec has a client leave them out, and a call of
// one could not carry its headers.
func withParamHeaders2026(c *conn, f *Features) []*mcp.Tool {
	kept := f.Tools[:0:0]
	for _, t := range f.Tools {
		schema, _ := t.InputSchema.(json.RawMessage)
		bindings, err := paramBindings(schema)
		if err != nil {
			c.srv.log.Warn("tool left out: its x-mcp-header annotations break MCP 2026-07-28's rules", "tool", t.Name, "error", err)
			delete(f.ToolJSON, t.Name)
			continue
		}
		if len(bindings) > 0 {
			if f.params == nil {
				f.params = map[string][]paramBinding{}
			}
			f.params[t.Name] = bindings
		}
		kept = append(kept, t)
	}
	return kept
}

type paramHeadersKey struct{}

// withParamHeaders marks ctx as a request's whose POST carries h.
func withParamHeaders(ctx context.Context, h map[string]string) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return context.WithValue(ctx, paramHeadersKey{}, h)
}

// withHeadersOf returns req with the Mcp-Param-* headers its context
// carries (req itself if none).
func withHeadersOf(req *http.Request) *http.Request {
	h, _ := req.Context().Value(paramHeadersKey{}).(map[string]string)
	if len(h) == 0 || req.Method != http.MethodPost || req.Header.Get("Mcp-Method") != "tools/call" {
		return req
	}
	req = req.Clone(req.Context())
	for k, v := range h {
		req.Header.Set(k, v)
	}
	return req
}

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
