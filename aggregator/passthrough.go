package aggregator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/tracing"
	"github.com/mcpmux/mcpmux/upstream"
)

// This file passes prompts, resources, resource templates, completions,
// subscriptions and server-wide log messages through: everything but tools,
// whose pipeline is in pipeline.go.

// syncItems registers the difference between registered (key → hash) and
// want: new and changed items first, then removals, like applyView.
func syncItems[T any](registered map[string]string, want map[string]*Item[T], add func(*Item[T]) error, remove func(keys ...string)) (changed bool) {
	for _, key := range sortedKeys(want) {
		it := want[key]
		if registered[key] == it.hash {
			continue
		}
		if err := add(it); err != nil {
			continue
		}
		registered[key] = it.hash
		changed = true
	}
	var gone []string
	for key := range registered {
		if _, ok := want[key]; !ok {
			gone = append(gone, key)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
		for _, key := range gone {
			delete(registered, key)
		}
		changed = true
	}
	return changed
}

// registerFeatures brings prompts, resources and templates of p's server in
// line with v, and reports whether it changed any.
func (a *Aggregator) registerFeatures(p *profile, v *view) bool {
	logFail := func(kind, key string, err error) {
		a.log.Error(kind+" not exposed", "key", key, "error", err)
	}
	prompts := syncItems(p.prompts, v.prompts, func(it *Item[*mcp.Prompt]) error {
		return guard(func() { p.server.AddPrompt(it.Def, a.promptHandler(it)) }, func(err error) { logFail("prompt", it.Key, err) })
	}, p.server.RemovePrompts)
	resources := syncItems(p.resources, v.resources, func(it *Item[*mcp.Resource]) error {
		return guard(func() { p.server.AddResource(it.Def, a.resourceHandler(it.Server, it.Orig, it.Key)) }, func(err error) { logFail("resource", it.Key, err) })
	}, p.server.RemoveResources)
	templates := syncItems(p.templates, v.templates, func(it *Item[*mcp.ResourceTemplate]) error {
		return guard(func() { p.server.AddResourceTemplate(it.Def, a.templateHandler(it)) }, func(err error) { logFail("resource template", it.Key, err) })
	}, p.server.RemoveResourceTemplates)
	return prompts || resources || templates
}

// guard runs f, turning a panic of the SDK on an invalid definition into an
// error: a strange downstream definition must not take mcpmux down.
func guard(f func(), onErr func(error)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid definition: %v", r)
			onErr(err)
		}
	}()
	f()
	return nil
}

// mapRPCError maps the server's name (or URI) of an item in a server's
// JSON-RPC error back to the exposed one.
func mapRPCError(err error, orig, exposed string) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return &jsonrpc.Error{Code: rpc.Code, Message: mapNames(rpc.Message, orig, exposed), Data: rpc.Data}
	}
	return err
}

// rpcError turns an upstream failure into the JSON-RPC error a client
// gets for a prompt, resource or completion request: a server's own
// JSON-RPC error is passed through.
func rpcError(what string, server string, err error) error {
	var rpc *upstream.RPCError
	if errors.As(err, &rpc) {
		return &jsonrpc.Error{Code: rpc.Code, Message: rpc.Message, Data: rpc.Data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s on server %q failed: %v", what, server, err)}
}

func (a *Aggregator) server(name string) (*upstream.Server, error) {
	srv := a.pool.Get(name)
	if srv == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("server %q is no longer configured", name)}
	}
	return srv, nil
}

func (a *Aggregator) promptHandler(it *Item[*mcp.Prompt]) mcp.PromptHandler {
	return a.getPrompt(it.Server, it.Orig, it.Key)
}

// getPrompt gets the prompt the server knows as name and the client as
// exposed.
func (a *Aggregator) getPrompt(server, name, exposed string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		srv, err := a.server(server)
		if err != nil {
			return nil, err
		}
		runID := a.runIDOf(req.Params.Meta, req.Extra)
		res, err := srv.GetPrompt(ctx, a.request(ctx, srv, req.Session, runID), &mcp.GetPromptParams{
			Name: name, Arguments: req.Params.Arguments, Meta: tracing.Inject(ctx, forwardMeta(req.Params.Meta, runID)),
		})
		if err != nil {
			return nil, mapRPCError(rpcError("getting prompt "+name, server, err), name, exposed)
		}
		return res, nil
	}
}

// resourceHandler reads the one resource whose URI the server knows as orig.
func (a *Aggregator) resourceHandler(server, orig, exposed string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return a.readResource(ctx, req, server, orig, exposed)
	}
}

// templateHandler reads resources matching a template: the URI read is the
// client's with the mcpmux:// prefix, if any, taken off.
func (a *Aggregator) templateHandler(it *Item[*mcp.ResourceTemplate]) mcp.ResourceHandler {
	server, prefixed := it.Server, it.Key != it.Orig
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		orig := uri
		if prefixed {
			orig = strings.TrimPrefix(uri, URIPrefix+server+"/")
		}
		return a.readResource(ctx, req, server, orig, uri)
	}
}

func (a *Aggregator) readResource(ctx context.Context, req *mcp.ReadResourceRequest, server, orig, exposed string) (*mcp.ReadResourceResult, error) {
	srv, err := a.server(server)
	if err != nil {
		return nil, err
	}
	runID := a.runIDOf(req.Params.Meta, req.Extra)
	res, err := srv.ReadResource(ctx, a.request(ctx, srv, req.Session, runID), &mcp.ReadResourceParams{URI: orig, Meta: tracing.Inject(ctx, forwardMeta(req.Params.Meta, runID))})
	if err != nil {
		return nil, mapRPCError(rpcError("reading "+orig, server, err), orig, exposed)
	}
	// The go-sdk fills in the default for results it sends itself; for
	// this one (unlistedMiddleware's, which the SDK's own read never sees)
	// mcpmux does: an absent cacheScope means "public", never "".
	if res.CacheScope == "" {
		res.CacheScope = "public"
	}
	if orig != exposed {
		for _, c := range res.Contents {
			if c != nil && c.URI == orig {
				c.URI = exposed
			}
		}
	}
	return res, nil
}

// subscriptions counts clients subscribed to each resource of a server
// connection, so that the server sees one subscription per resource and
// connection, and its unsubscribe only when the last client leaves.
type subscriptions struct {
	mu sync.Mutex
	n  map[string]int
}

func subKey(server string, client upstream.ClientID, uri string) string {
	return server + "\x00" + string(client) + "\x00" + uri
}

// subscribe is the profile's SubscribeHandler; nil when stateless, so
// that the SDK neither advertises subscriptions nor accepts one whose
// updates could never reach the client.
func (a *Aggregator) subscribe(p *profile) func(context.Context, *mcp.SubscribeRequest) error {
	if a.stateless {
		return nil
	}
	return func(ctx context.Context, req *mcp.SubscribeRequest) error {
		route, ok := routeURI(p.view.Load(), req.Params.URI, true)
		if !ok {
			return mcp.ResourceNotFoundError(req.Params.URI)
		}
		server, orig := route.server, route.orig
		srv, err := a.server(server)
		if err != nil {
			return err
		}
		if !srv.Features().Subscribe {
			return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("server %q does not support resource subscriptions", server)}
		}
		r := a.request(ctx, srv, req.Session, "")
		key := subKey(server, r.Client, orig)
		a.subs.mu.Lock()
		defer a.subs.mu.Unlock()
		if a.subs.n[key] == 0 {
			if err := srv.Subscribe(ctx, r, orig); err != nil {
				return mapRPCError(rpcError("subscribing to "+orig, server, err), orig, req.Params.URI)
			}
		}
		a.subs.n[key]++
		return nil
	}
}

func (a *Aggregator) unsubscribe(p *profile) func(context.Context, *mcp.UnsubscribeRequest) error {
	if a.stateless {
		return nil
	}
	return func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
		route, ok := routeURI(p.view.Load(), req.Params.URI, true)
		if !ok {
			return nil
		}
		server, orig := route.server, route.orig
		srv, err := a.server(server)
		if err != nil {
			return nil
		}
		r := a.request(ctx, srv, req.Session, "")
		key := subKey(server, r.Client, orig)
		a.subs.mu.Lock()
		defer a.subs.mu.Unlock()
		if a.subs.n[key] == 0 {
			return nil
		}
		a.subs.n[key]--
		if a.subs.n[key] == 0 {
			delete(a.subs.n, key)
			if err := srv.Unsubscribe(ctx, r, orig); err != nil {
				return mapRPCError(rpcError("unsubscribing from "+orig, server, err), orig, req.Params.URI)
			}
		}
		return nil
	}
}

// ResourceUpdated passes a server's notifications/resources/updated to the
// clients subscribed to that resource, under its exposed URI.
func (a *Aggregator) ResourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams) {
	a.mu.Lock()
	profiles := make([]*profile, 0, len(a.profiles))
	for _, pr := range a.profiles {
		profiles = append(profiles, pr)
	}
	a.mu.Unlock()
	for _, pr := range profiles {
		v := pr.view.Load()
		if !v.hasServer(server) {
			continue
		}
		uri := p.URI
		for _, it := range v.resources {
			if it.Server == server && it.Orig == p.URI {
				uri = it.Key
			}
		}
		if uri == p.URI {
			for _, it := range v.templates {
				if it.Server == server && it.Key != it.Orig {
					uri = ExposedURI(server, p.URI, true)
					break
				}
			}
		}
		_ = pr.server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{Meta: p.Meta, URI: uri})
	}
}

// BroadcastLog sends a server-wide log message (one sent while none of its
// clients' requests ran) to every client session that can see the server.
//
//lint:ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where it is not, and passes the servers' log messages to its clients.
func (a *Aggregator) BroadcastLog(server string, p *mcp.LoggingMessageParams) {
	a.mu.Lock()
	profiles := make([]*profile, 0, len(a.profiles))
	for _, pr := range a.profiles {
		profiles = append(profiles, pr)
	}
	a.mu.Unlock()
	for _, pr := range profiles {
		if !pr.view.Load().hasServer(server) {
			continue
		}
		for ss := range pr.server.Sessions() {
			//lint:ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where it is not, and passes the servers' log messages to its clients.
			_ = ss.Log(context.Background(), p)
		}
	}
}

// completeMiddleware routes completion/complete to the server of the
// prompt or resource template it refers to, and answers with the server's
// result as it sent it (its "hasMore": false too, which the go-sdk's types
// drop).
func (a *Aggregator) completeMiddleware(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CompleteRequest); ok && r.Params != nil {
				return a.complete(ctx, p, r)
			}
			return next(ctx, method, req)
		}
	}
}

func (a *Aggregator) complete(ctx context.Context, p *profile, req *mcp.CompleteRequest) (mcp.Result, error) {
	v := p.view.Load()
	ref := req.Params.Ref
	if ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing ref"}
	}
	fwd := *ref
	var server string
	switch ref.Type {
	case "ref/prompt":
		if it := v.prompts[ref.Name]; it != nil {
			server, fwd.Name = it.Server, it.Orig
		} else if s, orig, ok := routePrompt(v, ref.Name); ok {
			// Unlisted: its server answers, as it would directly.
			server, fwd.Name = s, orig
		} else {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
	case "ref/resource":
		if it := v.templates[ref.URI]; it != nil {
			server, fwd.URI = it.Server, it.Orig
		} else if route, ok := routeURI(v, ref.URI, false); ok {
			server, fwd.URI = route.server, route.orig
		} else {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource %q", ref.URI)}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %q", ref.Type)}
	}
	srv, err := a.server(server)
	if err != nil {
		return nil, err
	}
	if !srv.Features().Completions {
		// Nothing to offer is an answer, not an error (as for a server
		// without completion support that is asked directly).
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	params := *req.Params
	params.Ref = &fwd
	params.Meta = tracing.Inject(ctx, forwardMeta(req.Params.Meta, ""))
	raw, err := srv.Complete(ctx, a.request(ctx, srv, req.Session, ""), &params)
	if err != nil {
		return nil, rpcError("completion", server, err)
	}
	return &rawResult{raw: raw}, nil
}
