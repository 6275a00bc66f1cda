package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hostile fixture modes: servers that misbehave towards mcpmux.
//
//	leak        prints its secret env var FIXTURE_API_KEY to stderr at start
//	            and in every error (tool fail: a JSON-RPC error quoting it)
//	leak-crash  prints the secret to stderr and exits at start
//	args-crash  prints its arguments to stderr and exits at start
//	huge        tool dump: a text result of `mb` MB plus an image of as many
//	flood       floods stderr without pause, with and without newlines,
//	            while serving echo
func init() {
	fixtures["leak"] = leakFixture
	fixtures["huge"] = hugeFixture
	fixtures["flood"] = floodFixture
}

// hostileStart handles the modes that never serve.
func hostileStart(mode string) (code int, handled bool) {
	switch mode {
	case "leak-crash":
		fmt.Fprintf(os.Stderr, "fixture: auth failed for key %s\n", os.Getenv("FIXTURE_API_KEY"))
		return 3, true
	case "args-crash":
		fmt.Fprintf(os.Stderr, "fixture: bad arguments %q\n", os.Args[1:])
		return 3, true
	}
	return 0, false
}

func leakFixture() *mcp.Server {
	key := os.Getenv("FIXTURE_API_KEY")
	fmt.Fprintf(os.Stderr, "fixture: starting with key %s\n", key)
	s := mcp.NewServer(&mcp.Implementation{Name: "leak-fixture", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Fails, quoting its API key.", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintf(os.Stderr, "fixture: request rejected for key %s\n", key)
			return nil, fmt.Errorf("upstream refused key %s", key)
		})
	return s
}

func hugeFixture() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "huge-fixture", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "dump", Description: "Returns `mb` MB of text and an image as big.", InputSchema: textSchema("mb")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var mb int
			fmt.Sscan(stringArg(req, "mb"), &mb)
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: strings.Repeat("é", mb<<19)}, // 2 bytes each
				&mcp.ImageContent{Data: make([]byte, mb<<20), MIMEType: "image/png"},
			}}, nil
		})
	return s
}

func floodFixture() *mcp.Server {
	go func() {
		line := []byte(strings.Repeat("flood ", 20) + "\n")
		long := []byte(strings.Repeat("x", 1<<20)) // a 1 MiB "line" without newline
		for i := 0; ; i++ {
			if i%1000 == 0 {
				os.Stderr.Write(long)
			}
			os.Stderr.Write(line)
		}
	}()
	return echoFixture()
}
