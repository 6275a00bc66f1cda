package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() { fixtures["oracle"] = oracleFixture }

// Environment of oracleFixture.
const (
	oracleAnswerEnv = "FIXTURE_ANSWER" // what ask answers: changing it changes every live answer
	oracleCallsEnv  = "FIXTURE_CALLS"  // file each call of ask is appended to, to tell whether the server saw it
)

// oracleFixture is echoFixture (echo, block, ...) plus ask, whose answers
// depend on its environment and count its calls: "<answer> to <q> (call
// N)", and big, which answers n bytes of text.
func oracleFixture() *mcp.Server {
	s := echoFixture()
	answer := os.Getenv(oracleAnswerEnv)
	n := 0
	s.AddTool(&mcp.Tool{Name: "ask", Description: "Answers a question.", InputSchema: textSchema("q")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n++
			if f, err := os.OpenFile(os.Getenv(oracleCallsEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				fmt.Fprintf(f, "%s\n", req.Params.Arguments)
				f.Close()
			}
			return textResult("%s to %s (call %d)", answer, stringArg(req, "q"), n), nil
		})
	s.AddTool(&mcp.Tool{Name: "big", Description: "Answers n bytes of text.", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}, "tag": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				N   int
				Tag string
			}
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return textResult("%s:%s", args.Tag, strings.Repeat("x", args.N)), nil
		})
	return s
}
