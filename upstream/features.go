package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Features is what a server offers: the lists it answers for tools/list,
// prompts/list, resources/list and resources/templates/list. A list the
// server does not advertise in its capabilities is empty. Values are never
// modified once published.
type Features struct {
	Tools []*mcp.Tool
	// ToolJSON holds each tool's definition as the server listed it, by
	// name: with the fields the go-sdk's types do not have (a tool's
	// execution) and those they lose (a false that is omitted).
	ToolJSON   map[string]json.RawMessage
	Prompts    []*mcp.Prompt
	PromptJSON map[string]json.RawMessage // each prompt as listed, by name
	Resources  []*mcp.Resource
	Templates  []*mcp.ResourceTemplate
	// Subscribe reports whether the server supports resources/subscribe.
	Subscribe bool
	// Completions reports whether the server supports completion/complete.
	Completions bool
	// Instructions are the server's instructions from its initialize
	// result: how to use it, for the model.
	Instructions string
}

const (
	maxPages         = 100   // per list
	maxItemsPerList  = 10000 // per list and server
	listItemsMessage = "more than %d %s"
)

// listFeatures fetches every page of every list the server advertises.
// Tools and prompts are listed with raw requests (raw.go), so that their
// definitions are kept as the server sent them.
func listFeatures(ctx context.Context, c *conn) (Features, error) {
	cs := c.cs
	var f Features
	caps := &mcp.ServerCapabilities{}
	if ir := cs.InitializeResult(); ir != nil {
		f.Instructions = ir.Instructions
		if ir.Capabilities != nil {
			caps = ir.Capabilities
		}
	}
	var err error
	// Tools are listed even when not advertised: some servers forget the
	// capability, and a server without tools answers with an empty list or
	// an error we can report.
	if f.Tools, f.ToolJSON, err = listTools(ctx, c); err != nil {
		if caps.Tools != nil {
			return f, fmt.Errorf("listing tools: %w", err)
		}
		f.Tools, f.ToolJSON = nil, nil
	}
	for _, t := range f.Tools {
		encodeSchemas(t)
	}
	if caps.Prompts != nil {
		if f.Prompts, f.PromptJSON, err = listRaw[mcp.Prompt](ctx, c, "prompts/list", "prompts", func(p *mcp.Prompt) string { return p.Name }); err != nil {
			return f, fmt.Errorf("listing prompts: %w", err)
		}
	}
	if caps.Resources != nil {
		f.Subscribe = caps.Resources.Subscribe
		if f.Resources, err = listAll(ctx, "resources", func(c string) ([]*mcp.Resource, string, error) {
			r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: c})
			if err != nil {
				return nil, "", err
			}
			return r.Resources, r.NextCursor, nil
		}); err != nil {
			return f, fmt.Errorf("listing resources: %w", err)
		}
		if f.Templates, err = listAll(ctx, "resource templates", func(c string) ([]*mcp.ResourceTemplate, string, error) {
			r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: c})
			if err != nil {
				return nil, "", err
			}
			return r.ResourceTemplates, r.NextCursor, nil
		}); err != nil {
			return f, fmt.Errorf("listing resource templates: %w", err)
		}
	}
	f.Completions = caps.Completions != nil
	return f, nil
}

// listTools fetches every page of the server's tools, decoded and as
// listed.
func listTools(ctx context.Context, c *conn) ([]*mcp.Tool, map[string]json.RawMessage, error) {
	tools, raw, err := listRaw[listedTool](ctx, c, "tools/list", "tools", func(t *listedTool) string { return t.Name })
	out := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if herr := paramHeaderError(t.InputSchema); herr != nil {
			// Left out, as MCP 2026-07-28 asks of a client: its calls
			// could not carry the headers the server expects.
			c.srv.log.Warn("leaving out a tool whose x-mcp-header annotations are invalid", "tool", t.Name, "error", herr)
			delete(raw, t.Name)
			continue
		}
		out = append(out, t.tool())
	}
	return out, raw, err
}

// listedTool decodes a listed tool with its schemas as JSON: decoding them
// into maps, as mcp.Tool's own fields would, costs far more memory for a
// big catalog, and they are kept encoded anyway (encodeSchemas). The
// outer fields shadow the embedded ones of the same name.
type listedTool struct {
	mcp.Tool
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

func (t *listedTool) tool() *mcp.Tool {
	out := t.Tool
	if t.InputSchema != nil {
		out.InputSchema = t.InputSchema
	}
	if t.OutputSchema != nil {
		out.OutputSchema = t.OutputSchema
	}
	return &out
}

// listRaw fetches every page of a list with raw requests: the items
// decoded, and each as the server sent it, by the name key gives it (the
// last of a name wins, as it would in a client's map).
func listRaw[T any](ctx context.Context, c *conn, method, field string, key func(*T) string) ([]*T, map[string]json.RawMessage, error) {
	raw := map[string]json.RawMessage{}
	items, err := listAll(ctx, field, func(cursor string) ([]*T, string, error) {
		var params struct {
			Cursor string `json:"cursor,omitempty"`
		}
		params.Cursor = cursor
		res, err := c.rawCall(ctx, method, &params)
		if err != nil {
			return nil, "", err
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(res, &page); err != nil {
			return nil, "", fmt.Errorf("reading %s: %w", method, err)
		}
		var (
			list []json.RawMessage
			next string
		)
		if err := json.Unmarshal(page[field], &list); err != nil {
			return nil, "", fmt.Errorf("reading %s: %s: %w", method, field, err)
		}
		if t := page["ttlMs"]; t != nil {
			var ms int64
			if json.Unmarshal(t, &ms) == nil && ms > 0 {
				c.noteTTL(time.Duration(ms) * time.Millisecond)
			}
		}
		if n := page["nextCursor"]; n != nil {
			if err := json.Unmarshal(n, &next); err != nil {
				return nil, "", fmt.Errorf("reading %s: nextCursor: %w", method, err)
			}
		}
		out := make([]*T, 0, len(list))
		for _, item := range list {
			v := new(T)
			if err := json.Unmarshal(item, v); err != nil {
				return nil, "", fmt.Errorf("reading %s: %w", method, err)
			}
			raw[key(v)] = item
			out = append(out, v)
		}
		return out, next, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return items, raw, nil
}

// encodeSchemas replaces a freshly listed tool's schemas, decoded by the
// SDK into trees of maps, by their JSON encoding: a fraction of the
// memory for big catalogs, and bytes that tools/list can copy as they are.
// A schema that does not encode stays as it is.
func encodeSchemas(t *mcp.Tool) {
	if t == nil {
		return
	}
	for _, s := range []*any{&t.InputSchema, &t.OutputSchema} {
		if *s == nil {
			continue
		}
		if _, ok := (*s).(json.RawMessage); ok {
			continue
		}
		if b, err := json.Marshal(*s); err == nil {
			*s = json.RawMessage(b)
		}
	}
}

// listAll follows cursors, within sane bounds: a server that pages forever
// or lists millions of items is an error, not a hang.
func listAll[T any](ctx context.Context, what string, page func(cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	cursor := ""
	for n := 0; ; n++ {
		if n == maxPages {
			return nil, fmt.Errorf("more than %d pages of %s", maxPages, what)
		}
		items, next, err := page(cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if len(all) > maxItemsPerList {
			return nil, fmt.Errorf(listItemsMessage, maxItemsPerList, what)
		}
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// same reports whether two feature sets list the same things.
func (f Features) same(g Features) bool {
	a, err1 := json.Marshal(f)
	b, err2 := json.Marshal(g)
	return err1 == nil && err2 == nil && string(a) == string(b)
}
