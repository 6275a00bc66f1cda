package aggregator

//lint:file-ignore SA1019 a go-sdk client of 2026-07-28 still sets a level with the removed logging/setLevel, which mcpmux answers (docs/protocol.md).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// sessionlessHTTP serves the fixtures over HTTP with sessions, as mcpmux
// does by default: 2026-07-28 requests are routed per request.
func sessionlessHTTP(t *testing.T, servers map[string]*mcp.Server, serverYAML map[string]string) (*harness, *httptest.Server) {
	t.Helper()
	h := newHarness(t, servers, "", serverYAML)
	h.front = h.serveHTTP(nil)
	ts := httptest.NewServer(h.front)
	t.Cleanup(ts.Close)
	return h, ts
}

// A go-sdk v1.8.0 client negotiates 2026-07-28 with mcpmux over HTTP
// (server/discover, no refused round trip, no initialize), lists the merged
// catalog and calls through it; a 2025-11-25 client on the same endpoint
// still gets a session.
func TestSessionlessClientOverHTTP(t *testing.T) {
	h, ts := sessionlessHTTP(t, map[string]*mcp.Server{
		"alpha": fixtureServer("alpha", map[string]mcp.ToolHandler{"echo": echo("alpha:")}),
		"beta":  fixtureServer("beta", map[string]mcp.ToolHandler{"echo": echo("beta:")}),
	}, nil)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	if got := toolNames(t, cs); !slices.Contains(got, "alpha__echo") || !slices.Contains(got, "beta__echo") {
		t.Errorf("tools: %v", got)
	}
	if res := call(t, cs, "beta__echo", map[string]any{"text": "hi"}); res.IsError || text(res) != "beta:hi" {
		t.Errorf("call: %+v", res)
	}
	if n := h.front.OpenSessions(); n != 0 {
		t.Errorf("%d sessions tracked for a sessionless client, want none", n)
	}
	old, err := mcp.NewClient(&mcp.Implementation{Name: "old", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if v := old.InitializeResult().ProtocolVersion; v != "2025-11-25" || old.ID() == "" {
		t.Errorf("a 2025-11-25 client: version %q, session %q", v, old.ID())
	}
	if res := call(t, old, "alpha__echo", map[string]any{"text": "x"}); res.IsError || !strings.HasPrefix(text(res), "alpha:") {
		t.Errorf("2025 call: %+v", res)
	}
}

// stdioSDKClient connects a go-sdk client (opts, and the version it
// offers: "" for its latest) to a's profile over serveStdio on pipes.
func stdioSDKClient(t *testing.T, a *Aggregator, profile string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ctx, inW, outR := servePipes(t, a, profile)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio", Version: "1"}, opts).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Over stdio, a go-sdk v1.8.0 client negotiates 2026-07-28 without an
// initialize, lists and calls, and learns of a change of the merged
// catalog on its subscriptions/listen stream.
func TestSessionlessClientOverStdio(t *testing.T) {
	dyn := fixtureServer("dyn", map[string]mcp.ToolHandler{"one": echo("1:")})
	h := newHarness(t, map[string]*mcp.Server{"dyn": dyn}, "", nil)
	changed := make(chan struct{}, 10)
	cs := stdioSDKClient(t, h.agg, DefaultProfile, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}, "")
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	if res := call(t, cs, "dyn__one", map[string]any{"text": "x"}); res.IsError || text(res) != "1:x" {
		t.Errorf("call: %+v", res)
	}
	dyn.AddTool(&mcp.Tool{Name: "two", InputSchema: map[string]any{"type": "object"}}, echo("2:"))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed on the listen stream")
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"dyn__one", "dyn__two"}) {
		t.Errorf("after the change: %v", got)
	}
}

// Over stdio, nothing reaches a client that has not initialized a session
// of 2025-11-25 or older unless it asked for it: change notifications go
// only on listen streams (stamped with their subscription id); the
// notifications of its requests (progress, log messages) do.
func TestStdioSendsNoUnsolicitedNotifications(t *testing.T) {
	for _, c := range []struct {
		msg  string
		sent bool
	}{
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a://b"}}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":3}}}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, true},
	} {
		var out bytes.Buffer
		o := &stdioOut{w: &out}
		if n, err := o.Write([]byte(c.msg + "\n")); n != len(c.msg)+1 || err != nil {
			t.Errorf("%s: Write = %d, %v", c.msg, n, err)
		}
		if sent := out.Len() > 0; sent != c.sent {
			t.Errorf("%s: sent %v, want %v", c.msg, sent, c.sent)
		}
	}
}

// sessionlessMeta is the _meta of a 2026-07-28 request from a client
// declaring caps (JSON).
func sessionlessMeta(caps string) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": json.RawMessage(caps),
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "line", "version": "1"},
	}
}

// On the sessionless protocol a client's capabilities are those of each
// request, not of the first on its connection: over one stdio connection,
// the tool list follows the capabilities each tools/list declares, and so
// does what a per-client server is told. Every result says it is
// complete, lists say how long they may be cached, and each names mcpmux.
func TestSessionlessCapabilitiesPerRequest(t *testing.T) {
	h := newHarness(t, map[string]*mcp.Server{
		"shared": unsortedServer("shared", "echo"),
	}, "", nil)
	c := stdioLines(t, h.agg, DefaultProfile)
	list := func(caps string) (names []string, raw json.RawMessage) {
		t.Helper()
		res, errj := c.call("tools/list", map[string]any{"_meta": sessionlessMeta(caps)})
		if errj != nil {
			t.Fatalf("tools/list: %s", errj)
		}
		var out struct{ Tools []struct{ Name string } }
		_ = json.Unmarshal(res, &out)
		for _, tl := range out.Tools {
			names = append(names, tl.Name)
		}
		return names, res
	}
	bare, raw := list(`{}`)
	if want := []string{"shared__echo", "shared__caps"}; !slices.Equal(bare, want) {
		t.Errorf("tools/list declaring nothing: %v, want %v", bare, want)
	}
	var fields struct {
		ResultType string          `json:"resultType"`
		TTL        *int            `json:"ttlMs"`
		Scope      string          `json:"cacheScope"`
		Meta       json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &fields); err != nil || fields.ResultType != "complete" || fields.TTL == nil || fields.Scope != "public" || !strings.Contains(string(fields.Meta), `"io.modelcontextprotocol/serverInfo":{"name":"mcpmux"`) {
		t.Errorf("tools/list result lacks resultType, ttlMs, cacheScope or serverInfo: %s", raw)
	}
	full, _ := list(`{"roots":{},"sampling":{},"elicitation":{}}`)
	if want := []string{"shared__echo", "shared__sample", "shared__roots", "shared__caps"}; !slices.Equal(full, want) {
		t.Errorf("tools/list declaring roots, sampling and elicitation on the same connection: %v, want %v", full, want)
	}
	res, errj := c.call("tools/call", map[string]any{"name": "shared__echo", "arguments": map[string]any{}, "_meta": sessionlessMeta(`{}`)})
	if errj != nil || !strings.Contains(string(res), `"resultType":"complete"`) || !strings.Contains(string(res), `io.modelcontextprotocol/serverInfo`) {
		t.Errorf("tools/call passed through: %s %s, want resultType and serverInfo", res, errj)
	}
	// mcpmux's own answer (an unknown tool) too.
	res, errj = c.call("tools/call", map[string]any{"name": "nope", "arguments": map[string]any{}, "_meta": sessionlessMeta(`{}`)})
	if errj != nil || !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), `"resultType":"complete"`) || !strings.Contains(string(res), `io.modelcontextprotocol/serverInfo`) {
		t.Errorf("tools/call of an unknown tool: %s %s, want an error result with resultType and serverInfo", res, errj)
	}
}

// askingServer is a 2025-11-25 server whose tool "ask" elicits a name
// from its client mid-call, and reports the outcome on asked.
func askingServer(asked chan<- error) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if asked != nil {
			asked <- err
		}
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("hello %v (%s)", res.Content["name"], res.Action)}}}, nil
	})
	return s
}

// A 2025-11-25 server's elicitation in the middle of a call reaches a
// 2026-07-28 client as an InputRequiredResult; the client's retry with its
// answer resumes the parked call, which completes with the answer: over
// HTTP and over stdio, with the go-sdk v1.8.0 client's own MRTR.
func TestSessionlessClientAnswersAServersElicitation(t *testing.T) {
	h, ts := sessionlessHTTP(t, map[string]*mcp.Server{"asker": askingServer(nil)}, pinned2025("asker"))
	opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}}
	viaHTTP, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, opts).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer viaHTTP.Close()
	for name, cs := range map[string]*mcp.ClientSession{"http": viaHTTP, "stdio": stdioSDKClient(t, h.agg, DefaultProfile, opts, "")} {
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("%s: negotiated %q", name, v)
		}
		if res := call(t, cs, "asker__ask", nil); res.IsError || text(res) != "hello Ada (accept)" {
			t.Errorf("%s: %+v %q, want the server's answer after the elicitation", name, res, text(res))
		}
	}
}

// The progress of a 2026-07-28 client's call that its server parks with a
// question midway reaches the client whole, with the log messages sent
// around it: what comes before the question on the first request's
// stream, what comes after on the retry's (it was sent to the first
// request's ended stream: the client matrix counted 1 of 3).
func TestParkedCallProgressReachesTheRetry(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		step := func(n float64) {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: n, Total: 3})
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprint("step ", n)})
		}
		step(1)
		if _, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{"type": "object"}}); err != nil {
			return nil, err
		}
		step(2)
		step(3)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	h, ts := sessionlessHTTP(t, map[string]*mcp.Server{"asker": s}, pinned2025("asker"))
	for _, over := range []string{"http", "stdio"} {
		var mu sync.Mutex
		var progress []float64
		var logs []string
		opts := &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
			},
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				progress = append(progress, req.Params.Progress)
				mu.Unlock()
			},
			LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
				mu.Lock()
				logs = append(logs, fmt.Sprint(req.Params.Data))
				mu.Unlock()
			},
		}
		var cs *mcp.ClientSession
		if over == "http" {
			var err error
			// Named (X-Task-Id), for mcpmux to keep the level it sets.
			named := &http.Client{Transport: testkit.HeaderTransport{Header: http.Header{"X-Task-Id": {"progress"}}}}
			if cs, err = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, opts).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: named, MaxRetries: -1}, nil); err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
		} else {
			cs = stdioSDKClient(t, h.agg, DefaultProfile, opts, "")
		}
		// A 2025-11-25 server logs at the level its connection was set
		// (docs/protocol.md): the one the client sets.
		if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatalf("%s: logging/setLevel: %v", over, err)
		}
		params := &mcp.CallToolParams{Name: "asker__ask", Arguments: map[string]any{}}
		params.SetProgressToken("p")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", over, err, res)
		}
		// The go-sdk client hands the answer over while the notifications
		// before it may still wait for their handlers: wait for all 3 of
		// each (only a lost one makes this wait long, and fail).
		type seen struct {
			progress []float64
			logs     []string
		}
		got := testkit.Await(t, over+": 3 progress notifications and 3 log messages", func() seen {
			mu.Lock()
			defer mu.Unlock()
			return seen{slices.Clone(progress), slices.Clone(logs)}
		}, func(s seen) bool { return len(s.progress) >= 3 && len(s.logs) >= 3 })
		slices.Sort(got.progress)
		slices.Sort(got.logs)
		if !slices.Equal(got.progress, []float64{1, 2, 3}) {
			t.Errorf("%s: the client got progress %v, want 1, 2 and 3", over, got.progress)
		}
		if !slices.Equal(got.logs, []string{"step 1", "step 2", "step 3"}) {
			t.Errorf("%s: the client got log messages %q, want the 3 steps'", over, got.logs)
		}
	}
}

// The requestState mcpmux mints is checked: altered, it is refused; a
// retry that answers nothing is refused and leaves the call parked; the
// right answer resumes the call. A call whose client never comes back is
// given up after the bound: its server's question gets an error that says
// why, and the state is no longer accepted.
func TestParkedCallStateAndBound(t *testing.T) {
	asked := make(chan error, 4)
	h := newHarness(t, map[string]*mcp.Server{"asker": askingServer(asked)}, "", pinned2025("asker"))
	c := stdioLines(t, h.agg, DefaultProfile)
	meta := sessionlessMeta(`{"elicitation":{}}`)
	first := func() (state, key string) {
		t.Helper()
		res, errj := c.call("tools/call", map[string]any{"name": "asker__ask", "arguments": map[string]any{}, "_meta": meta})
		var ir struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		if errj != nil || json.Unmarshal(res, &ir) != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 || ir.RequestState == "" {
			t.Fatalf("first call: %s %s, want an InputRequiredResult", res, errj)
		}
		for k, v := range ir.InputRequests {
			// The mode the server left out is filled in: clients of
			// 2026-07-28 require it.
			if !strings.Contains(string(v), `"method":"elicitation/create"`) || !strings.Contains(string(v), "your name?") || !strings.Contains(string(v), `"mode":"form"`) {
				t.Errorf("input request %s", v)
			}
			key = k
		}
		return ir.RequestState, key
	}
	state, key := first()
	retry := func(state string, responses map[string]any) (json.RawMessage, json.RawMessage) {
		return c.call("tools/call", map[string]any{"name": "asker__ask", "arguments": map[string]any{}, "_meta": meta, "requestState": state, "inputResponses": responses})
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Bob"}}}
	tampered := []byte(state)
	tampered[0] ^= 1
	if _, errj := retry(string(tampered), answer); errj == nil || !strings.Contains(string(errj), "requestState") {
		t.Errorf("an altered state: %s, want an error", errj)
	}
	if _, errj := retry(state, map[string]any{"other": map[string]any{"action": "decline"}}); errj == nil {
		t.Error("a retry that answers nothing was accepted")
	}
	for _, responses := range []string{`null`, `{}`} {
		if _, errj := c.call("tools/call", map[string]any{"name": "asker__ask", "arguments": map[string]any{}, "_meta": meta, "inputResponses": json.RawMessage(responses)}); errj == nil || !strings.Contains(string(errj), "without requestState") {
			t.Errorf("inputResponses %s without a requestState: %s, want an error", responses, errj)
		}
	}
	res, errj := retry(state, answer)
	if errj != nil || !strings.Contains(string(res), "hello Bob (accept)") || !strings.Contains(string(res), `"resultType":"complete"`) {
		t.Errorf("the retry with the answer: %s %s", res, errj)
	}
	if err := <-asked; err != nil {
		t.Errorf("the server's elicitation: %v", err)
	}

	h.agg.parked.setWait(time.Millisecond)
	state, key = first()
	if err := <-asked; err == nil || !strings.Contains(err.Error(), "did not answer within") {
		t.Errorf("the server's question of a call given up: %v, want an error saying the client did not answer", err)
	}
	if _, errj := retry(state, map[string]any{key: map[string]any{"action": "decline"}}); errj == nil || !strings.Contains(string(errj), "no call waiting") {
		t.Errorf("a retry after the bound: %s, want an error", errj)
	}
}

// Over HTTP a 2026-07-28 client learns of a change of the merged catalog
// on its subscriptions/listen stream, with no session.
func TestSessionlessListenOverHTTP(t *testing.T) {
	dyn := fixtureServer("dyn", map[string]mcp.ToolHandler{"one": echo("1:")})
	h, ts := sessionlessHTTP(t, map[string]*mcp.Server{"dyn": dyn}, nil)
	changed := make(chan struct{}, 10)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q", v)
	}
	// The listen is open once the profile's server has it: the go-sdk
	// answers its acknowledgement before Connect returns.
	dyn.AddTool(&mcp.Tool{Name: "two", InputSchema: map[string]any{"type": "object"}}, echo("2:"))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed on the listen stream")
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"dyn__one", "dyn__two"}) {
		t.Errorf("after the change: %v", got)
	}
	if n := h.front.OpenSessions(); n != 0 {
		t.Errorf("%d sessions tracked, want none", n)
	}
}
