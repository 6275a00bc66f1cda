// Command agent is docs/clients.md's example of an agent that reaches mcpmux
// over Streamable HTTP with the official Go SDK: it sends the token and its
// task id on every request, lists the merged catalog and calls one tool.
//
//	MCPMUX_URL=http://127.0.0.1:8080/mcp MCPMUX_TOKEN=... TASK_ID=task-7 go run ./examples/agent
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headers adds mcpmux's bearer token and this task's id to each request.
type headers struct{ token, task string }

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.token)
	r.Header.Set("X-Task-Id", h.task)
	return http.DefaultTransport.RoundTrip(r)
}

func main() {
	ctx := context.Background()
	transport := &mcp.StreamableClientTransport{
		Endpoint:   os.Getenv("MCPMUX_URL"), // http://HOST:8080/mcp, or /mcp/PROFILE
		HTTPClient: &http.Client{Transport: headers{os.Getenv("MCPMUX_TOKEN"), os.Getenv("TASK_ID")}},
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "my-agent", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(tool.Name)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{
		Name:      "fetch__fetch",
		Arguments: map[string]any{"url": "https://example.com"},
	})
	if err != nil {
		log.Fatal(err) // a protocol failure; a failed tool is res.IsError
	}
	for _, c := range res.Content {
		if text, ok := c.(*mcp.TextContent); ok {
			fmt.Println(text.Text)
		}
	}
}
