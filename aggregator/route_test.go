package aggregator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// routedServer lists one resource, accepts subscriptions to any URI when
// subscribe is set (recording them), and reads any URI under its scheme.
func routedServer(name, listed string, subscribe bool, subs *recorded) *mcp.Server {
	opts := &mcp.ServerOptions{}
	if subscribe {
		opts.SubscribeHandler = func(_ context.Context, req *mcp.SubscribeRequest) error {
			subs.add(name + " subscribe " + req.Params.URI)
			return nil
		}
		opts.UnsubscribeHandler = func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			subs.add(name + " unsubscribe " + req.Params.URI)
			return nil
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, opts)
	s.AddResource(&mcp.Resource{URI: listed, Name: "listed"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: name}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	// It also serves URIs it does not list (those ending in "unlisted"),
	// and has errors of its own wording for what it does not have.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch r := req.(type) {
			case *mcp.ReadResourceRequest:
				if strings.HasSuffix(r.Params.URI, "unlisted") {
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: name}}}, nil
				}
				if r.Params.URI != listed {
					return nil, &jsonrpc.Error{Code: -32002, Message: "no resource " + r.Params.URI + " on " + name, Data: []byte(`{"uri":"` + r.Params.URI + `"}`)}
				}
			case *mcp.GetPromptRequest:
				if r.Params.Name != "hello" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Prompt " + r.Params.Name + " not found on " + name}
				}
			}
			return next(ctx, method, req)
		}
	})
	return s
}

type recorded struct {
	mu  sync.Mutex
	got []string
}

func (r *recorded) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, s)
}

func (r *recorded) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func TestSubscribeToUnlistedURIs(t *testing.T) {
	subs := &recorded{}
	h := newHarness(t, map[string]*mcp.Server{
		"files": routedServer("files", "file:///data/a.txt", true, subs),
		"notes": routedServer("notes", "notes://inbox/1", true, subs),
	}, "", pinned2025("files", "notes")) // resources/unsubscribe: MCP 2026-07-28 ends a subscription's stream instead
	cs := h.clientVersion(DefaultProfile, "2025-11-25") // resources/subscribe is gone from 2026-07-28 on
	ctx := context.Background()
	// By scheme and prefix of the URIs each server lists.
	for _, uri := range []string{"file:///data/later.txt", "notes://inbox/2"} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Errorf("subscribe %s: %v", uri, err)
		}
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Errorf("unsubscribe %s: %v", uri, err)
		}
	}
	want := []string{"files subscribe file:///data/later.txt", "files unsubscribe file:///data/later.txt", "notes subscribe notes://inbox/2", "notes unsubscribe notes://inbox/2"}
	if got := subs.list(); !slices.Equal(got, want) {
		t.Errorf("the servers got %v, want %v", got, want)
	}
	// A URI of no server's scheme, with two servers taking subscriptions:
	// nowhere to send it.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched"}); err == nil {
		t.Error("a URI that belongs to no server was accepted")
	}
}

func TestSubscribeGoesToTheOnlyServerThatTakesSubscriptions(t *testing.T) {
	subs := &recorded{}
	h := newHarness(t, map[string]*mcp.Server{
		"docs":  routedServer("docs", "demo://resource/1", true, subs),
		"plain": routedServer("plain", "plain://x", false, subs),
	}, "", nil)
	cs := h.clientVersion(DefaultProfile, "2025-11-25")
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	// docs speaks MCP 2026-07-28 with mcpmux: the go-sdk client subscribes
	// by opening a subscriptions/listen stream it does not wait on, so the
	// server sees the subscription a moment after Subscribe returned.
	want := []string{"docs subscribe test://watched-resource"}
	testkit.Await(t, fmt.Sprintf("the servers got %v", want), subs.list, func(got []string) bool { return slices.Equal(got, want) })
}

func TestUnlistedReadsAndPromptsGetTheServersOwnError(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"files": routedServer("files", "file:///data/a.txt", false, nil),
		"notes": routedServer("notes", "notes://inbox/1", false, nil),
	}, "", nil)
	cs := h.client(DefaultProfile)
	ctx := context.Background()

	// An unlisted URI the server serves is read from it.
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://inbox/unlisted"})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "notes" {
		t.Errorf("reading an unlisted notes:// URI: %v, %v; want the notes server's answer", res, err)
	}

	// What the server says about a resource it does not have.
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://inbox/missing"})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		t.Fatalf("missing resource: %v, want the server's JSON-RPC error", err)
	}
	direct := directError(t, routedServer("notes", "notes://inbox/1", false, nil), func(cs *mcp.ClientSession) error {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://inbox/missing"})
		return err
	})
	if rpc.Code != direct.Code || rpc.Message != direct.Message || string(rpc.Data) != string(direct.Data) {
		t.Errorf("missing resource: error %d %q %s, want the server's %d %q %s", rpc.Code, rpc.Message, rpc.Data, direct.Code, direct.Message, direct.Data)
	}

	// What the server says about a prompt it does not have, under the
	// exposed name.
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "notes__nope"})
	if !errors.As(err, &rpc) {
		t.Fatalf("unknown prompt: %v, want the server's JSON-RPC error", err)
	}
	direct = directError(t, routedServer("notes", "notes://inbox/1", false, nil), func(cs *mcp.ClientSession) error {
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "nope"})
		return err
	})
	if want := mapNames(direct.Message, "nope", "notes__nope"); rpc.Code != direct.Code || rpc.Message != want {
		t.Errorf("unknown prompt: error %d %q, want the server's %d %q", rpc.Code, rpc.Message, direct.Code, want)
	}
}

// directError is the JSON-RPC error a client connected to s directly gets
// from do.
func directError(t *testing.T, s *mcp.Server, do func(*mcp.ClientSession) error) *jsonrpc.Error {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var rpc *jsonrpc.Error
	if err := do(cs); !errors.As(err, &rpc) {
		t.Fatalf("direct: %v, want a JSON-RPC error", err)
	}
	return rpc
}

func TestMapNames(t *testing.T) {
	for _, tc := range []struct{ msg, orig, exposed, want string }{
		{`unknown prompt "nope"`, "nope", "x__nope", `unknown prompt "x__nope"`},
		{"Prompt nope not found (nope)", "nope", "x__nope", "Prompt x__nope not found (x__nope)"},
		{"Prompt nopes not found", "nope", "x__nope", "Prompt nopes not found"},
		{"a_nope b", "nope", "x__nope", "a_nope b"},
		{"same", "same", "same", "same"},
	} {
		if got := mapNames(tc.msg, tc.orig, tc.exposed); got != tc.want {
			t.Errorf("mapNames(%q, %q, %q) = %q, want %q", tc.msg, tc.orig, tc.exposed, got, tc.want)
		}
	}
}

// A name whose server part is a server that lists no tools because it is
// not running is answered with why and what to do, not "Unknown tool";
// other unknown names still get "Unknown tool".
func TestCallOfAServerThatIsNotRunning(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"alpha":  fixtureServer("alpha", map[string]mcp.ToolHandler{"echo": echo("")}),
		"broken": nil, // its start fails
	}, "", nil)
	cs := h.client(DefaultProfile)
	res := call(t, cs, "broken__anything", nil)
	if got := text(res); !res.IsError || !strings.Contains(got, "server 'broken' lists no tools because the server is not running (") || !strings.Contains(got, "mcpmux restarts it automatically") {
		t.Errorf("a call of a server that is not running: %q", got)
	}
	for _, name := range []string{"alpha__nope", "nosuch__anything"} {
		if got := text(call(t, cs, name, nil)); !strings.HasPrefix(got, "Unknown tool") {
			t.Errorf("%s: %q, want Unknown tool", name, got)
		}
	}
}

// A call naming a server that is not running, with a tool that other
// servers have, is told that server is not running: neither called
// ambiguous between the others nor auto-corrected to one of them.
func TestCallOfAServerThatIsNotRunningNotAmbiguous(t *testing.T) {
	for _, servers := range [][]string{{"alpha", "beta"}, {"alpha"}} {
		fixtures := map[string]*mcp.Server{"broken": nil}
		for _, name := range servers {
			fixtures[name] = fixtureServer(name, map[string]mcp.ToolHandler{"echo": echo("")})
		}
		h := newHarness(t, fixtures, "", nil)
		res := call(t, h.client(DefaultProfile), "broken__echo", map[string]any{"text": "x"})
		if got := text(res); !res.IsError || !strings.Contains(got, "server 'broken' lists no tools because the server is not running (") {
			t.Errorf("with %v up: a call of broken__echo: %q", servers, got)
		}
	}
}
