package e2e

import (
	"context"
	"os"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { fixtures["rewrite"] = rewriteFixture }

// rewriteFixture: scrape_website (fails with "unhandled errors" on URLs
// with /broken in them), search (results linking to a benchmark dataset),
// scrape_calls (how many scrapes reached this server) and pid.
func rewriteFixture() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "rewrite-fixture", Version: "1"}, nil)
	var scrapes atomic.Int32
	s.AddTool(&mcp.Tool{Name: "scrape_website", Description: "Scrapes a web page.", InputSchema: textSchema("url")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			scrapes.Add(1)
			u := stringArg(req, "url")
			if strings.Contains(u, "/broken") {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Error: unhandled errors while scraping " + u}}}, nil
			}
			return textResult("scraped %s", u), nil
		})
	s.AddTool(&mcp.Tool{Name: "search", Description: "Searches the web.", InputSchema: textSchema("q")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("Results for %s:\n1. https://huggingface.co/datasets/gaia-benchmark/GAIA\n2. https://example.com/gaia-paper", stringArg(req, "q")), nil
		})
	s.AddTool(&mcp.Tool{Name: "scrape_calls", Description: "Counts the scrapes that reached this server.", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("%d", scrapes.Load()), nil
		})
	s.AddTool(&mcp.Tool{Name: "pid", Description: "Returns the server's process id.", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("%d", os.Getpid()), nil
		})
	return s
}
