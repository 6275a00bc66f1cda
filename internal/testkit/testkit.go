// Package testkit holds the helpers that the tests of several packages
// share, so that each exists once. Only tests import it.
package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"

	"github.com/mcpmux/mcpmux/rewrite"
)

// Patience bounds every wait of Eventually: generous, because a loaded
// 2-core machine may be slow, and never reached by a passing test.
const Patience = time.Minute

// Eventually waits until cond holds and fails t if it does not within
// Patience. It is for a state that the code under test announces by no
// event a test could wait on (a process gone, a metric counted, a file
// written by another process); where there is such an event, wait on it.
// Under testing/synctest the polling costs no real time.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Await(t, what, cond, func(ok bool) bool { return ok })
}

// Await is Eventually for a value: it polls get until ok holds for what
// it returns, and returns that; on timeout it fails t with the last one.
func Await[T any](t testing.TB, what string, get func() T, ok func(T) bool) T {
	t.Helper()
	v, held := poll(Patience, get, ok)
	if !held {
		t.Fatalf("timed out after %v waiting until %s; last: %+v", Patience, what, v)
	}
	return v
}

// Holds reports whether cond comes to hold within d, polling it as
// Eventually does. It is for a test that records whether something
// happens, to compare with another run (a server reached directly and
// through mcpmux), where false is an answer and not a failure; where the
// thing must happen, use Eventually.
func Holds(d time.Duration, cond func() bool) bool {
	_, held := poll(d, cond, func(ok bool) bool { return ok })
	return held
}

// poll calls get until ok holds for what it returns, or d has passed; it
// returns the last value and whether ok held for it.
func poll[T any](d time.Duration, get func() T, ok func(T) bool) (T, bool) {
	deadline := time.Now().Add(d)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		v := get()
		if ok(v) {
			return v, true
		}
		if time.Now().After(deadline) {
			return v, false
		}
		time.Sleep(pause)
	}
}

// WriteDir creates a directory of files, path inside it → content
// ("mcpmux.yaml", "tool/x.yaml"), readable by all (a container may read
// them as another user), and returns it.
func WriteDir(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		write(t, filepath.Join(dir, name), content, 0o644)
	}
	return dir
}

// WriteFile writes content to path, readable by its owner only (as
// mcpmux wants a secret's file), making its directory; it returns path.
func WriteFile(t testing.TB, path, content string) string {
	t.Helper()
	write(t, path, content, 0o600)
	return path
}

func write(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// Text is the text items of a tool result, one a line (as rules read
// it); "<nil result>" for none.
func Text(res *mcp.CallToolResult) string {
	if res == nil {
		return "<nil result>"
	}
	return rewrite.ResultText(res)
}

// RawText is Text of a tool result as a server sent it, or the raw JSON
// if it is not one (which then equals no text a test expects).
func RawText(raw json.RawMessage) string {
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return string(raw)
	}
	return Text(&res)
}

// JSON is v encoded, failing t if it cannot be.
func JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Message is any JSON-RPC message, decoded loosely, for a test's client
// that speaks JSON-RPC by hand: a request has Method and ID, a
// notification Method only, a response ID and Result or Error.
type Message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// Reply is the answer to a request of a test's client: its result, or
// its error.
type Reply struct{ Result, Error json.RawMessage }

// Pending pairs the requests of a test's client that speaks JSON-RPC by
// hand with their answers. The zero value is ready to use.
type Pending struct {
	mu      sync.Mutex
	next    int
	waiting map[int]chan Reply
}

// Start gives a new request its id, and the channel its answer will come
// on.
func (p *Pending) Start() (int, <-chan Reply) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting == nil {
		p.waiting = map[int]chan Reply{}
	}
	p.next++
	ch := make(chan Reply, 1)
	p.waiting[p.next] = ch
	return p.next, ch
}

// Answer passes a response (a message without a method) to the request
// it answers; one that answers none of them is dropped.
func (p *Pending) Answer(m Message) {
	var id int
	if json.Unmarshal(m.ID, &id) != nil {
		return
	}
	p.mu.Lock()
	ch := p.waiting[id]
	delete(p.waiting, id)
	p.mu.Unlock()
	if ch != nil {
		ch <- Reply{m.Result, m.Error}
	}
}

// InitializeRequest is a client's initialize of MCP 2025-11-25, id 1.
const InitializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// Post sends one JSON-RPC message the way a Streamable HTTP client does,
// with header's extra headers, and returns the response and its body.
func Post(t testing.TB, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Post2026 sends one request of MCP 2026-07-28 (no session) over HTTP,
// with its Mcp-Method and Mcp-Name headers (name, if not empty: a tool's,
// a prompt's, a task's id) and a client's own (hdr: its token, its task),
// and returns the JSON-RPC message of the answer, of a JSON body or an
// event stream.
func Post2026(t testing.TB, url string, hdr http.Header, method, name string, params map[string]any) string {
	t.Helper()
	resp := Open2026(context.Background(), t, url, hdr, method, name, params)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	for l := range strings.SplitSeq(body, "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			return d
		}
	}
	return body
}

// Open2026 sends what Post2026 does, for a test that reads the answer as
// it comes (an event stream): it returns the response with its body open,
// for the caller to close. ctx ends the request.
func Open2026(ctx context.Context, t testing.TB, url string, hdr http.Header, method, name string, params map[string]any) *http.Response {
	t.Helper()
	body := JSON(t, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, hdr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// SeriesValue is the value of the first series of family f that match
// accepts (a histogram's: its sample count), and whether there is one.
func SeriesValue(f *dto.MetricFamily, match func(*dto.Metric) bool) (float64, bool) {
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		if !match(m) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TextResult is a tool result of one text item.
func TextResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// HeaderTransport sends every request with its headers added (a client's
// token, its task), by http.DefaultTransport.
type HeaderTransport struct{ Header http.Header }

func (t HeaderTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	maps.Copy(r.Header, t.Header)
	return http.DefaultTransport.RoundTrip(r)
}

// Connect2026 connects client over tr and fails t unless MCP 2026-07-28
// is the version negotiated; the session is closed when the test ends.
func Connect2026(ctx context.Context, t testing.TB, client *mcp.Client, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	return cs
}

// Buffer is a bytes.Buffer that goroutines may write to and read at once
// (a log written by several, read by the test).
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Session is a Streamable HTTP session of MCP 2025-11-25 driven by hand,
// to see what the SDKs hide: when headers arrive, event ids, retry
// fields. Its requests carry ID as Mcp-Session-Id once the test has set
// it (from the answer to initialize), and end with Ctx (nil: with the
// test).
type Session struct {
	T   testing.TB
	URL string
	ID  string
	Ctx context.Context
}

// Request is a request of the session with method and body.
func (s *Session) Request(method, body string) *http.Request {
	s.T.Helper()
	ctx := s.Ctx
	if ctx == nil {
		ctx = s.T.Context()
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL, strings.NewReader(body))
	if err != nil {
		s.T.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if s.ID != "" {
		req.Header.Set("Mcp-Session-Id", s.ID)
	}
	return req
}

// Post sends a message and returns the response as soon as its headers
// are in.
func (s *Session) Post(body string) *http.Response {
	s.T.Helper()
	resp, err := http.DefaultClient.Do(s.Request(http.MethodPost, body))
	if err != nil {
		s.T.Fatal(err)
	}
	return resp
}
