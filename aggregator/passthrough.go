package aggregator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/tracing"
	"github.com/mcpmux/mcpmux/upstream"
)

// passThrough passes a client's prompts, resources, resource templates,
// completions and subscriptions to the server they belong to, and a
// server's resource updates and server-wide log messages to the clients
// that see that server: everything but tools, whose pipeline is in
// pipeline.go. It is apart from Aggregator because none of it builds the
// catalog, runs a tool call or keeps a client's state: it gets from New
// the little it needs, as fields, so that what it depends on is all in
// sight here.
type passThrough struct {
	pool      *upstream.Pool
	log       *slog.Logger
	stateless bool // see Options.Stateless: no subscriptions, whose updates could not reach a client
	// runIDOf and request are the aggregator's (request.go): the run a
	// client's request belongs to, and the upstream request made for it,
	// as the tool path makes it.
	runIDOf func(mcp.Meta, *mcp.RequestExtra) string
	request func(context.Context, *upstream.Server, *mcp.ServerSession, string) upstream.Request
	// profiles are the profiles of the moment, whose clients get what a
	// server sends outside any request.
	profiles func() []*profile
	subs     subscriptions
}

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

// register brings prompts, resources and templates of p's server in line
// with v, and reports whether it changed any.
func (pt *passThrough) register(p *profile, v *view) bool {
	add := func(kind, key string, register func()) error {
		err := addDefinition(register)
		if err != nil {
			pt.log.Error(kind+" not exposed", "key", key, "error", err)
		}
		return err
	}
	prompts := syncItems(p.prompts, v.prompts, func(it *Item[*mcp.Prompt]) error {
		return add("prompt", it.Key, func() { p.server.AddPrompt(it.Def, pt.promptHandler(it)) })
	}, p.server.RemovePrompts)
	resources := syncItems(p.resources, v.resources, func(it *Item[*mcp.Resource]) error {
		return add("resource", it.Key, func() { p.server.AddResource(it.Def, pt.resourceHandler(it.Server, it.Orig, it.Key)) })
	}, p.server.RemoveResources)
	templates := syncItems(p.templates, v.templates, func(it *Item[*mcp.ResourceTemplate]) error {
		return add("resource template", it.Key, func() { p.server.AddResourceTemplate(it.Def, pt.templateHandler(it)) })
	}, p.server.RemoveResourceTemplates)
	return prompts || resources || templates
}

// addDefinition runs register, which gives the SDK a definition, and turns
// the SDK's panic on a definition it does not accept into an error: a
// strange downstream definition must not take mcpmux down.
func addDefinition(register func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid definition: %v", r)
		}
	}()
	register()
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

// server is the server of that name, or the error a client gets when a
// reload removed it since its item was routed.
func (pt *passThrough) server(name string) (*upstream.Server, error) {
	srv := pt.pool.Get(name)
	if srv == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("server %q is no longer configured", name)}
	}
	return srv, nil
}

func (pt *passThrough) promptHandler(it *Item[*mcp.Prompt]) mcp.PromptHandler {
	return pt.getPrompt(it.Server, it.Orig, it.Key)
}

// getPrompt gets the prompt the server knows as name and the client as
// exposed.
func (pt *passThrough) getPrompt(server, name, exposed string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		srv, err := pt.server(server)
		if err != nil {
			return nil, err
		}
		runID := pt.runIDOf(req.Params.Meta, req.Extra)
		res, err := srv.GetPrompt(ctx, pt.request(ctx, srv, req.Session, runID), &mcp.GetPromptParams{
			Name: name, Arguments: req.Params.Arguments, Meta: tracing.Inject(ctx, forwardMeta(req.Params.Meta, runID)),
		})
		if err != nil {
			return nil, mapRPCError(rpcError("getting prompt "+name, server, err), name, exposed)
		}
		return res, nil
	}
}

// resourceHandler reads the one resource whose URI the server knows as orig.
func (pt *passThrough) resourceHandler(server, orig, exposed string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return pt.readResource(ctx, req, server, orig, exposed)
	}
}

// templateHandler reads resources matching a template: the URI read is the
// client's with the mcpmux:// prefix, if any, taken off.
func (pt *passThrough) templateHandler(it *Item[*mcp.ResourceTemplate]) mcp.ResourceHandler {
	server, prefixed := it.Server, it.Key != it.Orig
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		orig := uri
		if prefixed {
			orig = strings.TrimPrefix(uri, URIPrefix+server+"/")
		}
		return pt.readResource(ctx, req, server, orig, uri)
	}
}

func (pt *passThrough) readResource(ctx context.Context, req *mcp.ReadResourceRequest, server, orig, exposed string) (*mcp.ReadResourceResult, error) {
	srv, err := pt.server(server)
	if err != nil {
		return nil, err
	}
	runID := pt.runIDOf(req.Params.Meta, req.Extra)
	res, err := srv.ReadResource(ctx, pt.request(ctx, srv, req.Session, runID), &mcp.ReadResourceParams{URI: orig, Meta: tracing.Inject(ctx, forwardMeta(req.Params.Meta, runID))})
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

// unlistedMiddleware sends resources/read of a URI no server listed (nor
// any template matches) and prompts/get of an unknown prompt to the server
// they belong to (routeURI, routePrompt), which the SDK would answer itself
// with an error of its own; the server's answer, or its error with the
// names mapped back, is what the client gets.
func (pt *passThrough) unlistedMiddleware(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch r := req.(type) {
			case *mcp.ReadResourceRequest:
				v := p.view.Load()
				if r.Params == nil || v.resources[r.Params.URI] != nil {
					break
				}
				if _, ok := v.matchTemplate(r.Params.URI); ok {
					break
				}
				if route, ok := routeURI(v, r.Params.URI, false); ok {
					return pt.readResource(ctx, r, route.server, route.orig, r.Params.URI)
				}
			case *mcp.GetPromptRequest:
				v := p.view.Load()
				if r.Params == nil || v.prompts[r.Params.Name] != nil {
					break
				}
				if server, orig, ok := routePrompt(v, r.Params.Name); ok {
					return pt.getPrompt(server, orig, r.Params.Name)(ctx, r)
				}
			}
			return next(ctx, method, req)
		}
	}
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
func (pt *passThrough) subscribe(p *profile) func(context.Context, *mcp.SubscribeRequest) error {
	if pt.stateless {
		return nil
	}
	return func(ctx context.Context, req *mcp.SubscribeRequest) error {
		route, ok := routeURI(p.view.Load(), req.Params.URI, true)
		if !ok {
			return mcp.ResourceNotFoundError(req.Params.URI)
		}
		server, orig := route.server, route.orig
		srv, err := pt.server(server)
		if err != nil {
			return err
		}
		if !srv.Features().Subscribe {
			return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("server %q does not support resource subscriptions", server)}
		}
		r := pt.request(ctx, srv, req.Session, "")
		key := subKey(server, r.Client, orig)
		pt.subs.mu.Lock()
		defer pt.subs.mu.Unlock()
		if pt.subs.n[key] == 0 {
			if err := srv.Subscribe(ctx, r, orig); err != nil {
				return mapRPCError(rpcError("subscribing to "+orig, server, err), orig, req.Params.URI)
			}
		}
		pt.subs.n[key]++
		return nil
	}
}

func (pt *passThrough) unsubscribe(p *profile) func(context.Context, *mcp.UnsubscribeRequest) error {
	if pt.stateless {
		return nil
	}
	return func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
		route, ok := routeURI(p.view.Load(), req.Params.URI, true)
		if !ok {
			return nil
		}
		server, orig := route.server, route.orig
		srv, err := pt.server(server)
		if err != nil {
			return nil
		}
		r := pt.request(ctx, srv, req.Session, "")
		key := subKey(server, r.Client, orig)
		pt.subs.mu.Lock()
		defer pt.subs.mu.Unlock()
		if pt.subs.n[key] == 0 {
			return nil
		}
		pt.subs.n[key]--
		if pt.subs.n[key] == 0 {
			delete(pt.subs.n, key)
			if err := srv.Unsubscribe(ctx, r, orig); err != nil {
				return mapRPCError(rpcError("unsubscribing from "+orig, server, err), orig, req.Params.URI)
			}
		}
		return nil
	}
}

// resourceUpdated passes a server's notifications/resources/updated to the
// clients subscribed to that resource, under its exposed URI.
func (pt *passThrough) resourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams) {
	for _, pr := range pt.profiles() {
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

// broadcastLog sends a server-wide log message (one sent while none of its
// clients' requests ran) to every client session that can see the server.
//
//lint:ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where it is not, and passes the servers' log messages to its clients.
func (pt *passThrough) broadcastLog(server string, p *mcp.LoggingMessageParams) {
	for _, pr := range pt.profiles() {
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
func (pt *passThrough) completeMiddleware(p *profile) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CompleteRequest); ok && r.Params != nil {
				return pt.complete(ctx, p, r)
			}
			return next(ctx, method, req)
		}
	}
}

func (pt *passThrough) complete(ctx context.Context, p *profile, req *mcp.CompleteRequest) (mcp.Result, error) {
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
	srv, err := pt.server(server)
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
	raw, err := srv.Complete(ctx, pt.request(ctx, srv, req.Session, ""), &params)
	if err != nil {
		return nil, rpcError("completion", server, err)
	}
	return &rawResult{raw: raw}, nil
}
