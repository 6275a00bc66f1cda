package e2e

//lint:file-ignore SA1019 the fixture serves sampling, roots and logging of MCP 2025-11-25, which mcpmux forwards.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/tasktest"
)

// conformanceFixture is a server in the style of the conformance suite's
// reference server (examples/servers/typescript/everything-server.ts of
// modelcontextprotocol/conformance v0.1.16), written with the go-sdk: it
// has every tool, resource and prompt the suite's server scenarios call,
// and behaves as the reference does where mcpmux must cope with it:
//
//   - test_reconnection closes the call's event stream mid-call, and its
//     answer is lost (the reference's SDK stores an event only while its
//     stream is connected; here lossyEvents drops it): nothing to replay;
//   - test_reconnection_replayed closes the stream too, but its answer is
//     kept and replayed when the client resumes;
//   - test_long_operation runs for `seconds`, or until the file `until`
//     exists, without sending anything meanwhile;
//   - test_elicitation_sep1034_defaults asks with defaults in its schema
//     and reports exactly the content it got back.
//
// Over HTTP (conformanceHTTP) it serves Streamable HTTP with an event
// store, so a call's stream starts with a priming event; as the stdio
// fixture mode "conformance" it is a child of mcpmux.
func conformanceFixture() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcp-conformance-test-server", Version: "1.0.0"}, &mcp.ServerOptions{
		// The reference server of the 2025-11-25 suite: it asks its client
		// with requests of its own, and runs tasks of that era.
		SupportedProtocolVersions: protocols2025(),
		Instructions:              "A fixture in the style of the conformance suite's reference server.",
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}, Total: 0}}, nil
		},
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformance-test-server", Data: "Subscribed to resource: " + req.Params.URI})
			return nil
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformance-test-server", Data: "Unsubscribed from resource: " + req.Params.URI})
			return nil
		},
	})
	tool := func(name, desc string, schema any, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}
	content := func(c ...mcp.Content) *mcp.CallToolResult { return &mcp.CallToolResult{Content: c} }
	noArgs := map[string]any{"type": "object", "properties": map[string]any{}}

	tool("test_simple_text", "Tests simple text content response", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return content(&mcp.TextContent{Text: "This is a simple text response for testing."}), nil
	})
	tool("test_image_content", "Tests image content response", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return content(&mcp.ImageContent{Data: testPNG, MIMEType: "image/png"}), nil
	})
	tool("test_audio_content", "Tests audio content response", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return content(&mcp.AudioContent{Data: testWAV, MIMEType: "audio/wav"}), nil
	})
	tool("test_embedded_resource", "Tests embedded resource content response", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return content(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}}), nil
	})
	tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return content(
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: testPNG, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}},
		), nil
	})
	tool("test_tool_with_logging", "Tests tool that emits log messages during execution", noArgs, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg})
		}
		return content(&mcp.TextContent{Text: "Tool with logging executed successfully"}), nil
	})
	tool("test_tool_with_progress", "Tests tool that reports progress notifications", noArgs, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for _, p := range []float64{0, 50, 100} {
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 100, Message: fmt.Sprintf("Completed step %v of 100", p)})
			}
		}
		return content(&mcp.TextContent{Text: fmt.Sprint(token)}), nil
	})
	tool("test_error_handling", "Tests error response handling", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := content(&mcp.TextContent{Text: "This tool intentionally returns an error for testing"})
		res.IsError = true
		return res, nil
	})
	tool("test_reconnection", "Tests SSE stream disconnection and client reconnection (SEP-1699). Closes the stream mid-call; its answer is lost, as the reference server's is.", noArgs, reconnection(lostAnswer))
	tool("test_reconnection_replayed", "Closes the SSE stream mid-call (SEP-1699); the answer is replayed when the client resumes the stream.", noArgs, reconnection(replayedAnswer))
	tool("test_long_operation", "Runs for `seconds`, or until the file `until` exists, sending nothing meanwhile.", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"seconds": map[string]any{"type": "number"},
			"until":   map[string]any{"type": "string"},
		},
	}, longOperation)
	tool("test_sampling", "Tests server-initiated sampling (LLM completion request)", textSchema("prompt"), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			MaxTokens: 100,
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: stringArg(req, "prompt")}}},
		})
		if err != nil {
			return content(&mcp.TextContent{Text: "Sampling not supported or error: " + err.Error()}), nil
		}
		text := "No response"
		if tc, ok := res.Content.(*mcp.TextContent); ok {
			text = tc.Text
		}
		return content(&mcp.TextContent{Text: "LLM response: " + text}), nil
	})
	tool("test_elicitation", "Tests server-initiated elicitation (user input request)", textSchema("message"), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return elicit(ctx, req, "User response", &mcp.ElicitParams{
			Message: stringArg(req, "message"),
			RequestedSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"response": map[string]any{"type": "string", "description": "User's response"}},
				"required":   []any{"response"},
			},
		}), nil
	})
	tool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", noArgs, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return elicit(ctx, req, "Elicitation completed", &mcp.ElicitParams{
			Message: "Please review and update the form fields with defaults",
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
					"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
					"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
					"status":   map[string]any{"type": "string", "description": "User status", "enum": []any{"active", "inactive", "pending"}, "default": "active"},
					"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
				},
				"required": []any{},
			},
		}), nil
	})
	tool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", noArgs, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		titled := func(items ...string) []any {
			var out []any
			for i := 0; i < len(items); i += 2 {
				out = append(out, map[string]any{"const": items[i], "title": items[i+1]})
			}
			return out
		}
		return elicit(ctx, req, "Elicitation completed", &mcp.ElicitParams{
			Message: "Please select options from the enum fields",
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"untitledSingle": map[string]any{"type": "string", "description": "Select one option", "enum": []any{"option1", "option2", "option3"}},
					"titledSingle":   map[string]any{"type": "string", "description": "Select one option with titles", "oneOf": titled("value1", "First Option", "value2", "Second Option", "value3", "Third Option")},
					"legacyEnum":     map[string]any{"type": "string", "description": "Select one option (legacy)", "enum": []any{"opt1", "opt2", "opt3"}, "enumNames": []any{"Option One", "Option Two", "Option Three"}},
					"untitledMulti":  map[string]any{"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": map[string]any{"type": "string", "enum": []any{"option1", "option2", "option3"}}},
					"titledMulti":    map[string]any{"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": map[string]any{"anyOf": titled("value1", "First Choice", "value2", "Second Choice", "value3", "Third Choice")}},
				},
				"required": []any{},
			},
		}), nil
	})
	// SEP-1613: a raw JSON Schema 2020-12 input schema, listed as it is.
	tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)", map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object",
		"$defs": map[string]any{
			"address": map[string]any{"type": "object", "properties": map[string]any{"street": map[string]any{"type": "string"}, "city": map[string]any{"type": "string"}}},
		},
		"properties":           map[string]any{"name": map[string]any{"type": "string"}, "address": map[string]any{"$ref": "#/$defs/address"}},
		"additionalProperties": false,
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return content(&mcp.TextContent{Text: "JSON Schema 2020-12 tool called with: " + string(req.Params.Arguments)}), nil
	})
	// A tool that must be called as a task (MCP 2025-11-25), which the
	// go-sdk cannot serve by itself: internal/tasktest runs it. The task
	// asks the client to confirm, through tasks/result (the task is
	// input_required meanwhile), and answers with what it got.
	tasktest.Install(s).AddTool(s, &mcp.Tool{Name: "test_task_required", Description: "Tests a tool that must be called as a task (execution.taskSupport required): it asks the client to confirm, then completes", InputSchema: textSchema("message")}, "required",
		func(ctx context.Context, c *tasktest.Call) (*mcp.CallToolResult, error) {
			var args struct{ Message string }
			_ = json.Unmarshal(c.Args, &args)
			res, err := c.Elicit(ctx, &mcp.ElicitParams{
				Message:         "Confirm the task: " + args.Message,
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean", "description": "Go on?"}}},
			})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(res.Content)
			return textResult("Task completed: message=%q, confirmation: action=%s, content=%s", args.Message, res.Action, b), nil
		})

	text := func(uri, mime, body string) mcp.ResourceHandler {
		return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: body}}}, nil
		}
	}
	s.AddResource(&mcp.Resource{URI: "test://static-text", Name: "static-text", Title: "Static Text Resource", Description: "A static text resource for testing", MIMEType: "text/plain"},
		text("test://static-text", "text/plain", "This is the content of the static text resource."))
	s.AddResource(&mcp.Resource{URI: "test://static-binary", Name: "static-binary", Title: "Static Binary Resource", Description: "A static binary resource (image) for testing", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://static-binary", MIMEType: "image/png", Blob: testPNG}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://watched-resource", Name: "watched-resource", Title: "Watched Resource", Description: "A resource that can be subscribed to", MIMEType: "text/plain"},
		text("test://watched-resource", "text/plain", "Watched resource content"))
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template", Title: "Resource Template", Description: "A resource template with parameter substitution", MIMEType: "application/json"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := req.Params.URI[len("test://template/") : len(req.Params.URI)-len("/data")]
			b, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})

	prompt := func(p *mcp.Prompt, h mcp.PromptHandler) { s.AddPrompt(p, h) }
	messages := func(m ...*mcp.PromptMessage) *mcp.GetPromptResult { return &mcp.GetPromptResult{Messages: m} }
	prompt(&mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A simple prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return messages(&mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: "This is a simple prompt for testing."}}), nil
		})
	prompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with required arguments", Arguments: []*mcp.PromptArgument{
		{Name: "arg1", Description: "First test argument", Required: true},
		{Name: "arg2", Description: "Second test argument", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		return messages(&mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])}}), nil
	})
	prompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource", Description: "A prompt that includes an embedded resource", Arguments: []*mcp.PromptArgument{
		{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return messages(
			&mcp.PromptMessage{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}},
			&mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: "Please process the embedded resource above."}},
		), nil
	})
	prompt(&mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt that includes image content"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return messages(
				&mcp.PromptMessage{Role: "user", Content: &mcp.ImageContent{Data: testPNG, MIMEType: "image/png"}},
				&mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: "Please analyze the image above."}},
			), nil
		})
	return s
}

// A 1x1 PNG and a minimal WAV file, as the reference server sends them.
var (
	testPNG = mustBase64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	testWAV = mustBase64("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
)

func mustBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// elicit asks the client and reports what came back, in the reference
// server's words.
func elicit(ctx context.Context, req *mcp.CallToolRequest, lead string, p *mcp.ElicitParams) *mcp.CallToolResult {
	res, err := req.Session.Elicit(ctx, p)
	if err != nil {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Elicitation not supported or error: " + err.Error()}}}
	}
	b, _ := json.Marshal(res.Content)
	if res.Content == nil {
		b = []byte("{}")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: action=%s, content=%s", lead, res.Action, b)}}}
}

// The answers of the two reconnection tools; lossyEvents recognises the
// first.
const (
	lostAnswer     = "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."
	replayedAnswer = "Reconnection test completed: this answer was replayed after the stream was resumed."
)

// reconnectRetry is the reconnection delay the reconnection tools ask for
// (the reference asks for 5s; the tests need not wait that long).
const reconnectRetry = 200 * time.Millisecond

// reconnection closes the call's stream (over HTTP) and answers a moment
// later, once the stream is gone.
func reconnection(answer string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: reconnectRetry})
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil
	}
}

func longOperation(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Seconds float64 `json:"seconds"`
		Until   string  `json:"until"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &args)
	deadline := time.After(time.Duration(args.Seconds * float64(time.Second)))
	if args.Seconds == 0 {
		deadline = nil
	}
	for {
		if args.Until != "" {
			if _, err := os.Stat(args.Until); err == nil {
				break
			}
		}
		select {
		case <-deadline:
			return textResult("Long operation completed after %vs.", args.Seconds), nil
		case <-ctx.Done():
			return textResult("cancelled"), nil
		case <-time.After(10 * time.Millisecond):
		}
	}
	return textResult("Long operation completed: %s exists.", args.Until), nil
}

// lossyEvents is an event store that drops test_reconnection's answer, as
// the reference server's does, and keeps everything else.
type lossyEvents struct{ *mcp.MemoryEventStore }

func (s lossyEvents) Append(ctx context.Context, session, stream string, data []byte) error {
	if bytes.Contains(data, []byte(lostAnswer)) {
		return nil
	}
	return s.MemoryEventStore.Append(ctx, session, stream, data)
}

// conformanceHTTP serves conformanceFixture over Streamable HTTP on a
// loopback port and returns its /mcp URL.
func conformanceHTTP(t *testing.T) string {
	t.Helper()
	srv := conformanceFixture()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		EventStore: lossyEvents{mcp.NewMemoryEventStore(nil)},
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", tasktest.Handler(h)) // keeps a task-augmented call's task
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}
