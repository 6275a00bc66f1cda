package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolHash identifies a tool's definition as a client sees it: its name,
// title, description and schemas, compared as canonical JSON (key order
// and spacing do not matter). Pinning compares these.
func ToolHash(t *mcp.Tool) string {
	b, err := json.Marshal(Pinned(t))
	if err != nil {
		return ""
	}
	if canon, ok := Canonical(b); ok {
		b = canon
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// PinnedTool is the part of a tool's definition pinning watches.
type PinnedTool struct {
	Name         string `json:"name"`
	Title        string `json:"title,omitempty"`
	Description  string `json:"description,omitempty"`
	InputSchema  any    `json:"inputSchema,omitempty"`
	OutputSchema any    `json:"outputSchema,omitempty"`
}

// Pinned is the part of t pinning watches.
func Pinned(t *mcp.Tool) PinnedTool {
	return PinnedTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}
}
