package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// newEraServer is a go-sdk server of the versions given (all when nil),
// with tools that show what MCP 2026-07-28 requests carry: meta answers
// with the request's _meta, ask asks for input (a multi round-trip
// request), and fail answers with the error code in its argument.
func newEraServer(versions []string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "era", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	s.AddTool(&mcp.Tool{Name: "meta", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(req.Params.Meta)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult); ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s %v %s", r.Action, r.Content["who"], req.Params.RequestState)}}}, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "who?", RequestedSchema: map[string]any{"type": "object"}}}, RequestState: "st-1"}, nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Code int64 }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return nil, &jsonrpc.Error{Code: args.Code, Message: "refused"}
	})
	return s
}

// startEra starts a pool with one server "x" over an in-memory transport
// to srv, configured with extra YAML.
func startEra(t *testing.T, srv *mcp.Server, extra string) (*Server, *int) {
	t.Helper()
	dials := new(int)
	transport := func(*config.Server) mcp.Transport {
		*dials++
		ct, st := mcp.NewInMemoryTransports()
		go func() {
			if ss, err := srv.Connect(context.Background(), st, nil); err == nil {
				_ = ss.Wait()
			}
		}()
		return ct
	}
	pool := NewPool(&Options{Transport: transport, ClientInfo: &mcp.Implementation{Name: "mcpmux", Version: "test"}})
	t.Cleanup(func() { pool.Close(context.Background(), time.Second) })
	cfg, ferr := config.ParseServer("x.yaml", []byte("name: x\ntool_command: mem\n"+extra), nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	pool.Apply(context.Background(), []*config.Server{cfg}, time.Minute)
	return pool.Get("x"), dials
}

func callText(t *testing.T, s *Server, p CallParams) string {
	t.Helper()
	res, err := s.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: %v", p.Params.Name, err)
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Content) == 0 {
		t.Fatalf("%s: no content in %s", p.Params.Name, res)
	}
	return r.Content[0].(*mcp.TextContent).Text
}

// A server that offers MCP 2026-07-28 is spoken to in it (protocol: auto):
// each request carries its caller's capabilities and clientInfo, not the
// connection's; its input requests are asked of the caller and the
// request is retried with the answers and the request state; a caller
// without the capability gets an error naming it.
func TestEra2026RequestsAreTheCallers(t *testing.T) {
	s, _ := startEra(t, newEraServer(nil), "")
	st := waitState(t, s, "up", func(st Status) bool { return st.State == StateUp })
	if st.Protocol != config.Protocol2026 {
		t.Fatalf("protocol %q, want %s", st.Protocol, config.Protocol2026)
	}

	caller := newTaskCaller("ada")
	p := callParams("meta")
	p.Request = Request{Caller: caller, Features: ClientFeatures{FormElicitation: true}, ClientInfo: &mcp.Implementation{Name: "calling-client", Version: "9"}}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal([]byte(callText(t, s, p)), &meta); err != nil {
		t.Fatal(err)
	}
	if got, want := string(meta[mcp.MetaKeyClientCapabilities]), `{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`; got != want {
		t.Errorf("clientCapabilities %s, want the caller's %s (and the tasks extension, which mcpmux handles for every caller)", got, want)
	}
	if got := string(meta[mcp.MetaKeyClientInfo]); !strings.Contains(got, "calling-client") {
		t.Errorf("clientInfo %s, want the caller's", got)
	}
	if got := string(meta[mcp.MetaKeyProtocolVersion]); got != `"2026-07-28"` {
		t.Errorf("protocolVersion %s", got)
	}

	// What belongs to the hop stays there: a 2025 client gets no
	// resultType, and mcpmux's serverInfo, not the server's.
	if raw, err := s.CallTool(context.Background(), p); err != nil || strings.Contains(string(raw), "resultType") || strings.Contains(string(raw), mcp.MetaKeyServerInfo) {
		t.Errorf("result %s (%v), want it without the 2026 envelope", raw, err)
	}

	p.Params = &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}}
	if got, want := callText(t, s, p), "accept ada st-1"; got != want {
		t.Errorf("ask = %q, want %q", got, want)
	}
	if len(caller.elicits) != 1 || caller.elicits[0].Message != "who?" {
		t.Errorf("the caller was asked %v, want once, who?", caller.elicits)
	}

	p.Request.Features = ClientFeatures{Roots: true}
	_, err := s.CallTool(context.Background(), p)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "did not declare the elicitation capability") {
		t.Errorf("ask by a caller without elicitation: %v, want an InputError naming the capability", err)
	}
	p.Request.Caller = nil
	if _, err := s.CallTool(context.Background(), p); !errors.As(err, &ie) || !strings.Contains(err.Error(), "no client mcpmux can ask") {
		t.Errorf("ask without a caller: %v", err)
	}
}

// MCP 2026-07-28's error codes become errors that say what to do.
func TestEra2026Errors(t *testing.T) {
	s, _ := startEra(t, newEraServer(nil), "")
	waitState(t, s, "up", func(st Status) bool { return st.State == StateUp })
	for code, want := range map[int64]string{
		-32020: "headers do not match",
		-32021: "use a client that declares it",
		-32022: "does not speak the protocol version",
	} {
		p := callParams("fail")
		p.Params.Arguments = map[string]any{"code": code}
		_, err := s.CallTool(context.Background(), p)
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Code != code || !strings.Contains(err.Error(), want) {
			t.Errorf("error %d: %v, want a ProtocolError saying %q", code, err, want)
		}
	}
}

// A pinned protocol is kept: a server that offers both eras is spoken to
// in 2025-11-25 when pinned so, and a server of 2025 only does not come up
// for protocol: 2026-07-28, saying why.
func TestEraPinned(t *testing.T) {
	s, _ := startEra(t, newEraServer(nil), "protocol: 2025-11-25\n")
	if st := waitState(t, s, "up", func(st Status) bool { return st.State == StateUp }); st.Protocol != config.Protocol2025 {
		t.Errorf("pinned to 2025-11-25: protocol %q", st.Protocol)
	}
	old := []string{config.Protocol2025}
	s, _ = startEra(t, newEraServer(old), "protocol: 2026-07-28\n")
	st := waitState(t, s, "failed", func(st Status) bool { return st.Failures > 0 })
	if !strings.Contains(st.Error, "does not speak MCP 2026-07-28") {
		t.Errorf("a 2025 server pinned to 2026: %q", st.Error)
	}
	s, _ = startEra(t, newEraServer(old), "")
	if st := waitState(t, s, "up", func(st Status) bool { return st.State == StateUp }); st.Protocol != config.Protocol2025 {
		t.Errorf("a 2025 server, protocol: auto: %q", st.Protocol)
	}
}

// A 2026 server lists to a client with fewer capabilities on its shared
// connection, with a request that declares them: no probe session.
func TestEra2026ProbeOnSharedConnection(t *testing.T) {
	srv := newEraServer(nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				p, _ := req.GetParams().(*mcp.ListToolsParams)
				if _, elicits := p.Meta[mcp.MetaKeyClientCapabilities].(map[string]any)["elicitation"]; !elicits {
					out := *lt
					out.Tools = []*mcp.Tool{lt.Tools[0]} // only one tool for a client that cannot answer
					return &out, nil
				}
			}
			return res, err
		}
	})
	s, dials := startEra(t, srv, "")
	waitState(t, s, "up", func(st Status) bool { return st.State == StateUp && st.Tools == 3 })
	names, err := s.ToolsFor(context.Background(), ClientFeatures{Roots: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 {
		t.Errorf("listed to a client without elicitation: %v, want one tool", names)
	}
	if *dials != 1 {
		t.Errorf("%d connections, want the shared one only", *dials)
	}
}

// A 2026 server's list ttlMs is honoured: when it runs out, the lists are
// fetched again without a list_changed.
func TestEra2026ListTTL(t *testing.T) {
	srv := newEraServer(nil)
	listed := make(chan struct{}, 16)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				lt.TTLMs = 1 // mcpmux lists again after minListTTL at the soonest
				select {
				case listed <- struct{}{}:
				default:
				}
			}
			return res, err
		}
	})
	s, _ := startEra(t, srv, "")
	waitState(t, s, "up", func(st Status) bool { return st.State == StateUp })
	for i := range 2 {
		select {
		case <-listed:
		case <-time.After(20 * time.Second):
			t.Fatalf("listing %d: none, want the tools listed again when their ttl ran out", i+1)
		}
	}
}
