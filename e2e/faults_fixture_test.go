package e2e

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Fixture modes of the fault suite (faults_test.go).
func init() {
	fixtures["faults"] = faultsFixture
	fixtures["crash-count"] = crashCountFixture
}

// faultsServerEnv names the server in the answers of faultsFixture's tag
// tool, so that a test can tell which server answered.
const faultsServerEnv = "FIXTURE_SERVER"

// faultsFixture is echoFixture (echo, pid, block, ...) plus:
//   - tag: answers "<server>:<tag>", to match each answer to its call;
//   - hang: never answers, not even when cancelled.
func faultsFixture() *mcp.Server {
	s := echoFixture()
	name := os.Getenv(faultsServerEnv)
	s.AddTool(&mcp.Tool{Name: "tag", Description: "Answers <server>:<tag>.", InputSchema: textSchema("tag")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("%s:%s", name, stringArg(req, "tag")), nil
		})
	s.AddTool(&mcp.Tool{Name: "hang", Description: "Never answers.", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "hang: hanging")
			time.Sleep(time.Hour)
			return nil, nil
		})
	return s
}

// startsFileEnv names the file crashCountFixture appends a line to on
// every start.
const startsFileEnv = "FIXTURE_STARTS"

// crashCountFixture records its start and exits before speaking MCP, as
// a server missing its API key does.
func crashCountFixture() *mcp.Server {
	if f, err := os.OpenFile(os.Getenv(startsFileEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintf(f, "%d %d\n", os.Getpid(), time.Now().UnixNano())
		f.Close()
	}
	fmt.Fprintln(os.Stderr, "fixture: cannot start: missing API key")
	os.Exit(3)
	return nil
}
