package e2e

//lint:file-ignore SA1019 the test checks the deprecated logging of MCP 2026-07-28 (still functional) and the removed ping and logging/setLevel as a go-sdk v1.8.0 client sends them.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// plain2026Server is a plain go-sdk v1.8.0 server of both eras with a
// tool that logs, a prompt, a resource, completions and subscriptions:
// what a go-sdk client of 2026-07-28 uses, served directly and through
// mcpmux for the two to be compared.
func plain2026Server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "plain2026", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Argument.Value + "ed"}, Total: 1}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddTool(&mcp.Tool{Name: "greet", InputSchema: textSchema("name")}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "plain2026", Data: "greeting " + stringArg(req, "name")})
		return textResult("hi %s", stringArg(req, "name")), nil
	})
	s.AddTool(&mcp.Tool{Name: "bump", InputSchema: objectSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "plain://readme"})
		return textResult("bumped"), nil
	})
	s.AddResource(&mcp.Resource{URI: "plain://readme", Name: "readme", MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "plain://readme", MIMEType: "text/plain", Text: "hello"}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "greet " + req.Params.Arguments["who"]}}}}, nil
	})
	return s
}

// goClient2026 is a go-sdk v1.8.0 client whose log messages go to logs,
// and the URIs of its resources/updated notifications to updated.
func goClient2026(logs, updated chan<- string) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e-go-2026", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			select {
			case logs <- fmt.Sprint(r.Params.Data):
			default:
			}
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- r.Params.URI:
			default:
			}
		},
	})
}

// goClientUse is what a go-sdk 2026 client sees of each method it has,
// besides ping, logging/setLevel and logging.
func goClientUse(t *testing.T, cs *mcp.ClientSession, prefix string, updated <-chan string) map[string]string {
	t.Helper()
	ctx := testContext(t)
	out := map[string]string{}
	record := func(method string, v any, err error) {
		if err != nil {
			out[method] = "error: " + err.Error()
			return
		}
		b, _ := json.Marshal(v)
		out[method] = strings.ReplaceAll(string(b), prefix, "")
	}
	tools, err := cs.ListTools(ctx, nil)
	var names []string
	if tools != nil {
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
	}
	record("tools/list", names, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: prefix + "greet", Arguments: map[string]any{"name": "Ada"}})
	if res != nil {
		record("tools/call", []any{res.IsError, resultText(res)}, err)
	} else {
		record("tools/call", nil, err)
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	names = nil
	if prompts != nil {
		for _, p := range prompts.Prompts {
			names = append(names, p.Name)
		}
	}
	record("prompts/list", names, err)
	prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prefix + "greet", Arguments: map[string]string{"who": "Ada"}})
	if prompt != nil {
		record("prompts/get", prompt.Messages, err)
	} else {
		record("prompts/get", nil, err)
	}
	resources, err := cs.ListResources(ctx, nil)
	var uris []string
	if resources != nil {
		for _, r := range resources.Resources {
			uris = append(uris, r.URI)
		}
	}
	record("resources/list", uris, err)
	uri := "plain://readme"
	if len(uris) == 1 {
		uri = uris[0] // as mcpmux lists it
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if read != nil {
		record("resources/read", read.Contents, err)
	} else {
		record("resources/read", nil, err)
	}
	done, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: prefix + "greet"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "gre"}})
	if done != nil {
		record("completion/complete", done.Completion.Values, err)
	} else {
		record("completion/complete", nil, err)
	}
	record("subscribe", nil, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}))
	// The subscription is live once its listen stream is acknowledged,
	// which Subscribe does not wait for: bump until an update comes.
	got := testkit.Await(t, "a resources/updated notification", func() string {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: prefix + "bump", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		select {
		case uri := <-updated:
			return uri
		default:
			return ""
		}
	}, func(uri string) bool { return uri != "" })
	out["notifications/resources/updated"] = strings.ReplaceAll(got, prefix, "")
	record("unsubscribe", nil, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}))
	return out
}

// logged waits for a log message of the client's.
func logged(t *testing.T, logs <-chan string, what string) string {
	t.Helper()
	select {
	case m := <-logs:
		return m
	case <-time.After(testTimeout):
		t.Fatalf("%s: no log message", what)
		return ""
	}
}

// A go-sdk v1.8.0 client that negotiated 2026-07-28 with mcpmux uses
// every method it has as against a plain go-sdk server, over HTTP and
// stdio. Its ClientSession.Ping and SetLoggingLevel send ping and
// logging/setLevel without the request _meta of 2026-07-28, which the
// go-sdk's stateless HTTP handler refuses (400, "missing or invalid _meta
// field", a plain go-sdk server's too); mcpmux answers them over HTTP as
// over stdio: ping with {}, logging/setLevel by keeping the level of a
// client that names itself (X-Task-Id, token) for its later requests, and
// with -32601 saying what to do for one that does not. A request's own
// log level (_meta io.modelcontextprotocol/logLevel) gets it the log
// messages of its call, as from a plain server.
func TestGoClient2026Methods(t *testing.T) {
	t.Parallel()
	srv := plain2026Server()
	plain := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(plain.Close)
	dir := writeConfig(t, map[string]string{"tool/plain.yaml": fmt.Sprintf("name: plain\nurl: %s\n", plain.URL)})
	p := startHTTP(t, dir)
	logs, updated := make(chan string, 16), make(chan string, 16)
	connect := func(tr mcp.Transport) *mcp.ClientSession {
		t.Helper()
		return testkit.Connect2026(testContext(t), t, goClient2026(logs, updated), tr)
	}
	direct := connect(&mcp.StreamableClientTransport{Endpoint: plain.URL, MaxRetries: -1})
	want := goClientUse(t, direct, "", updated)
	for method, got := range want {
		if strings.HasPrefix(got, "error") {
			t.Fatalf("the plain server: %s: %s", method, got)
		}
	}
	// Measured, not required: the plain server refuses the go-sdk
	// client's ping.
	t.Logf("plain go-sdk stateless server, ClientSession.Ping: %v", direct.Ping(testContext(t), nil))

	withTask := &http.Client{Transport: testkit.HeaderTransport{Header: http.Header{"X-Task-Id": {"T1"}}}}
	viaHTTP := connect(&mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", MaxRetries: -1})
	viaHTTPTask := connect(&mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", MaxRetries: -1, HTTPClient: withTask})
	viaStdio := connect(&mcp.CommandTransport{Command: exec.Command(mcpmuxBin, "--config", dir)})
	for _, c := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"http", viaHTTP}, {"http with a task", viaHTTPTask}, {"stdio", viaStdio}} {
		drainLogs(updated)
		got := goClientUse(t, c.cs, "plain__", updated)
		for method, w := range want {
			if got[method] != w {
				t.Errorf("%s: %s = %s, want %s (as from the plain server)", c.name, method, got[method], w)
			}
		}
		if err := c.cs.Ping(testContext(t), nil); err != nil {
			t.Errorf("%s: ping: %v", c.name, err)
		}
		// A request's own level.
		drainLogs(logs)
		if _, err := c.cs.CallTool(testContext(t), &mcp.CallToolParams{Name: "plain__greet", Arguments: map[string]any{"name": "Bo"}, Meta: mcp.Meta{mcp.MetaKeyLogLevel: "info"}}); err != nil {
			t.Fatal(err)
		}
		if m := logged(t, logs, c.name+": a call with its own log level"); m != "greeting Bo" {
			t.Errorf("%s: logged %q", c.name, m)
		}
	}

	// logging/setLevel: kept for a client that names itself.
	if err := viaHTTP.SetLoggingLevel(testContext(t), &mcp.SetLoggingLevelParams{Level: "info"}); err == nil || !strings.Contains(err.Error(), "io.modelcontextprotocol/logLevel") {
		t.Errorf("logging/setLevel of a client that names none: %v, want an error saying to send the level per request", err)
	}
	for _, c := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"http with a task", viaHTTPTask}, {"stdio", viaStdio}} {
		if err := c.cs.SetLoggingLevel(testContext(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatalf("%s: logging/setLevel: %v", c.name, err)
		}
		drainLogs(logs)
		callTool(t, c.cs, "plain__greet", map[string]any{"name": "Cy"})
		if m := logged(t, logs, c.name+": a call after logging/setLevel"); m != "greeting Cy" {
			t.Errorf("%s: logged %q", c.name, m)
		}
	}
}

func drainLogs(c chan string) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
