package e2e

//lint:file-ignore SA1019 the fixture serves sampling, roots and logging of MCP 2025-11-25, which mcpmux forwards.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// allFixture exercises every feature mcpmux passes through: progress,
// logging, sampling, elicitation and roots during a call, structured
// output, resources (static, blob, template, subscriptions), prompts with
// completions, and cancellation.
func allFixture() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "all-fixture", Version: "1"}, &mcp.ServerOptions{
		// It asks its client with requests of its own during a call.
		SupportedProtocolVersions: protocols2025(),
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var values []string
			for _, v := range []string{"red", "green", "blue", "grey"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					values = append(values, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	tool := func(name, desc string, schema any, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}
	tool("progress", "Reports progress three times.", objectSchema, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for i := 1; i <= 3; i++ {
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)})
			}
		}
		return textResult("done"), nil
	})
	tool("log", "Logs at each level.", objectSchema, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, l := range []mcp.LoggingLevel{"debug", "info", "warning", "error"} {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Logger: "all-fixture", Data: map[string]any{"level": string(l)}})
		}
		return textResult("logged"), nil
	})
	tool("sample", "Asks the client's model.", textSchema("prompt"), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			MaxTokens: 50,
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: stringArg(req, "prompt")}}},
		})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "sampling failed: " + err.Error()}}}, nil
		}
		b, _ := json.Marshal(res)
		return textResult("%s", b), nil
	})
	tool("elicit", "Asks the user.", objectSchema, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message:         "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: " + err.Error()}}}, nil
		}
		b, _ := json.Marshal(res)
		return textResult("%s", b), nil
	})
	tool("roots", "Lists the client's roots.", objectSchema, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "roots failed: " + err.Error()}}}, nil
		}
		b, _ := json.Marshal(res)
		return textResult("%s", b), nil
	})
	s.AddTool(&mcp.Tool{
		Name:         "weather",
		Description:  "Structured output.",
		InputSchema:  textSchema("city"),
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "celsius": map[string]any{"type": "number"}}},
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Weather"},
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		out := map[string]any{"city": stringArg(req, "city"), "celsius": 21.5}
		b, _ := json.Marshal(out)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: out, Meta: mcp.Meta{"fixture/unit": "C"}}, nil
	})
	tool("rich", "Every content type, isError.", objectSchema, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return richResult(), nil
	})
	tool("bump", "Updates fixture://counter.", objectSchema, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "fixture://counter"})
		return textResult("bumped"), nil
	})
	// wait blocks until cancelled, recording both ends in files so that a
	// test can see the cancellation reach the server.
	tool("wait", "Blocks until cancelled.", textSchema("marker"), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		marker := stringArg(req, "marker")
		_ = os.WriteFile(marker+".started", nil, 0o644)
		<-ctx.Done()
		_ = os.WriteFile(marker+".cancelled", nil, 0o644)
		return textResult("cancelled"), nil
	})

	text := func(uri, body string) mcp.ResourceHandler {
		return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: body}}}, nil
		}
	}
	s.AddResource(&mcp.Resource{URI: "fixture://readme", Name: "readme", Title: "Read me", MIMEType: "text/plain", Annotations: &mcp.Annotations{Priority: 1}}, text("fixture://readme", "hello from the fixture"))
	s.AddResource(&mcp.Resource{URI: "fixture://counter", Name: "counter", MIMEType: "text/plain"}, text("fixture://counter", "1"))
	s.AddResource(&mcp.Resource{URI: "fixture://logo.png", Name: "logo", MIMEType: "image/png"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "fixture://logo.png", MIMEType: "image/png", Blob: []byte{0x89, 'P', 'N', 'G'}}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "fixture://items/{id}", Name: "item", MIMEType: "application/json"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		id := strings.TrimPrefix(req.Params.URI, "fixture://items/")
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: fmt.Sprintf(`{"id":%q}`, id)}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Title: "Greeting", Description: "Greets someone in a colour.", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}, {Name: "colour"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "a greeting", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Greet %s in %s.", req.Params.Arguments["who"], req.Params.Arguments["colour"])}},
				{Role: "assistant", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "fixture://readme", Text: "hello from the fixture"}}},
			}}, nil
		})
	return s
}
