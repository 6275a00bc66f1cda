package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/tasktest"
)

// The e2e test binary doubles as the fixture tool servers: started with
// MCPMUX_FIXTURE=<mode> in its environment it serves MCP on stdio instead
// of running tests (see TestMain). Each mode is a small server with one job.
const fixtureEnv = "MCPMUX_FIXTURE"

var fixtures = map[string]func() *mcp.Server{
	"echo":    echoFixture,
	"collide": collideFixture,
	"rich":    richFixture,
	"all":     allFixture,
	// conformance is the reference-style server of the conformance
	// suite's runs (conformance_fixture_test.go).
	"conformance": conformanceFixture,
	// only2026 speaks MCP 2026-07-28 only (era2026_fixture_test.go).
	"only2026": only2026Stdio,
}

// runFixture serves mode on stdio, or misbehaves as the mode says.
func runFixture(mode string) int {
	if code, ok := hostileStart(mode); ok {
		return code
	}
	switch mode {
	case "crash-start":
		fmt.Fprintln(os.Stderr, "fixture: cannot start: missing API key")
		return 3
	case "banner":
		// Prints to stdout before (instead of) speaking MCP.
		fmt.Println("Welcome to the banner server! v1.0")
		time.Sleep(time.Hour)
		return 0
	}
	mk := fixtures[mode]
	if mk == nil {
		fmt.Fprintf(os.Stderr, "fixture: unknown mode %q\n", mode)
		return 2
	}
	s := mk()
	// Wrapped for the conformance fixture's tasks (tasktest); a server
	// without tasks is as it was.
	if err := s.Run(context.Background(), tasktest.Wrap(s, &mcp.StdioTransport{})); err != nil && !strings.Contains(err.Error(), "EOF") {
		fmt.Fprintln(os.Stderr, "fixture:", err)
		return 1
	}
	return 0
}

var objectSchema = map[string]any{"type": "object"}

func textSchema(props ...string) map[string]any {
	p := map[string]any{}
	for _, name := range props {
		p[name] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": p}
}

func textResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func stringArg(req *mcp.CallToolRequest, name string) string {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	s, _ := m[name].(string)
	return s
}

// echoFixture: echo, env (reads its environment), pid.
func echoFixture() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo-fixture", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes text.", InputSchema: textSchema("text")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("echo: %s", stringArg(req, "text")), nil
		})
	s.AddTool(&mcp.Tool{Name: "env", Description: "Returns an environment variable.", InputSchema: textSchema("name")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("%s", os.Getenv(stringArg(req, "name"))), nil
		})
	s.AddTool(&mcp.Tool{Name: "pid", Description: "Returns the server's process id.", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("%d", os.Getpid()), nil
		})
	s.AddTool(&mcp.Tool{Name: "block", Description: "Blocks until the file named by `file` exists.", InputSchema: textSchema("file")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			file := stringArg(req, "file")
			fmt.Fprintf(os.Stderr, "block: waiting for %s\n", file)
			for {
				if _, err := os.Stat(file); err == nil {
					return textResult("unblocked"), nil
				}
				select {
				case <-ctx.Done():
					fmt.Fprintln(os.Stderr, "block: cancelled")
					return textResult("cancelled"), nil
				case <-time.After(10 * time.Millisecond):
				}
			}
		})
	s.AddTool(&mcp.Tool{Name: "meta", Description: "Returns the _meta of the call as JSON.", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(req.Params.Meta)
			return textResult("%s", b), nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Exits the server mid-call.", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(7)
			return nil, nil
		})
	return s
}

// collideFixture has a tool named like echoFixture's and two names that
// sanitise alike.
func collideFixture() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "collide-fixture", Version: "1"}, nil)
	for _, name := range []string{"echo", "get.data", "get_data"} {
		s.AddTool(&mcp.Tool{Name: name, Description: "collide " + name, InputSchema: objectSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("collide %s", name), nil
			})
	}
	return s
}

// richResult is what richFixture's report tool answers: every kind of
// content, structured content, _meta and isError.
func richResult() *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Meta: mcp.Meta{"fixture/trace": "t-1"},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "partial failure", Annotations: &mcp.Annotations{Audience: []mcp.Role{"assistant"}, Priority: 0.9}},
			&mcp.ImageContent{Data: []byte("PNG..."), MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte("WAV..."), MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "file:///logs/run.txt", Name: "run.txt", MIMEType: "text/plain"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///logs/err.txt", MIMEType: "text/plain", Text: "stack trace"}},
		},
		StructuredContent: map[string]any{"ok": false, "failed": []any{"step 2"}},
		IsError:           true,
	}
}

// richFixture returns results with everything in them.
func richFixture() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "rich-fixture", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{
		Name:         "report",
		Description:  "Returns multi-content with isError.",
		InputSchema:  objectSchema,
		OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return richResult(), nil
	})
	return s
}
