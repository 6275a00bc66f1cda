//lint:file-ignore SA1019 the matrix runs what clients of 2025-11-25 run, logging/setLevel and ping included, deprecated from 2026-07-28 on.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The operations every SDK client runs (the Inspector CLI runs those it
// has): what each is asked, by operation name.
var (
	calls = []struct {
		tool string
		args map[string]any
	}{
		{"echo", map[string]any{"message": "hi"}},
		{"get-sum", map[string]any{"a": 2, "b": 3}},
		{"get-tiny-image", map[string]any{}},
		{"get-structured-content", map[string]any{"location": "New York"}},
		{"get-annotated-message", map[string]any{"messageType": "error", "includeImage": false}},
		{"no-such-tool", map[string]any{}},
	}
	prompts = []struct {
		name string
		args map[string]string
	}{
		{"simple-prompt", nil},
		{"args-prompt", map[string]string{"city": "Paris"}},
		{"no-such-prompt", nil},
	}
	reads       = []string{"demo://resource/dynamic/text/1", "demo://resource/static/document/nope.md"}
	longRunning = map[string]any{"duration": 1, "steps": 3}
)

// outcomes collects the outcome of each operation.
type outcomes map[string]string

func (o outcomes) set(op, v string, err error) {
	if err != nil {
		v = "error: " + errText(err)
	}
	o[op] = v
}

// errText keeps what identifies an error: a JSON-RPC code, else its text.
func errText(err error) string {
	s := err.Error()
	if i := strings.Index(s, "code"); i >= 0 {
		return s[i:]
	}
	return s
}

func names[T any](items []T, name func(T) string) string {
	var out []string
	for _, it := range items {
		out = append(out, name(it))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// settleProgress waits, after a call's answer, until count reaches want
// or a while has passed: the Go SDKs hand an answer to its caller while
// the progress notifications read before it may still wait for their
// handler, so that a count taken at the answer is a matter of timing
// (direct as much as via). What is compared is how many arrived.
func settleProgress(count func() int64, want int) int64 {
	for deadline := time.Now().Add(2 * time.Second); count() < int64(want) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return count()
}

// steps is how many progress notifications longRunning asks for.
func steps() int { return longRunning["steps"].(int) }

func runGoSDK(ctx context.Context, t target, version string) (map[string]string, error) {
	var progress atomic.Int64
	c := gomcp.NewClient(&gomcp.Implementation{Name: "client-matrix", Version: "1"}, &gomcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *gomcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	var tr gomcp.Transport
	if t.url != "" {
		tr = &gomcp.StreamableClientTransport{Endpoint: t.url}
	} else {
		tr = &gomcp.CommandTransport{Command: exec.Command(t.cmd[0], t.cmd[1:]...)}
	}
	cs, err := c.Connect(ctx, tr, &gomcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	o := outcomes{}
	o.set("initialize: protocol", cs.InitializeResult().ProtocolVersion, nil)
	if tl, err := cs.ListTools(ctx, nil); err == nil {
		o.set("tools/list", names(tl.Tools, func(x *gomcp.Tool) string { return x.Name }), nil)
	} else {
		o.set("tools/list", "", err)
	}
	if pl, err := cs.ListPrompts(ctx, nil); err == nil {
		o.set("prompts/list", names(pl.Prompts, func(x *gomcp.Prompt) string { return x.Name }), nil)
	} else {
		o.set("prompts/list", "", err)
	}
	if rl, err := cs.ListResources(ctx, nil); err == nil {
		o.set("resources/list", names(rl.Resources, func(x *gomcp.Resource) string { return x.URI }), nil)
	} else {
		o.set("resources/list", "", err)
	}
	if tl, err := cs.ListResourceTemplates(ctx, nil); err == nil {
		o.set("resources/templates/list", names(tl.ResourceTemplates, func(x *gomcp.ResourceTemplate) string { return x.URITemplate }), nil)
	} else {
		o.set("resources/templates/list", "", err)
	}
	for _, call := range calls {
		res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: call.tool, Arguments: call.args})
		o.set("tools/call "+call.tool, goContent(res), err)
	}
	params := &gomcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: longRunning}
	params.SetProgressToken("matrix")
	res, err := cs.CallTool(ctx, params)
	o.set("tools/call trigger-long-running-operation", fmt.Sprintf("%s; progress %d", goContent(res), settleProgress(progress.Load, steps())), err)
	for _, p := range prompts {
		res, err := cs.GetPrompt(ctx, &gomcp.GetPromptParams{Name: p.name, Arguments: p.args})
		var texts []string
		if res != nil {
			for _, m := range res.Messages {
				texts = append(texts, string(m.Role)+":"+contentText(m.Content))
			}
		}
		o.set("prompts/get "+p.name, strings.Join(texts, " | "), err)
	}
	for _, uri := range reads {
		res, err := cs.ReadResource(ctx, &gomcp.ReadResourceParams{URI: uri})
		var parts []string
		if res != nil {
			for _, c := range res.Contents {
				parts = append(parts, c.MIMEType+":"+c.Text)
			}
		}
		o.set("resources/read "+uri, strings.Join(parts, " | "), err)
	}
	comp, err := cs.Complete(ctx, &gomcp.CompleteParams{Ref: &gomcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"}, Argument: gomcp.CompleteParamsArgument{Name: "department", Value: "E"}})
	if err == nil {
		o.set("completion/complete", strings.Join(comp.Completion.Values, ","), nil)
	} else {
		o.set("completion/complete", "", err)
	}
	o.set("logging/setLevel", "ok", cs.SetLoggingLevel(ctx, &gomcp.SetLoggingLevelParams{Level: "debug"}))
	o.set("ping", "ok", cs.Ping(ctx, nil))
	return o, nil
}

func goContent(res *gomcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	s := strings.Join(parts, " | ")
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		s += " structured:" + string(b)
	}
	if res.IsError {
		s = "isError: " + s
	}
	return s
}

func contentText(c gomcp.Content) string {
	switch c := c.(type) {
	case *gomcp.TextContent:
		return c.Text
	case *gomcp.ImageContent:
		return "image " + c.MIMEType
	case *gomcp.EmbeddedResource:
		return "resource " + c.Resource.URI
	case *gomcp.ResourceLink:
		return "link " + c.URI
	}
	return fmt.Sprintf("%T", c)
}
