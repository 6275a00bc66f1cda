package e2e

//lint:file-ignore SA1019 the tests check that sampling, roots and logging of MCP 2025-11-25, which mcpmux forwards, pass through.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// The transparency suite: one set of checks, run against a server
// directly and through mcpmux, whose observations must be equal apart from
// namespacing. It runs for the Go fixture (every feature) and for the real
// @modelcontextprotocol/server-everything, over stdio and Streamable HTTP.

// recorder keeps what a client was sent besides answers.
type recorder struct {
	mu       sync.Mutex
	progress []string
	tokens   []any
	logs     []string
	updated  chan string
}

func newRecorder() *recorder { return &recorder{updated: make(chan string, 10)} }

// take returns and forgets what was recorded, once at least n progress
// notifications (or, with logs set, n log messages) have arrived: the SDK
// hands notifications to their handlers apart from the call's answer, so
// they may trail it.
func (r *recorder) take(t *testing.T, n int, logs bool) (progress []string, tokens []any, messages []string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%d notifications reached the client", n), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if logs {
			return len(r.logs) >= n
		}
		return len(r.progress) >= n
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	progress, tokens, messages = r.progress, r.tokens, r.logs
	r.progress, r.tokens, r.logs = nil, nil, nil
	return
}

// transparentClient is the same client both ways: it samples, elicits and
// has a root, like a full-featured MCP host.
func transparentClient(rec *recorder) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "transparency", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{
			RootsV2:     &mcp.RootCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			var prompt string
			if n := len(req.Params.Messages); n > 0 {
				if tc, ok := req.Params.Messages[n-1].Content.(*mcp.TextContent); ok {
					prompt = tc.Text
				}
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "sampled: " + prompt}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			p := req.Params
			rec.progress = append(rec.progress, fmt.Sprintf("%v/%v %s", p.Progress, p.Total, p.Message))
			rec.tokens = append(rec.tokens, p.ProgressToken)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(req.Params)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.logs = append(rec.logs, string(b))
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			rec.updated <- req.Params.URI
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work/project", Name: "project"})
	return c
}

// target is one way to reach the server under test.
type target struct {
	cs     *mcp.ClientSession
	rec    *recorder
	prefix string // "" directly, "<server>__" through mcpmux
}

func (tg *target) name(n string) string   { return tg.prefix + n }
func (tg *target) unname(n string) string { return strings.TrimPrefix(n, tg.prefix) }

// connectTarget connects the transparency client over transport, always on
// protocol 2025-11-25 (a 2026-07-28 session, directly or through mcpmux,
// would differ by its per-result protocol fields alone: serverInfo).
func connectTarget(t *testing.T, transport mcp.Transport, prefix string) *target {
	t.Helper()
	rec := newRecorder()
	cs, err := transparentClient(rec).Connect(testContext(t), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting (prefix %q): %v", prefix, err)
	}
	t.Cleanup(func() { cs.Close() })
	return &target{cs: cs, rec: rec, prefix: prefix}
}

// observations maps a check's name to what it saw, as normalised JSON.
type observations map[string]string

var clockRE = regexp.MustCompile(`\d{1,2}:\d{2}:\d{2}(\s?[AP]M)?`)

func (o observations) add(t *testing.T, key string, v any, err error) {
	t.Helper()
	if err != nil {
		o[key] = "error: " + err.Error()
		return
	}
	b, jerr := json.Marshal(v)
	if jerr != nil {
		t.Fatalf("%s: %v", key, jerr)
	}
	// Clocks differ between two runs of a server, not between paths. An
	// absent cacheScope means "public" (the spec's default), which the
	// go-sdk server writes out: the same value, spelled two ways.
	s := clockRE.ReplaceAllString(string(b), "HH:MM:SS")
	o[key] = strings.ReplaceAll(s, `"cacheScope":""`, `"cacheScope":"public"`)
}

// readObserved reads uri and observes the result, with clocks inside
// blobs masked as in text.
func readObserved(t *testing.T, tg *target, o observations, uri string) {
	t.Helper()
	r, err := tg.cs.ReadResource(testContext(t), &mcp.ReadResourceParams{URI: uri})
	if r != nil {
		for _, c := range r.Contents {
			c.Blob = clockRE.ReplaceAll(c.Blob, []byte("HH:MM:SS"))
		}
	}
	o.add(t, "resources/read "+uri, r, err)
}

// compare fails for every check that saw something different.
func compare(t *testing.T, direct, via observations) {
	t.Helper()
	keys := map[string]bool{}
	for k := range direct {
		keys[k] = true
	}
	for k := range via {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if direct[k] != via[k] {
			t.Errorf("%s differs through mcpmux:\n  direct %s\n     via %s", k, direct[k], via[k])
		}
	}
}

// listings observes the four lists, names mapped back.
func listings(t *testing.T, tg *target, o observations) {
	ctx := testContext(t)
	var tools []*mcp.Tool
	for tool, err := range tg.cs.Tools(ctx, nil) {
		if err != nil {
			o.add(t, "tools/list", nil, err)
			return
		}
		c := *tool
		c.Name = tg.unname(c.Name)
		tools = append(tools, &c)
	}
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	o.add(t, "tools/list", tools, nil)

	var prompts []*mcp.Prompt
	for p, err := range tg.cs.Prompts(ctx, nil) {
		if err != nil {
			o.add(t, "prompts/list", nil, err)
			break
		}
		c := *p
		c.Name = tg.unname(c.Name)
		prompts = append(prompts, &c)
	}
	slices.SortFunc(prompts, func(a, b *mcp.Prompt) int { return strings.Compare(a.Name, b.Name) })
	o.add(t, "prompts/list", prompts, nil)

	var resources []*mcp.Resource
	for r, err := range tg.cs.Resources(ctx, nil) {
		if err != nil {
			o.add(t, "resources/list", nil, err)
			break
		}
		resources = append(resources, r)
	}
	slices.SortFunc(resources, func(a, b *mcp.Resource) int { return strings.Compare(a.URI, b.URI) })
	o.add(t, "resources/list", resources, nil)

	var templates []*mcp.ResourceTemplate
	for r, err := range tg.cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			o.add(t, "resources/templates/list", nil, err)
			break
		}
		templates = append(templates, r)
	}
	slices.SortFunc(templates, func(a, b *mcp.ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	o.add(t, "resources/templates/list", templates, nil)
}

func callObserved(t *testing.T, tg *target, o observations, tool string, args map[string]any) {
	t.Helper()
	res, err := tg.cs.CallTool(testContext(t), &mcp.CallToolParams{Name: tg.name(tool), Arguments: args})
	o.add(t, "tools/call "+tool+" "+jsonOf(t, args), res, err)
}

// callWithProgress calls tool with a progress token and observes the
// result and the (at least want) progress notifications received under
// that token.
func callWithProgress(t *testing.T, tg *target, o observations, tool string, args map[string]any, want int) {
	t.Helper()
	p := &mcp.CallToolParams{Name: tg.name(tool), Arguments: args}
	p.SetProgressToken("client-token-7")
	res, err := tg.cs.CallTool(testContext(t), p)
	o.add(t, "progress call "+tool, res, err)
	progress, tokens, _ := tg.rec.take(t, want, false)
	o.add(t, "progress notifications "+tool, progress, nil)
	for _, tok := range tokens {
		if tok != "client-token-7" {
			t.Errorf("progress arrived with token %v, not the client's", tok)
		}
	}
}

func fixtureChecks(t *testing.T, tg *target) observations {
	o := observations{}
	ctx := testContext(t)
	listings(t, tg, o)
	callObserved(t, tg, o, "weather", map[string]any{"city": "Oslo"})
	callObserved(t, tg, o, "rich", map[string]any{})
	callObserved(t, tg, o, "sample", map[string]any{"prompt": "say hi"})
	callObserved(t, tg, o, "elicit", map[string]any{})
	callObserved(t, tg, o, "roots", map[string]any{})
	callWithProgress(t, tg, o, "progress", map[string]any{}, 3)

	err := tg.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"})
	callObserved(t, tg, o, "log", map[string]any{})
	_, _, logs := tg.rec.take(t, 3, true) // info, warning, error
	o.add(t, "logging at info", logs, err)

	pr, err := tg.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: tg.name("greet"), Arguments: map[string]string{"who": "Ada", "colour": "blue"}})
	o.add(t, "prompts/get greet", pr, err)
	for _, uri := range []string{"fixture://readme", "fixture://logo.png", "fixture://items/42"} {
		readObserved(t, tg, o, uri)
	}
	comp, err := tg.cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: tg.name("greet")},
		Argument: mcp.CompleteParamsArgument{Name: "colour", Value: "gr"},
	})
	o.add(t, "completion/complete greet colour", comp, err)

	err = tg.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fixture://counter"})
	callObserved(t, tg, o, "bump", map[string]any{})
	select {
	case uri := <-tg.rec.updated:
		o.add(t, "resources/updated", uri, err)
	case <-time.After(testTimeout):
		t.Error("no notifications/resources/updated")
	}
	if err := tg.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "fixture://counter"}); err != nil {
		t.Errorf("unsubscribe: %v", err)
	}

	// Cancellation: the client cancels; the server's handler must see it.
	marker := filepath.Join(t.TempDir(), "wait")
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := tg.cs.CallTool(cctx, &mcp.CallToolParams{Name: tg.name("wait"), Arguments: map[string]any{"marker": marker}})
		done <- err
	}()
	waitFile(t, marker+".started")
	cancel()
	<-done
	waitFile(t, marker+".cancelled")
	o.add(t, "cancellation reached the server", true, nil)
	return o
}

func everythingChecks(t *testing.T, tg *target) observations {
	o := observations{}
	ctx := testContext(t)
	listings(t, tg, o)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"echo", map[string]any{"message": "transparent"}},
		{"get-sum", map[string]any{"a": 19, "b": 23}},
		{"get-sum", map[string]any{"a": "not a number"}},
		{"get-tiny-image", map[string]any{}},
		{"get-annotated-message", map[string]any{"messageType": "error", "includeImage": true}},
		{"get-structured-content", map[string]any{"location": "Chicago"}},
		{"get-resource-links", map[string]any{"count": 3}},
		{"get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2}},
		{"trigger-sampling-request", map[string]any{"prompt": "tell a joke", "maxTokens": 20}},
		{"get-roots-list", map[string]any{}},
	} {
		callObserved(t, tg, o, c.tool, c.args)
	}
	callWithProgress(t, tg, o, "trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3}, 3)
	for _, p := range []struct {
		name string
		args map[string]string
	}{
		{"simple-prompt", nil},
		{"args-prompt", map[string]string{"city": "Lyon", "state": "ARA"}},
		{"completable-prompt", map[string]string{"department": "Sales", "name": "Eve"}},
	} {
		pr, err := tg.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: tg.name(p.name), Arguments: p.args})
		o.add(t, "prompts/get "+p.name, pr, err)
	}
	comp, err := tg.cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: tg.name("completable-prompt")},
		Argument: mcp.CompleteParamsArgument{Name: "department", Value: "S"},
	})
	o.add(t, "completion/complete department S", comp, err)
	for _, uri := range []string{"demo://resource/static/document/architecture.md", "demo://resource/dynamic/text/1", "demo://resource/dynamic/blob/2"} {
		readObserved(t, tg, o, uri)
	}
	return o
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	testkit.Eventually(t, path+" appears", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// viaStdio connects through an mcpmux serving cfg (a tool file for a
// server named "x").
func viaStdio(t *testing.T, cfg string) *target {
	cmd, _ := mcpmuxCommand(t, cfg)
	return connectTarget(t, &mcp.CommandTransport{Command: cmd}, "x__")
}

// mcpmuxCommand is the command of an mcpmux serving cfg (the tool file
// of a server named "x") over stdio, and its log, shown should the test
// fail.
func mcpmuxCommand(t *testing.T, cfg string) (*exec.Cmd, *logBuffer) {
	dir := writeConfig(t, map[string]string{"tool/x.yaml": cfg})
	cmd := exec.Command(mcpmuxBin, "--config", dir)
	logs := newLogBuffer()
	cmd.Stderr = logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcpmux log:\n%s", logs.String())
		}
	})
	return cmd, logs
}

func viaHTTP(t *testing.T, cfg string) *target {
	p := startHTTP(t, writeConfig(t, map[string]string{"tool/x.yaml": cfg}))
	return connectTarget(t, &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", MaxRetries: -1}, "x__")
}

func TestTransparencyGoFixture(t *testing.T) {
	t.Parallel()
	t.Run("stdio", func(t *testing.T) {
		direct := exec.Command(fixtureBin)
		direct.Env = append(os.Environ(), fixtureEnv+"=all")
		d := fixtureChecks(t, connectTarget(t, &mcp.CommandTransport{Command: direct}, ""))
		v := fixtureChecks(t, viaStdio(t, fixture("x", "all")))
		compare(t, d, v)
	})
	t.Run("http", func(t *testing.T) {
		srv := allFixture()
		ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		t.Cleanup(ts.Close)
		d := fixtureChecks(t, connectTarget(t, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, ""))
		v := fixtureChecks(t, viaHTTP(t, fmt.Sprintf("url: %s\n", ts.URL)))
		compare(t, d, v)
	})
}

func TestTransparencyServerEverything(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(nodeBin, "mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not installed: run npm ci in e2e/", bin)
	}
	t.Run("stdio", func(t *testing.T) {
		d := everythingChecks(t, connectTarget(t, &mcp.CommandTransport{Command: exec.Command(bin, "stdio")}, ""))
		v := everythingChecks(t, viaStdio(t, npmServer(t, "x", "mcp-server-everything", "stdio")))
		compare(t, d, v)
	})
	t.Run("http", func(t *testing.T) {
		url := startEverythingHTTP(t, bin)
		d := everythingChecks(t, connectTarget(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, ""))
		v := everythingChecks(t, viaHTTP(t, fmt.Sprintf("url: %s\n", url)))
		compare(t, d, v)
	})
}

// startEverythingHTTP runs server-everything's Streamable HTTP transport
// on a free loopback port and returns its /mcp URL once it listens.
func startEverythingHTTP(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	logs := newLogBuffer()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	logs.waitFor(t, regexp.MustCompile(`listening on port`))
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}
