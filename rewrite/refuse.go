package rewrite

import "github.com/modelcontextprotocol/go-sdk/mcp"

// refuse answers, instead of the server, a call whose arguments hold a
// blocked URL. The answer is an isError result with the rule's message:
// the tool did not run, and the agent reads why (it is never a protocol
// error, which agents cannot read).
type refuse struct {
	name    string
	tools   toolSet
	urls    urlSet
	message string
}

// before returns the refusal, or nil to let the call go on.
func (r *refuse) before(c *Call, env *Env) *mcp.CallToolResult {
	if !r.tools.match(c) {
		return nil
	}
	args, ok := c.args()
	if !ok {
		return nil // not JSON: the pipeline rejects the call anyway
	}
	var pattern string
	walkStrings(args, func(s string) bool {
		pattern = r.urls.firstMatch(s)
		return pattern != ""
	})
	if pattern == "" {
		return nil
	}
	record(env, r.name, ActionRefused, c, "pattern", pattern)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: r.message}}}
}
