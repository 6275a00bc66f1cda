package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// TestServerEverythingFidelity compares, directly and through mcpmux,
// what real clients were seen to get differently from server-everything
// (issue 36): over stdio and Streamable HTTP, with the server shared by
// the clients of mcpmux or one per client, and over HTTP with the server
// as mcpmux's child or at its own URL. Each check is one answer of
// fidelityAnswers; sessionAnswers checks that two clients of one mcpmux
// see no state of each other's.
func TestServerEverythingFidelity(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(nodeBin, "mcp-server-everything")
	for _, session := range []string{"shared", "per-client"} {
		t.Run("stdio/"+session, func(t *testing.T) {
			t.Parallel()
			for _, caps := range []rawCaps{{host: true}, {}} {
				direct, _ := startRawClient(t, exec.Command(bin, "stdio"), caps, nil)
				via := viaStdioRaw(t, npmServer(t, "x", "mcp-server-everything", "stdio")+"session: "+session+"\n", caps)
				if caps.host {
					compareAnswers(t, rootsAtStart(t, direct), rootsAtStart(t, via))
				}
				compareAnswers(t, fidelityAnswers(t, direct, ""), fidelityAnswers(t, via, "x__"))
				if caps.host {
					compareAnswers(t, rootsAfterChange(t, direct), rootsAfterChange(t, via))
				}
			}
			// 9. A client that starts mcpmux gets no list_changed of a
			// kind it would not get directly (server-everything sends
			// tools/list_changed as it adds the tools that depend on the
			// client's capabilities) for the servers mcpmux starts
			// meanwhile: initialize waits for them, up to 10 s.
			direct, _ := startRawClient(t, exec.Command(bin, "stdio"), rawCaps{host: true}, nil)
			dir := writeConfig(t, map[string]string{"tool/x.yaml": npmServer(t, "x", "mcp-server-everything", "stdio") + "session: " + session + "\n"})
			cmd := exec.Command(mcpmuxBin, "--config", dir)
			logs := newLogBuffer()
			cmd.Stderr = logs
			via, _ := startRawClient(t, cmd, rawCaps{host: true}, nil)
			d, v := startupKinds(t, direct), startupKinds(t, via)
			// A duration as slog writes it: 1.125s, or 826ms under a second.
			started := logs.waitFor(t, regexp.MustCompile(`msg="servers started".* elapsed=([0-9.]+[µnm]?s)`))
			if took, _ := time.ParseDuration(started); took >= 10*time.Second {
				t.Logf("the servers took %v to start, longer than initialize waits: list_changed at start not compared", took)
			} else if extra := slices.DeleteFunc(v, func(k string) bool { return slices.Contains(d, k) }); len(extra) > 0 {
				t.Errorf("through mcpmux the client got %v at its start, which it does not get directly (directly: %v)", extra, d)
			}
		})
	}
	for _, mode := range []struct{ name, cfg string }{
		{"http/child/auto", npmServer(t, "x", "mcp-server-everything", "stdio")},
		{"http/child/per-client", npmServer(t, "x", "mcp-server-everything", "stdio") + "session: per-client\n"},
		{"http/child/shared", npmServer(t, "x", "mcp-server-everything", "stdio") + "session: shared\n"},
		{"http/url/auto", ""},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			directURL := startEverythingHTTP(t, bin)
			cfg := mode.cfg
			if cfg == "" {
				cfg = "name: x\nurl: " + startEverythingHTTP(t, bin) + "\n"
			}
			p := startHTTP(t, writeConfig(t, map[string]string{"tool/x.yaml": cfg}))
			p.logs.waitFor(t, regexp.MustCompile(`msg="servers started"`))
			if strings.HasSuffix(mode.name, "/auto") {
				// session: auto learns that the server keeps per-session
				// state when it asks mcpmux's own connection for roots.
				p.logs.waitFor(t, regexp.MustCompile(`the server keeps state per session`))
			}
			viaURL := p.url + "/mcp"
			// session: shared is the operator's choice of one session for
			// all clients: they share the roots the server asked for (at
			// mcpmux's start, of no client) and what it keeps per session
			// (docs/protocol.md); each client's own answers are compared.
			shared := strings.HasSuffix(mode.name, "/shared")
			for _, caps := range []rawCaps{{host: true}, {}} {
				direct, _ := startRawHTTPClient(t, directURL, caps)
				via, _ := startRawHTTPClient(t, viaURL, caps)
				if caps.host && !shared {
					compareAnswers(t, rootsAtStart(t, direct), rootsAtStart(t, via))
				}
				compareAnswers(t, fidelityAnswers(t, direct, ""), fidelityAnswers(t, via, "x__"))
				if caps.host && !shared {
					compareAnswers(t, rootsAfterChange(t, direct), rootsAfterChange(t, via))
				}
			}
			if !shared {
				compareAnswers(t, sessionAnswers(t, directURL, ""), sessionAnswers(t, viaURL, "x__"))
			}
			// A go-sdk client's progress: directly (2025-11-25) every
			// step's; through mcpmux (2026-07-28) as many, when the call
			// is parked midway for the roots the server asks of a new
			// connection and resumed by the client's retry (the client
			// matrix counted 1 of 3: what came after the question was
			// sent to the first request's ended stream).
			if d, v := goSDKProgress(t, directURL, "trigger-long-running-operation"), goSDKProgress(t, viaURL, "x__trigger-long-running-operation"); v != d {
				t.Errorf("a go-sdk client got %d progress notifications of trigger-long-running-operation through mcpmux, %d directly", v, d)
			}
			// 5. A client of MCP 2026-07-28 cancels a call by closing its
			// stream: the server's call is cancelled with it, long before
			// the 120 s it would run.
			cancelByClosing(t, viaURL, "x__trigger-long-running-operation")
			ended := p.logs.waitFor(t, regexp.MustCompile(`msg="tool call failed" tool=x__trigger-long-running-operation .*elapsed=([0-9.]+[µnm]?s)`))
			if took, _ := time.ParseDuration(ended); took >= 100*time.Second {
				t.Errorf("a 2026-07-28 call whose client closed its stream ran on for %v", took)
			}
		})
	}
}

// viaStdioRaw starts an mcpmux serving cfg (the tool file of a server
// named "x") over stdio, and a rawClient on it once its servers started.
func viaStdioRaw(t *testing.T, cfg string, caps rawCaps) *rawClient {
	t.Helper()
	cmd, logs := mcpmuxCommand(t, cfg)
	c, _ := startRawClient(t, cmd, caps, func() { logs.waitFor(t, regexp.MustCompile(`msg="servers started"`)) })
	return c
}

// fidelityAnswers makes, on c, the requests whose answers differed
// through mcpmux, and returns the answers.
func fidelityAnswers(t *testing.T, c *rawClient, prefix string) []answer {
	t.Helper()
	var out []answer
	add := func(key string, raw json.RawMessage) {
		out = append(out, answer{key, normalizeAnswer(raw, prefix)})
	}
	tool := func(name string, args map[string]any) json.RawMessage {
		return c.call("tools/call", map[string]any{"name": prefix + name, "arguments": args})
	}

	// 1. An error that means something to the client (-32042: open this
	// URL first, in data) is a JSON-RPC error, data and all. 8. A tool
	// the server does not list to this client (it declared no URL
	// elicitation) is as unknown through mcpmux as directly.
	urlElicitation := tool("trigger-url-elicitation", map[string]any{"url": "https://example.com/login", "errorPath": true})
	if c.caps.host {
		add("trigger-url-elicitation, error path", urlElicitation)
	} else {
		// Directly the SDK's "Tool … not found", through mcpmux its own
		// unknown-tool text: both an isError result of a tool not run.
		var res struct {
			IsError bool
			Content []struct{ Text string }
		}
		_ = json.Unmarshal(urlElicitation, &res)
		text := ""
		if len(res.Content) > 0 {
			text = res.Content[0].Text
		}
		unknown := res.IsError && (strings.Contains(text, "not found") || strings.Contains(text, "Unknown tool"))
		add("trigger-url-elicitation, not listed to this client: unknown", mustMarshal(unknown))
	}

	// 6. The client's elicitation answer reaches the server as it wrote
	// it (server-everything prints it back).
	if c.caps.host {
		add("trigger-elicitation-request", tool("trigger-elicitation-request", map[string]any{}))
	}

	// 7. Completion for a prompt nobody has: the server's answer.
	add("completion/complete of an unknown prompt", c.call("completion/complete", map[string]any{
		"ref":      map[string]any{"type": "ref/prompt", "name": prefix + "nope"},
		"argument": map[string]any{"name": "x", "value": "y"},
	}))

	// 3. A tool that creates a resource: the list has it when the tool
	// has answered, and notifications/resources/list_changed came before
	// the answer (over stdio, where there is one stream to order; over
	// HTTP it comes on the GET stream). Each client names its own: on a
	// shared connection (session: shared over HTTP) what another client
	// made is listed too, as docs/protocol.md says.
	gz := "fid-" + c.caps.String() + ".gz"
	c.notifications()
	add("gzip-file-as-resource", tool("gzip-file-as-resource", map[string]any{"name": gz, "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}))
	if !c.http {
		add("notifications before gzip-file-as-resource's answer", mustMarshal(methods(c.notifications(), "notifications/resources/list_changed")))
	} else {
		add("notifications/resources/list_changed after gzip-file-as-resource", mustMarshal(noteCame(c, "notifications/resources/list_changed")))
	}
	add("resources/list after gzip-file-as-resource has the resource", mustMarshal(slices.Contains(resourceURIs(t, c, "demo://resource/session/"), "demo://resource/session/"+gz)))
	newRead := c.call("resources/read", map[string]any{"uri": "demo://resource/session/" + gz})
	add("resources/read of the new resource", newRead)

	// 4. The cacheScope of a read of a URI no list has (through mcpmux,
	// a read it routes itself, not the SDK's): absent or "public", never
	// "" (the go-sdk: an empty value must be "public"); and of one a
	// template of the server's covers.
	add("cacheScope of a resource read from a template", cacheScope(c.call("resources/read", map[string]any{"uri": "demo://resource/dynamic/text/1"})))
	add("cacheScope of the new resource's read", cacheScope(newRead))

	// 5. A call the client cancels gets no answer, over stdio and HTTP;
	// nor any progress once it is cancelled, or once a call has answered.
	id, answered := c.start("tools/call", map[string]any{"name": prefix + "trigger-long-running-operation", "arguments": map[string]any{"duration": 1.2, "steps": 4}, "_meta": map[string]any{"progressToken": "cancel-me"}})
	waitNotification(t, c, "cancel-me")
	c.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "the user changed their mind"})
	c.call("ping", nil)
	c.notifications()
	// A call that ends after the cancelled one would have.
	c.call("tools/call", map[string]any{"name": prefix + "trigger-long-running-operation", "arguments": map[string]any{"duration": 1.2, "steps": 2}, "_meta": map[string]any{"progressToken": "after-me"}})
	after := c.notifications()
	c.call("ping", nil)
	got := "none"
	select {
	case r := <-answered:
		got = fmt.Sprintf("result %s error %s", r.Result, r.Error)
	default:
	}
	add("answer to a cancelled call", mustMarshal(got))
	trailing := c.notifications()
	// Directly server-everything goes on sending progress for a call it
	// no longer runs, which a client of the TypeScript SDK reports as an
	// error (a progress notification for an unknown token): mcpmux stops
	// it, as the spec wants (a documented difference, docs/protocol.md).
	if n := mentioning(append(after, trailing...), `"cancel-me"`); prefix != "" && n > 0 {
		t.Errorf("through mcpmux %d progress notifications of a cancelled call came after its cancellation", n)
	}
	add("progress of a call after its answer", mustMarshal(mentioning(trailing, `"after-me"`)))
	return out
}

// cacheScope is the cacheScope of a resources/read answer, as far as a
// client can tell: "absent or public" when it means public.
func cacheScope(raw json.RawMessage) json.RawMessage {
	var read struct {
		CacheScope *string `json:"cacheScope"`
	}
	_ = json.Unmarshal(raw, &read)
	scope := "absent or public"
	if read.CacheScope != nil && *read.CacheScope != "public" {
		scope = fmt.Sprintf("%q", *read.CacheScope)
	}
	return mustMarshal(scope)
}

// mentioning counts the notifications of notes that contain s.
func mentioning(notes []json.RawMessage, s string) int {
	n := 0
	for _, m := range notes {
		if strings.Contains(string(m), s) {
			n++
		}
	}
	return n
}

// startupKinds are the kinds of list_changed notifications a client got
// from its start to its first tools/list's answer (and a ping after it).
func startupKinds(t *testing.T, c *rawClient) []string {
	t.Helper()
	c.call("tools/list", map[string]any{})
	c.call("ping", nil)
	kinds := methods(c.notifications(), "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed")
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// sessionAnswers connects two clients to url with different roots: what
// the second sees must not depend on the first (its roots, the resource
// it made).
func sessionAnswers(t *testing.T, url, prefix string) []answer {
	t.Helper()
	one, _ := startRawHTTPClient(t, url, rawCaps{host: true, root: "file:///tmp/one"})
	two, _ := startRawHTTPClient(t, url, rawCaps{host: true, root: "file:///tmp/two"})
	var out []answer
	add := func(key string, raw json.RawMessage) {
		out = append(out, answer{key, normalizeAnswer(raw, prefix)})
	}
	tool := func(c *rawClient, name string, args map[string]any) json.RawMessage {
		return c.call("tools/call", map[string]any{"name": prefix + name, "arguments": args})
	}
	add("get-roots-list of client one", tool(one, "get-roots-list", map[string]any{}))
	add("get-roots-list of client two", tool(two, "get-roots-list", map[string]any{}))
	add("client one makes a resource", tool(one, "gzip-file-as-resource", map[string]any{"name": "one.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}))
	add("session resources listed to client one", mustMarshal(resourceURIs(t, one, "demo://resource/session/")))
	add("session resources listed to client two", mustMarshal(resourceURIs(t, two, "demo://resource/session/")))
	add("client two reads client one's resource", two.call("resources/read", map[string]any{"uri": "demo://resource/session/one.gz"}))
	return out
}

// resourceURIs lists the resources on c whose URI starts with prefix.
func resourceURIs(t *testing.T, c *rawClient, prefix string) []string {
	t.Helper()
	var page struct {
		Resources []struct{ URI string }
	}
	if err := json.Unmarshal(c.call("resources/list", map[string]any{}), &page); err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	uris := []string{}
	for _, r := range page.Resources {
		if strings.HasPrefix(r.URI, prefix) {
			uris = append(uris, r.URI)
		}
	}
	return uris
}

// methods returns the notifications of notes whose method is one of want,
// by method.
func methods(notes []json.RawMessage, want ...string) []string {
	out := []string{}
	for _, n := range notes {
		var m struct{ Method string }
		if json.Unmarshal(n, &m) == nil && slices.Contains(want, m.Method) {
			out = append(out, m.Method)
		}
	}
	return out
}

// noteCame reports whether c was sent a notification of method, waiting
// for it up to half the test's timeout.
func noteCame(c *rawClient, method string) bool {
	return testkit.Holds(testTimeout/2, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(methods(c.notes, method)) > 0
	})
}

// serverAsked reports whether the server sent c a request of method,
// waiting for it up to half the test's timeout.
func serverAsked(c *rawClient, method string) bool {
	return testkit.Holds(testTimeout/2, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(methods(c.asked, method)) > 0
	})
}

// waitNotification waits for a notification that mentions s.
func waitNotification(t *testing.T, c *rawClient, s string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("a notification with %q came", s), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return slices.ContainsFunc(c.notes, func(n json.RawMessage) bool { return strings.Contains(string(n), s) })
	})
}

// cancelByClosing sends tool as a request of MCP 2026-07-28 (no session)
// with a progress token, and closes its stream after the first progress
// notification.
func cancelByClosing(t *testing.T, url, tool string) {
	t.Helper()
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	resp := testkit.Open2026(ctx, t, url, nil, "tools/call", tool, map[string]any{
		"name": tool, "arguments": map[string]any{"duration": 120, "steps": 120},
		"_meta": map[string]any{
			"progressToken": "close-me",
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	})
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "close-me") {
			return // closed by the deferred cancel and Close
		}
	}
	t.Fatalf("no progress on the 2026-07-28 call's stream (HTTP %d): %v", resp.StatusCode, sc.Err())
}

// goSDKProgress calls tool (server-everything's
// trigger-long-running-operation: 3 steps in a second) with a progress
// token from a go-sdk client with its default capabilities (roots
// included) and protocol (2026-07-28 where the server speaks it), and
// returns how many progress notifications the client got, waiting after
// the answer for all 3 (the go-sdk hands the answer to its caller while
// the notifications before it may still be queued).
func goSDKProgress(t *testing.T, url, tool string) int {
	t.Helper()
	ctx := testContext(t)
	var mu sync.Mutex
	got := 0
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-progress", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got++
			mu.Unlock()
		},
	})
	retried := &retryCounter{}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: retried}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"duration": 1, "steps": 3}}
	params.SetProgressToken("steps")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("%s at %s: %v %+v", tool, url, err, res)
	}
	// All 3 come, or the wait fails the test with the count it got: a
	// lost notification is what this counts, and only a lost one can
	// make it wait long.
	count := func() int { mu.Lock(); defer mu.Unlock(); return got }
	n := testkit.Await(t, fmt.Sprintf("the 3 progress notifications of %s at %s", tool, url), count, func(n int) bool { return n >= 3 })
	t.Logf("%s: protocol %s, %d retries with input, %d progress notifications", url, cs.InitializeResult().ProtocolVersion, retried.n.Load(), n)
	return n
}

// retryCounter counts the requests that carry a requestState: the
// retries of a call answered with a question (MRTR).
type retryCounter struct{ n atomic.Int64 }

func (r *retryCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			body, _ := io.ReadAll(b)
			if bytes.Contains(body, []byte(`"requestState"`)) {
				r.n.Add(1)
			}
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// rootsAtStart reports whether the server asked c, a client that declared
// roots, for them after its initialization and before its first request
// (9: server-everything asks 350 ms after notifications/initialized;
// through mcpmux its per-client connection is opened as the client
// initializes, and asks then too). It waits for the request, up to half
// the test's timeout: without it, the server asks only in the first call.
func rootsAtStart(t *testing.T, c *rawClient) []answer {
	t.Helper()
	return []answer{{"roots/list asked before the first request", mustMarshal(serverAsked(c, "roots/list"))}}
}

// rootsAfterChange changes the root of c, a client that declared roots
// (with listChanged) and was asked for them, and reports whether the
// server asked for them again: server-everything does on
// notifications/roots/list_changed. It waits for the request up to half
// the test's timeout.
func rootsAfterChange(t *testing.T, c *rawClient) []answer {
	t.Helper()
	c.requests()
	c.changeRoot("file:///tmp/changed")
	return []answer{{"roots/list asked again after notifications/roots/list_changed", mustMarshal(serverAsked(c, "roots/list"))}}
}
