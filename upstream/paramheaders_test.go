package upstream

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestInvalidParamHeaderToolsLeftOut: a tool whose x-mcp-header
// annotations are invalid is not in the server's catalog (MCP 2026-07-28
// says a client must leave it out); the valid ones, annotated or not, are.
func TestInvalidParamHeaderToolsLeftOut(t *testing.T) {
	prop := func(typ, header any) map[string]any {
		p := map[string]any{"type": typ}
		if header != nil {
			p["x-mcp-header"] = header
		}
		return p
	}
	schema := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	tools := map[string]map[string]any{ // name → input schema
		"plain":           schema(map[string]any{"q": prop("string", nil)}),
		"valid":           schema(map[string]any{"region": prop("string", "Region"), "n": prop("integer", "N"), "b": prop("boolean", "Flag_1.x")}),
		"valid_nested":    schema(map[string]any{"outer": map[string]any{"type": "object", "properties": map[string]any{"region": prop("string", "Region")}}}),
		"bad_empty":       schema(map[string]any{"v": prop("string", "")}),
		"bad_not_string":  schema(map[string]any{"v": prop("string", 7)}),
		"bad_object":      schema(map[string]any{"v": prop("object", "Data")}),
		"bad_array":       schema(map[string]any{"v": prop("array", "Items")}),
		"bad_null":        schema(map[string]any{"v": prop("null", "Nil")}),
		"bad_number":      schema(map[string]any{"v": prop("number", "Score")}),
		"bad_no_type":     schema(map[string]any{"v": map[string]any{"x-mcp-header": "V"}}),
		"bad_duplicate":   schema(map[string]any{"a": prop("string", "MyField"), "b": prop("string", "myfield")}),
		"bad_dup_nested":  schema(map[string]any{"a": prop("string", "Region"), "o": map[string]any{"type": "object", "properties": map[string]any{"b": prop("string", "REGION")}}}),
		"bad_space":       schema(map[string]any{"v": prop("string", "My Region")}),
		"bad_colon":       schema(map[string]any{"v": prop("string", "Region:Primary")}),
		"bad_non_ascii":   schema(map[string]any{"v": prop("string", "Région")}),
		"bad_control":     schema(map[string]any{"v": prop("string", "Region\t1")}),
		"bad_nested_type": schema(map[string]any{"o": map[string]any{"type": "object", "properties": map[string]any{"v": prop("array", "V")}}}),
	}
	// The go-sdk refuses to serve the invalid ones (AddTool panics), so
	// they are added to its tools/list answer.
	srv := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1"}, nil)
	var invalid []*mcp.Tool
	for name, s := range tools {
		if strings.HasPrefix(name, "bad_") {
			invalid = append(invalid, &mcp.Tool{Name: name, InputSchema: s})
			continue
		}
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: s}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				r.Tools = append(r.Tools, invalid...)
			}
			return res, err
		}
	})
	s, _ := startEra(t, srv, "")
	if st := s.Status(); st.State != StateUp {
		t.Fatalf("server: %+v", st)
	}
	var got []string
	for _, tool := range s.Tools() {
		got = append(got, tool.Name)
	}
	slices.Sort(got)
	if want := []string{"plain", "valid", "valid_nested"}; !slices.Equal(got, want) {
		t.Fatalf("catalog %v, want %v", got, want)
	}
	if _, ok := s.Features().ToolJSON["bad_space"]; ok {
		t.Fatal("a left-out tool is still in the catalog's definitions")
	}
}
