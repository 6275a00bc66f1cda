package e2e

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/tasktest"
)

// Servers of MCP 2026-07-28 only, as people write them now (go-sdk
// v1.8.0): no initialize, input asked with multi round-trip requests, list
// changes through subscriptions/listen. The same tools over stdio (the
// fixture mode "only2026", which refuses initialize) and over stateless
// Streamable HTTP (only2026HTTP, in the test process):
//
//   - greet: answers at once;
//   - ask: asks the user's favourite colour (an elicitation as an input
//     request) and answers with it and the request state it got back;
//   - grow: adds the tool named by its argument "name" ("grown" without
//     one), which the server announces.

// only2026Server is the server; name tells the two apart in answers.
func only2026Server(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2026-07-28"}})
	s.AddTool(&mcp.Tool{Name: "greet", InputSchema: textSchema("name")}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("%s greets %s", name, stringArg(req, "name")), nil
	})
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["color"].(*mcp.ElicitResult); ok {
			return textResult("%s: %s, color %v, state %q", name, r.Action, r.Content["color"], req.Params.RequestState), nil
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"color": &mcp.ElicitParams{
				Message:         "Your favourite colour?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"color": map[string]any{"type": "string"}}, "required": []any{"color"}},
			}},
			RequestState: "asked-once",
		}, nil
	})
	s.AddTool(&mcp.Tool{Name: "grow", InputSchema: textSchema("name")}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		grown := cmp.Or(stringArg(req, "name"), "grown")
		s.AddTool(&mcp.Tool{Name: grown, InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("%s: %s", name, grown), nil
		})
		return textResult("%s grew a tool", name), nil
	})
	// "job" returns a task of the tasks extension, which the go-sdk does
	// not implement (tasktest does): it asks "Your name?" and greets.
	tasktest.InstallExtension(s)
	return s
}

// only2026Stdio is the stdio server: it refuses initialize, as a server
// of the new era only may.
func only2026Stdio() *mcp.Server {
	s := only2026Server("only2026")
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %s (this server speaks MCP 2026-07-28 only)", method)}
			}
			return next(ctx, method, req)
		}
	})
	return s
}

// protocols2025 are the versions a server of MCP 2025-11-25 and before
// speaks: the fixtures that ask their client with requests of their own
// (ServerSession.Elicit and the like), which MCP 2026-07-28 has not.
func protocols2025() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })
}
