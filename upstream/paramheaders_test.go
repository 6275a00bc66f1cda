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
