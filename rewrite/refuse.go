package rewrite

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refuseKind is the rule that refuses calls whose arguments hold a URL
// matching block_urls, answering with message; with redact: true it also
// removes those URLs from results (redact.go).
var refuseKind = &kind{
	name: "refuse",
	set: func(s *Spec) []string {
		var f []string
		if len(s.BlockURLs) > 0 {
			f = append(f, "block_urls")
		}
		if s.Message != "" {
			f = append(f, "message")
		}
		if s.Redact {
			f = append(f, "redact")
		}
		return f
	},
	compile: compileRefuse,
}

func compileRefuse(r *Rules, s *Spec, tools toolSet) error {
	urls := make(urlSet, 0, len(s.BlockURLs))
	for i, raw := range s.BlockURLs {
		p, err := compileURLPattern(raw)
		if err != nil {
			return &FieldError{Field: fmt.Sprintf("block_urls.%d", i), Err: err}
		}
		urls = append(urls, p)
	}
	if len(urls) == 0 {
		return &FieldError{Field: "block_urls", Err: fmt.Errorf("missing: message and redact need block_urls, the URL patterns to refuse")}
	}
	if strings.TrimSpace(s.Message) == "" {
		return &FieldError{Field: "message", Err: fmt.Errorf("missing: a refused call is answered with message, so say why and what to do instead")}
	}
	r.before = append(r.before, &refuse{name: s.Name, tools: tools, urls: urls, message: s.Message})
	if s.Redact {
		r.after = append(r.after, &redact{name: s.Name, tools: tools, urls: urls})
	}
	return nil
}

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
