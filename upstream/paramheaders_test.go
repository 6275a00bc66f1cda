package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// A 2026 server over Streamable HTTP whose tool marks parameters with
// x-mcp-header gets mcpmux's calls of it with the Mcp-Param-* headers
// the spec has a client send (the go-sdk server refuses a call without
// them with -32020): a string as it is or base64-encoded, an integer, a
// nested boolean; none for an absent or null argument. A tool whose
// annotations break the rules is left out of the list.
func TestParamHeadersSentToA2026Server(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hdr", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{config.Protocol2026}})
	srv.AddTool(&mcp.Tool{Name: "route", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"n":{"type":"integer","x-mcp-header":"N"},
		"opts":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}},
		"other":{"type":"string"}}}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "routed"}}}, nil
	})
	var (
		mu   sync.Mutex
		seen []http.Header
	)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			mu.Lock()
			seen = append(seen, r.Header.Clone())
			mu.Unlock()
		}
		if r.Header.Get("Mcp-Method") == "tools/list" {
			// A tool the go-sdk would not register: its annotation is
			// on a number.
			w.Header().Set("Content-Type", "application/json")
			var req struct{ ID json.RawMessage }
			_ = json.NewDecoder(r.Body).Decode(&req)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","tools":[
				{"name":"route","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"opts":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}},"other":{"type":"string"}}}},
				{"name":"bad","inputSchema":{"type":"object","properties":{"x":{"type":"number","x-mcp-header":"X"}}}}]}}`, req.ID)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	s := startRemote(t, fmt.Sprintf("name: hdr\nurl: %s\n", ts.URL))
	waitState(t, s, "up", func(st Status) bool { return st.State == StateUp })
	var names []string
	for _, tl := range s.Features().Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"route"}) {
		t.Errorf("tools %v, want [route]: bad's annotation is on a number", names)
	}

	for _, c := range []struct {
		args string
		want map[string]string
	}{
		{`{"region":"us-west1","n":42,"opts":{"flag":true},"other":"x"}`, map[string]string{"Mcp-Param-Region": "us-west1", "Mcp-Param-N": "42", "Mcp-Param-Flag": "true"}},
		{`{"region":"Hello, 世界"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?="}},
		{`{"region":null,"opts":{}}`, map[string]string{}},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		res, err := s.CallTool(context.Background(), CallParams{Params: &mcp.CallToolParams{Name: "route", Arguments: json.RawMessage(c.args)}})
		if err != nil || !strings.Contains(string(res), "routed") {
			t.Fatalf("route %s: %s, %v", c.args, res, err)
		}
		mu.Lock()
		got := map[string]string{}
		for k, v := range seen[len(seen)-1] {
			if strings.HasPrefix(k, "Mcp-Param-") {
				got[k] = v[0]
			}
		}
		mu.Unlock()
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("route %s: headers %v, want %v", c.args, got, c.want)
		}
	}
}

func TestParamBindingsRules(t *testing.T) {
	for _, c := range []struct {
		schema string
		err    string
	}{
		{`{"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}`, "used twice"},
		{`{"properties":{"a":{"type":"string","x-mcp-header":"A B"}}}`, "not an HTTP header name"},
		{`{"properties":{"a":{"type":"string","x-mcp-header":""}}}`, "not an HTTP header name"},
		{`{"properties":{"a":{"type":"array","x-mcp-header":"A"}}}`, "only integer, string and boolean"},
		{`{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}`, ""},
	} {
		_, err := paramBindings(json.RawMessage(c.schema))
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v, want %q", c.schema, err, c.err)
		}
	}
}

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
