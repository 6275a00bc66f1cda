//lint:file-ignore SA1019 the matrix runs what clients of 2025-11-25 run, logging/setLevel and ping included, deprecated from 2026-07-28 on.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	mgclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mg "github.com/mark3labs/mcp-go/mcp"
)

func runMCPGo(ctx context.Context, t target, version string) (map[string]string, error) {
	var c *mgclient.Client
	if t.url != "" {
		var err error
		if c, err = mgclient.NewStreamableHttpClient(t.url); err != nil {
			return nil, err
		}
		if err := c.Start(ctx); err != nil {
			return nil, err
		}
	} else {
		tr := transport.NewStdio(t.cmd[0], nil, t.cmd[1:]...)
		if err := tr.Start(ctx); err != nil {
			return nil, err
		}
		c = mgclient.NewClient(tr)
		// Start (a no-op for the started transport) sets the client's
		// notification handler: without it no progress is seen.
		if err := c.Start(ctx); err != nil {
			return nil, err
		}
	}
	defer c.Close()
	var progress atomic.Int64
	c.OnNotification(func(n mg.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			progress.Add(1)
		}
	})
	init := mg.InitializeRequest{}
	init.Params.ClientInfo = mg.Implementation{Name: "client-matrix", Version: "1"}
	init.Params.ProtocolVersion = version // "": the newest it has, 2026-07-28 first
	ir, err := c.Initialize(ctx, init)
	if err != nil {
		return nil, err
	}
	o := outcomes{}
	o.set("initialize: protocol", ir.ProtocolVersion, nil)
	if tl, err := c.ListTools(ctx, mg.ListToolsRequest{}); err == nil {
		o.set("tools/list", names(tl.Tools, func(x mg.Tool) string { return x.Name }), nil)
	} else {
		o.set("tools/list", "", err)
	}
	if pl, err := c.ListPrompts(ctx, mg.ListPromptsRequest{}); err == nil {
		o.set("prompts/list", names(pl.Prompts, func(x mg.Prompt) string { return x.Name }), nil)
	} else {
		o.set("prompts/list", "", err)
	}
	if rl, err := c.ListResources(ctx, mg.ListResourcesRequest{}); err == nil {
		o.set("resources/list", names(rl.Resources, func(x mg.Resource) string { return x.URI }), nil)
	} else {
		o.set("resources/list", "", err)
	}
	if tl, err := c.ListResourceTemplates(ctx, mg.ListResourceTemplatesRequest{}); err == nil {
		o.set("resources/templates/list", names(tl.ResourceTemplates, func(x mg.ResourceTemplate) string {
			if x.URITemplate == nil {
				return ""
			}
			return x.URITemplate.Raw()
		}), nil)
	} else {
		o.set("resources/templates/list", "", err)
	}
	for _, call := range calls {
		req := mg.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = call.tool, call.args
		res, err := c.CallTool(ctx, req)
		o.set("tools/call "+call.tool, mgContent(res), err)
	}
	req := mg.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "trigger-long-running-operation", longRunning
	req.Params.Meta = &mg.Meta{ProgressToken: "matrix"}
	res, err := c.CallTool(ctx, req)
	o.set("tools/call trigger-long-running-operation", fmt.Sprintf("%s; progress %d", mgContent(res), settleProgress(progress.Load, steps())), err)
	for _, p := range prompts {
		req := mg.GetPromptRequest{}
		req.Params.Name, req.Params.Arguments = p.name, p.args
		res, err := c.GetPrompt(ctx, req)
		var texts []string
		if res != nil {
			for _, m := range res.Messages {
				texts = append(texts, string(m.Role)+":"+mgText(m.Content))
			}
		}
		o.set("prompts/get "+p.name, strings.Join(texts, " | "), err)
	}
	for _, uri := range reads {
		req := mg.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := c.ReadResource(ctx, req)
		var parts []string
		if res != nil {
			for _, rc := range res.Contents {
				if tc, ok := rc.(mg.TextResourceContents); ok {
					parts = append(parts, tc.MIMEType+":"+tc.Text)
				} else {
					parts = append(parts, fmt.Sprintf("%T", rc))
				}
			}
		}
		o.set("resources/read "+uri, strings.Join(parts, " | "), err)
	}
	creq := mg.CompleteRequest{}
	creq.Params.Ref = mg.PromptReference{Type: "ref/prompt", Name: "completable-prompt"}
	creq.Params.Argument = mg.CompleteArgument{Name: "department", Value: "E"}
	if comp, err := c.Complete(ctx, creq); err == nil {
		o.set("completion/complete", strings.Join(comp.Completion.Values, ","), nil)
	} else {
		o.set("completion/complete", "", err)
	}
	lreq := mg.SetLevelRequest{}
	lreq.Params.Level = mg.LoggingLevelDebug
	o.set("logging/setLevel", "ok", c.SetLevel(ctx, lreq))
	o.set("ping", "ok", c.Ping(ctx))
	return o, nil
}

func mgContent(res *mg.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		parts = append(parts, mgText(c))
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

func mgText(c mg.Content) string {
	switch c := c.(type) {
	case mg.TextContent:
		return c.Text
	case mg.ImageContent:
		return "image " + c.MIMEType
	case mg.EmbeddedResource:
		if tc, ok := c.Resource.(mg.TextResourceContents); ok {
			return "resource " + tc.URI
		}
		return "resource"
	case mg.ResourceLink:
		return "link " + c.URI
	}
	return fmt.Sprintf("%T", c)
}
