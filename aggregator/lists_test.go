package aggregator

//lint:file-ignore SA1019 the tests check that sampling, roots and logging of MCP 2025-11-25, which mcpmux forwards, pass through.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// unsortedServer lists its tools, prompts, resources and templates in the
// order given (the go-sdk would sort them by name), and, like
// server-everything, lists "sample" only to a client that declared
// sampling and "roots" only to one with roots. Its tool "caps" answers
// with the capabilities the calling session declared.
func unsortedServer(name string, tools ...string) *mcp.Server {
	// One page: the order is set per page below.
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{PageSize: 1 << 20})
	for _, tn := range append(slices.Clone(tools), "sample", "roots", "caps") {
		s.AddTool(&mcp.Tool{Name: tn, InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			caps := req.ClientCapabilities() // per request in MCP 2026-07-28, the session's before
			b, _ := json.Marshal(struct {
				Roots       *mcp.RootCapabilities        `json:"roots,omitempty"`
				Sampling    *mcp.SamplingCapabilities    `json:"sampling,omitempty"`
				Elicitation *mcp.ElicitationCapabilities `json:"elicitation,omitempty"`
			}{caps.RootsV2, caps.Sampling, caps.Elicitation})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	}
	prompts := []string{"zeta", "alpha", "mid"}
	for _, pn := range prompts {
		s.AddPrompt(&mcp.Prompt{Name: pn}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	}
	resources := []string{"x://" + name + "/z", "x://" + name + "/a"}
	for _, uri := range resources {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	}
	templates := []string{"x://" + name + "/t/{z}", "x://" + name + "/t/{a}/b"}
	for _, uri := range templates {
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			switch r := res.(type) {
			case *mcp.ListToolsResult:
				caps := req.(*mcp.ListToolsRequest).ClientCapabilities()
				r.Tools = inOrder(r.Tools, append(slices.Clone(tools), "sample", "roots", "caps"), func(t *mcp.Tool) string { return t.Name })
				r.Tools = slices.DeleteFunc(r.Tools, func(t *mcp.Tool) bool {
					return (t.Name == "sample" && caps.Sampling == nil) || (t.Name == "roots" && caps.RootsV2 == nil)
				})
			case *mcp.ListPromptsResult:
				r.Prompts = inOrder(r.Prompts, prompts, func(p *mcp.Prompt) string { return p.Name })
			case *mcp.ListResourcesResult:
				r.Resources = inOrder(r.Resources, resources, func(r *mcp.Resource) string { return r.URI })
			case *mcp.ListResourceTemplatesResult:
				r.ResourceTemplates = inOrder(r.ResourceTemplates, templates, func(t *mcp.ResourceTemplate) string { return t.URITemplate })
			}
			return res, nil
		}
	})
	return s
}

// inOrder sorts items by the position of their key in order.
func inOrder[T any](items []T, order []string, key func(T) string) []T {
	slices.SortFunc(items, func(a, b T) int { return slices.Index(order, key(a)) - slices.Index(order, key(b)) })
	return items
}

// clientWith connects a client with the given options to a profile.
func (h *harness) clientWith(profile string, opts *mcp.ClientOptions) *mcp.ClientSession {
	h.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := h.agg.Server(profile).Connect(context.Background(), st, nil); err != nil {
		h.t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(context.Background(), ct, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

// fullClient declares every capability mcpmux forwards.
func fullClient() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{
			RootsV2:     &mcp.RootCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}
}

// bareClient declares no capability at all.
func bareClient() *mcp.ClientOptions {
	return &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
}

func listAll[T any](t *testing.T, seq func(context.Context) func(func(T, error) bool), key func(T) string) []string {
	t.Helper()
	var out []string
	for it, err := range seq(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, key(it))
	}
	return out
}

func TestListsKeepServerOrder(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"b": unsortedServer("b", "zulu", "alpha"),
		"a": unsortedServer("a", "mike", "bravo"),
	}, "", nil)
	cs := h.clientWith(DefaultProfile, fullClient())
	tools := listAll(t, func(ctx context.Context) func(func(*mcp.Tool, error) bool) { return cs.Tools(ctx, nil) }, func(t *mcp.Tool) string { return t.Name })
	want := []string{"a__mike", "a__bravo", "a__sample", "a__roots", "a__caps", "b__zulu", "b__alpha", "b__sample", "b__roots", "b__caps"}
	if !slices.Equal(tools, want) {
		t.Errorf("tools/list = %v\nwant (servers in config order, each in its own order) %v", tools, want)
	}
	prompts := listAll(t, func(ctx context.Context) func(func(*mcp.Prompt, error) bool) { return cs.Prompts(ctx, nil) }, func(p *mcp.Prompt) string { return p.Name })
	if want := []string{"a__zeta", "a__alpha", "a__mid", "b__zeta", "b__alpha", "b__mid"}; !slices.Equal(prompts, want) {
		t.Errorf("prompts/list = %v, want %v", prompts, want)
	}
	resources := listAll(t, func(ctx context.Context) func(func(*mcp.Resource, error) bool) { return cs.Resources(ctx, nil) }, func(r *mcp.Resource) string { return r.URI })
	if want := []string{"x://a/z", "x://a/a", "x://b/z", "x://b/a"}; !slices.Equal(resources, want) {
		t.Errorf("resources/list = %v, want %v", resources, want)
	}
	templates := listAll(t, func(ctx context.Context) func(func(*mcp.ResourceTemplate, error) bool) {
		return cs.ResourceTemplates(ctx, nil)
	}, func(r *mcp.ResourceTemplate) string { return r.URITemplate })
	if want := []string{"x://a/t/{z}", "x://a/t/{a}/b", "x://b/t/{z}", "x://b/t/{a}/b"}; !slices.Equal(templates, want) {
		t.Errorf("resources/templates/list = %v, want %v", templates, want)
	}
}

func TestListPagesFollowOrder(t *testing.T) {
	names := make([]string, listPageSize+5)
	for i := range names {
		names[i] = fmt.Sprintf("t%04d", len(names)-i) // descending: not the sorted order
	}
	h := newHarness(t, map[string]*mcp.Server{"s": unsortedServer("s", names...)}, "", nil)
	cs := h.clientWith(DefaultProfile, fullClient())
	first, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Tools) != listPageSize || first.NextCursor == "" {
		t.Fatalf("first page: %d tools, cursor %q; want %d and a cursor", len(first.Tools), first.NextCursor, listPageSize)
	}
	second, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: first.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range append(first.Tools, second.Tools...) {
		got = append(got, tl.Name)
	}
	var want []string
	for _, n := range append(names, "sample", "roots", "caps") {
		want = append(want, "s__"+n)
	}
	if !slices.Equal(got, want) || second.NextCursor != "" {
		t.Errorf("pages = %d+%d tools (next %q), not the server's order", len(first.Tools), len(second.Tools), second.NextCursor)
	}
	if _, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: "not a cursor!"}); err == nil {
		t.Error("a malformed cursor was accepted")
	}
}

func TestToolListFollowsClientCapabilities(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"shared": unsortedServer("shared", "echo"),
		"own":    unsortedServer("own", "echo"),
	}, "", map[string]string{"own": "session: per-client"})

	full := h.clientWith(DefaultProfile, fullClient())
	if got, want := toolNames(t, full), []string{"own__echo", "own__sample", "own__roots", "own__caps", "shared__echo", "shared__sample", "shared__roots", "shared__caps"}; !slices.Equal(got, want) {
		t.Errorf("client with every capability: tools = %v, want %v", got, want)
	}
	bare := h.clientWith(DefaultProfile, bareClient())
	if got, want := toolNames(t, bare), []string{"own__echo", "own__caps", "shared__echo", "shared__caps"}; !slices.Equal(got, want) {
		t.Errorf("client without capabilities: tools = %v, want %v (no tool that needs sampling or roots)", got, want)
	}
	rootsOnly := h.client(DefaultProfile) // the go-sdk's default: roots
	if got, want := toolNames(t, rootsOnly), []string{"own__echo", "own__roots", "own__caps", "shared__echo", "shared__roots", "shared__caps"}; !slices.Equal(got, want) {
		t.Errorf("client with roots only: tools = %v, want %v", got, want)
	}

	// A per-client connection declares exactly its client's capabilities;
	// so does each request on a shared one of MCP 2026-07-28 (on 2025-11-25
	// the shared one declares everything mcpmux forwards).
	for _, tc := range []struct {
		cs         *mcp.ClientSession
		tool, want string
	}{
		{bare, "own__caps", `{}`},
		{rootsOnly, "own__caps", `{"roots":{}}`},
		{full, "own__caps", `{"roots":{},"sampling":{},"elicitation":{"form":{},"url":{}}}`},
		{bare, "shared__caps", `{}`},
		{full, "shared__caps", `{"roots":{},"sampling":{},"elicitation":{"form":{},"url":{}}}`},
	} {
		if got := text(call(t, tc.cs, tc.tool, nil)); got != tc.want {
			t.Errorf("%s: the server saw capabilities %s, want %s", tc.tool, got, tc.want)
		}
	}
}

func TestFindToolsFollowsClientCapabilities(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{"s": unsortedServer("s", "echo")}, "meta_tools: [find_tools]", nil)
	for _, tc := range []struct {
		opts *mcp.ClientOptions
		want bool
	}{{fullClient(), true}, {bareClient(), false}} {
		res := call(t, h.clientWith(DefaultProfile, tc.opts), "mcpmux__find_tools", map[string]any{"query": "sample"})
		if got := strings.Contains(text(res), "s__sample"); got != tc.want {
			t.Errorf("find_tools for a client that declares sampling=%v: found s__sample %v, want %v:\n%s", tc.want, got, tc.want, text(res))
		}
	}
}

// What a server lists to a client with fewer capabilities is asked when
// such a client initializes, before its first tools/list, and not before
// any client comes: a 2025-11-25 server gets a probe session declaring
// the client's capabilities as soon as a client with roots only has
// initialized, and none before. (A 2026-07-28 client declares its
// capabilities with each request: the first tools/list asks.)
func TestProbeStartsWhenAClientComes(t *testing.T) {
	srv := unsortedServer("s", "echo")
	inits := make(chan string, 8)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok {
				b, _ := json.Marshal(p.Capabilities)
				inits <- string(b)
			}
			return next(ctx, method, req)
		}
	})
	h := newHarness(t, map[string]*mcp.Server{"s": srv}, "", map[string]string{"s": "protocol: 2025-11-25"})
	if shared := <-inits; !strings.Contains(shared, `"sampling"`) {
		t.Fatalf("the shared connection declared %s", shared)
	}
	select {
	case caps := <-inits:
		t.Fatalf("a session declaring %s was opened before any client came", caps)
	default:
	}
	h.clientVersion(DefaultProfile, "2025-11-25") // the go-sdk's default capabilities: roots; lists nothing
	select {
	case caps := <-inits:
		if caps != `{"roots":{}}` {
			t.Errorf("the probe session declared %s, want the client's roots only", caps)
		}
	case <-time.After(time.Minute):
		t.Fatal("no probe session was opened for the client that came")
	}
}

// sessionResourceServer has a tool "make" that makes a resource for the
// calling session alone and tells no one: what a server that announces it
// late (on another stream, after the call's answer) looks like to a
// client that lists right after the answer.
func sessionResourceServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "own", Version: "1"}, nil)
	var (
		mu   sync.Mutex
		made = map[mcp.Session][]*mcp.Resource{}
	)
	s.AddTool(&mcp.Tool{Name: "make", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		n := len(made[req.Session]) + 1
		made[req.Session] = append(made[req.Session], &mcp.Resource{URI: fmt.Sprintf("session://made/%d", n), Name: "made"})
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "made"}}}, nil
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListResourcesResult); ok && err == nil {
				mu.Lock()
				lr.Resources = append(lr.Resources, made[req.GetSession()]...)
				mu.Unlock()
			}
			return res, err
		}
	})
	return s
}

// A client's resources/list right after a call that made a resource for
// its session lists it, whether or not the server's list_changed has
// reached mcpmux yet; a second client's list does not.
func TestOwnResourcesListedAfterTheCall(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{"own": sessionResourceServer()}, "", map[string]string{"own": "session: per-client"})
	one, two := h.client(DefaultProfile), h.client(DefaultProfile)
	uris := func(cs *mcp.ClientSession) []string {
		res, err := cs.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res.Resources {
			out = append(out, r.URI)
		}
		return out
	}
	call(t, two, "own__make", nil)
	for i := 1; i <= 3; i++ {
		call(t, one, "own__make", nil)
		var want []string
		for n := 1; n <= i; n++ {
			want = append(want, fmt.Sprintf("session://made/%d", n))
		}
		if got := uris(one); !slices.Equal(got, want) {
			t.Fatalf("after call %d client one lists %v, want %v", i, got, want)
		}
	}
	if got, want := uris(two), []string{"session://made/1"}; !slices.Equal(got, want) {
		t.Errorf("client two lists %v, want %v (its own resource alone)", got, want)
	}
}
