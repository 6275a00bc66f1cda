// Package synth holds the synthetic tool of the benchmarks: the one the
// bench fixture serves many of, and the one the tool-search benchmark
// builds its 100 × 50 catalog from.
package synth

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is tool number i: a tool with a schema of the size real servers
// list (a few typed parameters with descriptions).
func Tool(i int) *mcp.Tool {
	return &mcp.Tool{
		Name:        fmt.Sprintf("tool_%d", i),
		Description: fmt.Sprintf("Synthetic tool number %d: takes a query, a limit and some options, and echoes the query back.", i),
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"text":    map[string]any{"type": "string", "description": "The text to echo back."},
				"limit":   map[string]any{"type": "integer", "description": "How many results at most.", "minimum": 1, "maximum": 100},
				"verbose": map[string]any{"type": "boolean", "description": "Whether to explain the answer."},
				"tags":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Labels to filter by."},
			},
			"required": []any{"text"},
		},
	}
}
