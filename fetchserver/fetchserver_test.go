package fetchserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/rewrite"
)

// These tests drive the server as a client would: a real MCP session over
// in-memory transports, against httptest servers on loopback.

// testTimeout bounds every call; nothing should come near it.
const testTimeout = 30 * time.Second

// connect starts a fetch server with opts and returns a client session.
// Loopback test servers need AllowPrivateNetworks, which tests set unless
// they test the refusal.
func connect(t *testing.T, opts *Options) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := New(opts).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// call calls fetch and returns its text and isError; a protocol error
// fails the test, as fetch must always answer with a result.
func call(t *testing.T, cs *mcp.ClientSession, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: args})
	if err != nil {
		t.Fatalf("fetch %v: protocol error %v (want a result)", args, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

// mustFetch fetches url and fails unless the result is a success.
func mustFetch(t *testing.T, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	text, isErr := call(t, cs, args)
	if isErr {
		t.Fatalf("fetch %v: isError: %s", args, text)
	}
	return text
}

// mustFail fetches and fails unless the result is an error containing
// each of want.
func mustFail(t *testing.T, cs *mcp.ClientSession, args any, want ...string) string {
	t.Helper()
	text, isErr := call(t, cs, args)
	if !isErr {
		t.Fatalf("fetch %v: want isError, got: %s", args, text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("fetch %v: error %q lacks %q", args, text, w)
		}
	}
	return text
}

// serve returns an httptest server answering every path with body.
func serve(t *testing.T, contentType, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

var allowLoopback = &Options{AllowPrivateNetworks: true}

func TestArticleToMarkdown(t *testing.T) {
	page, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, "text/html; charset=utf-8", string(page))
	cs := connect(t, allowLoopback)
	md := mustFetch(t, cs, map[string]any{"url": srv.URL + "/science/tidal-locking"})

	for _, want := range []string{
		"# Tidal Locking Explained\n",
		"## How gravity brakes a spinning moon",
		"Astronomers call this **tidal locking**",
		"[3.8 centimetres a year](" + srv.URL + "/data/lunar-laser-ranging)", // relative link made absolute
		"| Charon | Pluto (mutually) | 6.4 days",                             // table plugin
		"```\nt_lock",                                                        // code block
		"- Closer moons lock much faster",
		"> Every large moon",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	for _, noise := range []string{"NAV-MARKER", "SIDEBAR-MARKER", "SCRIPT-MARKER", "FOOTER-MARKER", "NOSCRIPT-MARKER", "trackPageview", "font-family", "<script", "Subscribe"} {
		if strings.Contains(md, noise) {
			t.Errorf("Markdown contains page chrome %q", noise)
		}
	}
	if t.Failed() {
		t.Logf("Markdown:\n%s", md)
	}
}

func TestShortPageKeepsContentDropsNav(t *testing.T) {
	srv := serve(t, "text/html", `<html><head><title>Status</title></head><body>
		<header><a href="/">Home</a><nav><a href="/help">Help</a></nav></header>
		<h1>Service status</h1><p>All systems operational.</p>
		<footer>Footer text</footer></body></html>`)
	cs := connect(t, allowLoopback)
	md := mustFetch(t, cs, map[string]any{"url": srv.URL})
	for _, want := range []string{"# Status", "Service status", "All systems operational."} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	for _, noise := range []string{"Home", "Help", "Footer text"} {
		if strings.Contains(md, noise) {
			t.Errorf("Markdown contains %q:\n%s", noise, md)
		}
	}
}

func TestPageWithoutText(t *testing.T) {
	// A single-page app: the text would come from JavaScript.
	srv := serve(t, "text/html", `<html><head><title>App</title><script src="/app.js"></script></head><body><div id="root"></div></body></html>`)
	cs := connect(t, allowLoopback)
	mustFail(t, cs, map[string]any{"url": srv.URL}, "no readable text", "JavaScript", "raw=true")
	src := mustFetch(t, cs, map[string]any{"url": srv.URL, "raw": true})
	if !strings.Contains(src, `<div id="root">`) {
		t.Errorf("raw=true did not return the HTML source: %q", src)
	}
}

func TestTextTypes(t *testing.T) {
	cs := connect(t, allowLoopback)
	for _, tc := range []struct{ contentType, body string }{
		{"text/plain; charset=utf-8", "line one\n  <b>not HTML</b> ünïcode\n"},
		{"application/json", `{"answer": 42}`},
		{"text/csv", "a,b\n1,2\n"},
		{"application/octet-stream", "plain text served as octets\n"}, // sniffed
		{"", "no content type at all\n"},                              // sniffed
	} {
		srv := serve(t, tc.contentType, tc.body)
		if tc.contentType == "" {
			srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil // stop net/http from sniffing one in
				fmt.Fprint(w, tc.body)
			})
		}
		if got := mustFetch(t, cs, map[string]any{"url": srv.URL}); got != tc.body {
			t.Errorf("%q: got %q, want the body as is, %q", tc.contentType, got, tc.body)
		}
	}
}

func TestEmptyResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	cs := connect(t, allowLoopback)
	if got := mustFetch(t, cs, map[string]any{"url": srv.URL}); !strings.Contains(got, "was empty: HTTP 204 No Content") {
		t.Errorf("204: got %q", got)
	}
}

func TestCharsetDecoding(t *testing.T) {
	cs := connect(t, allowLoopback)
	latin1 := "caf\xe9 cr\xe8me\n" // ISO-8859-1
	srv := serve(t, "text/plain; charset=iso-8859-1", latin1)
	if got := mustFetch(t, cs, map[string]any{"url": srv.URL}); got != "café crème\n" {
		t.Errorf("ISO-8859-1 text decoded as %q", got)
	}
	srv = serve(t, "text/html", `<html><head><meta charset="windows-1252"><title>T</title></head><body><p>na`+"\xef"+`ve r`+"\xe9"+`sum`+"\xe9"+`</p></body></html>`)
	if got := mustFetch(t, cs, map[string]any{"url": srv.URL}); !strings.Contains(got, "naïve résumé") {
		t.Errorf("windows-1252 HTML decoded as %q", got)
	}
}

func TestRawReturnsSource(t *testing.T) {
	page := `<html><head><title>T</title><script>var x = 1;</script></head><body><nav>menu</nav><p>Body text.</p></body></html>`
	srv := serve(t, "text/html", page)
	cs := connect(t, allowLoopback)
	if got := mustFetch(t, cs, map[string]any{"url": srv.URL, "raw": true}); got != page {
		t.Errorf("raw=true: got %q, want the page as sent", got)
	}
}

func TestTruncationAndPaging(t *testing.T) {
	// 50 characters, many of them multi-byte: limits count characters.
	body := strings.Repeat("ab€d😀", 10)
	srv := serve(t, "text/plain; charset=utf-8", body)
	cs := connect(t, allowLoopback)
	runes := []rune(body)

	first := mustFetch(t, cs, map[string]any{"url": srv.URL, "max_length": 20})
	want := string(runes[:20]) + "\n\n<content truncated: 50 characters in all; call again with start_index=20 to read more>"
	if first != want {
		t.Errorf("first part:\n got %q\nwant %q", first, want)
	}
	second := mustFetch(t, cs, map[string]any{"url": srv.URL, "max_length": 20, "start_index": 20})
	if !strings.HasPrefix(second, string(runes[20:40])+"\n\n<content truncated:") || !strings.Contains(second, "start_index=40 ") {
		t.Errorf("second part: %q", second)
	}
	last := mustFetch(t, cs, map[string]any{"url": srv.URL, "max_length": 20, "start_index": 40})
	if last != string(runes[40:]) {
		t.Errorf("last part: got %q, want %q with no note", last, string(runes[40:]))
	}
	// Integers as models sometimes send them.
	if got := mustFetch(t, cs, map[string]any{"url": srv.URL, "max_length": "20", "start_index": 40.0}); got != last {
		t.Errorf("string/float integers: got %q", got)
	}
	mustFail(t, cs, map[string]any{"url": srv.URL, "start_index": 50}, "start_index=50 is past the end", "50 characters")

	// The default max_length is DefaultMaxLength.
	long := strings.Repeat("x", DefaultMaxLength+5)
	srv = serve(t, "text/plain", long)
	got := mustFetch(t, cs, map[string]any{"url": srv.URL})
	if !strings.HasPrefix(got, long[:DefaultMaxLength]+"\n\n<content truncated:") || !strings.Contains(got, fmt.Sprintf("start_index=%d", DefaultMaxLength)) {
		t.Errorf("default max_length: result of %d chars ends %q", len(got), got[len(got)-100:])
	}
}

func TestHTTPErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/limited":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/broken":
			http.Error(w, "oops", http.StatusInternalServerError)
		case "/forbidden":
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	t.Cleanup(srv.Close)
	cs := connect(t, allowLoopback)
	mustFail(t, cs, map[string]any{"url": srv.URL + "/missing"}, "HTTP 404 Not Found", srv.URL+"/missing", "does not exist")
	mustFail(t, cs, map[string]any{"url": srv.URL + "/limited"}, "HTTP 429 Too Many Requests", "Retry-After: 120", "Wait")
	mustFail(t, cs, map[string]any{"url": srv.URL + "/broken"}, "HTTP 500 Internal Server Error", "Try again later")
	mustFail(t, cs, map[string]any{"url": srv.URL + "/forbidden"}, "HTTP 403 Forbidden", "refuses access")
}

func TestTimeout(t *testing.T) {
	var started atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Add(1)
		if r.URL.Path == "/slow-body" {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "the first part ")
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done() // until the fetcher gives up and hangs up
	}))
	t.Cleanup(srv.Close)
	cs := connect(t, &Options{AllowPrivateNetworks: true, Timeout: 300 * time.Millisecond})
	mustFail(t, cs, map[string]any{"url": srv.URL + "/no-answer"}, "Timed out after 300ms", srv.URL+"/no-answer")
	mustFail(t, cs, map[string]any{"url": srv.URL + "/slow-body"}, "Timed out after 300ms", "Try again later")
	if started.Load() != 2 {
		t.Errorf("server saw %d requests, want 2", started.Load())
	}
}

func TestOversizeBody(t *testing.T) {
	srv := serve(t, "text/plain", strings.Repeat("0123456789", 500)) // 5000 bytes
	cs := connect(t, &Options{AllowPrivateNetworks: true, MaxBytes: 1024})
	got := mustFetch(t, cs, map[string]any{"url": srv.URL})
	wantText := strings.Repeat("0123456789", 103)[:1024]
	if !strings.HasPrefix(got, wantText+"\n\n") {
		t.Errorf("oversize body: want the first 1024 bytes, got %q", got)
	}
	if !strings.Contains(got, "<response cut at 1 KiB: the page is longer than the size limit, and the rest was not read>") {
		t.Errorf("oversize body: no note about the limit in %q", got[1024:])
	}
	// A body of exactly the limit is whole.
	srv = serve(t, "text/plain", strings.Repeat("x", 1024))
	if got := mustFetch(t, cs, map[string]any{"url": srv.URL}); strings.Contains(got, "response cut") {
		t.Errorf("a body of exactly MaxBytes was reported cut")
	}
}

func TestUnsupportedContentTypes(t *testing.T) {
	cs := connect(t, allowLoopback)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	for _, tc := range []struct{ contentType, body, want string }{
		{"image/png", png, "content type image/png is not supported"},
		{"application/pdf", "%PDF-1.7\n", "content type application/pdf is not supported"},
		{"image/svg+xml", "<svg></svg>", "content type image/svg+xml is not supported"},
		{"application/octet-stream", png, "content type application/octet-stream, whose bytes look like image/png, is not supported"}, // sniffed
		{"text/event-stream", "data: x\n\n", "content type text/event-stream is not supported"},
	} {
		srv := serve(t, tc.contentType, tc.body)
		mustFail(t, cs, map[string]any{"url": srv.URL}, tc.want, "web pages and text only")
	}
}

func TestInvalidArguments(t *testing.T) {
	cs := connect(t, allowLoopback)
	for _, tc := range []struct {
		args any
		want string
	}{
		{map[string]any{}, "url is required"},
		{map[string]any{"url": ""}, "url is required"},
		{map[string]any{"url": 42}, "url must be a string"},
		{map[string]any{"url": "file:///etc/passwd"}, `the "file" scheme is not supported: fetch reads http and https URLs only`},
		{map[string]any{"url": "ftp://example.com/x"}, `the "ftp" scheme is not supported`},
		{map[string]any{"url": "javascript:alert(1)"}, `the "javascript" scheme is not supported`},
		{map[string]any{"url": "example.com/page"}, "has no scheme: give a full URL such as https://example.com/page"},
		{map[string]any{"url": "http://"}, "has no host name"},
		{map[string]any{"url": "http://exa mple.com/"}, "Invalid URL"},
		{map[string]any{"url": "https://example.com", "max_length": 0}, "max_length must be at least 1"},
		{map[string]any{"url": "https://example.com", "max_length": "lots"}, `max_length must be a whole number, got "lots"`},
		{map[string]any{"url": "https://example.com", "start_index": 1.5}, "start_index must be a whole number, got 1.5"},
		{map[string]any{"url": "https://example.com", "start_index": -1}, "start_index must be 0 or more"},
		{map[string]any{"url": "https://example.com", "raw": "maybe"}, "raw must be true or false"},
		{map[string]any{"url": "https://example.com", "timeout": 5}, `unknown argument "timeout": fetch takes url, max_length, start_index and raw`},
	} {
		mustFail(t, cs, tc.args, tc.want)
	}
}

func TestPrivateNetworksRefused(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "secret")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	cs := connect(t, &Options{})

	// A literal address is refused before any connection.
	mustFail(t, cs, map[string]any{"url": srv.URL}, "Refused to fetch", "127.0.0.1 is a loopback address", "--allow-private-networks")
	// A name is refused at dial time, on the address it resolved to: the
	// check that DNS rebinding and redirects cannot get around.
	mustFail(t, cs, map[string]any{"url": "http://localhost:" + port + "/"}, "Refused to fetch", "is a loopback address")
	mustFail(t, cs, map[string]any{"url": "http://[::ffff:127.0.0.1]:" + port + "/"}, "is a loopback address")
	mustFail(t, cs, map[string]any{"url": "http://10.1.2.3/"}, "10.1.2.3 is a private network address")
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}

func TestMetadataAlwaysRefused(t *testing.T) {
	// Even with private networks allowed; none of these is ever dialed.
	cs := connect(t, allowLoopback)
	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data/",
		"http://[fe80::1]/",
		"http://[::ffff:169.254.169.254]/",
		"http://[64:ff9b::a9fe:a9fe]/", // NAT64 form of 169.254.169.254
		"http://[fd00:ec2::254]/",
	} {
		mustFail(t, cs, map[string]any{"url": u}, "Refused to fetch", "never fetched")
	}
	for _, u := range []string{"http://metadata.google.internal/computeMetadata/v1/", "http://Metadata.Google.Internal./", "http://metadata/"} {
		mustFail(t, cs, map[string]any{"url": u}, "is a cloud metadata service")
	}
}

func TestRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		switch {
		case r.URL.Path == "/final":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "arrived")
		case r.URL.Path == "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case r.URL.Path == "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/", http.StatusFound)
		case r.URL.Path == "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		default:
			if _, err := fmt.Sscanf(r.URL.Path, "/hop/%d", &n); err == nil && n > 0 {
				http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusMovedPermanently)
			} else {
				http.Redirect(w, r, "/final", http.StatusFound)
			}
		}
	}))
	t.Cleanup(srv.Close)
	cs := connect(t, allowLoopback)
	got := mustFetch(t, cs, map[string]any{"url": srv.URL + "/hop/9"}) // 9 hops to /hop/0, one more to /final
	if got != "Redirected to: "+srv.URL+"/final\n\narrived" {
		t.Errorf("10 redirects: got %q", got)
	}
	mustFail(t, cs, map[string]any{"url": srv.URL + "/hop/10"}, "stopped after 10 redirects")
	mustFail(t, cs, map[string]any{"url": srv.URL + "/loop"}, "stopped after 10 redirects")
	mustFail(t, cs, map[string]any{"url": srv.URL + "/to-metadata"}, "169.254.169.254 is a link-local address")
	mustFail(t, cs, map[string]any{"url": srv.URL + "/to-file"}, `the "file" scheme is not supported`)
}

// A redirect to a URL that a rule of the call refuses (rewrite.RefusalsMetaKey
// in its _meta) is not followed: the answer is the rule's message. The same
// redirect is followed for a call without rules, and a target elsewhere.
func TestRedirectsHeldToTheCallsRules(t *testing.T) {
	var srv *httptest.Server
	// An open redirect: /go/N redirects to targets[N], which the URL of
	// the call does not show.
	var (
		mu      sync.Mutex
		targets []string
	)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Sscanf(r.URL.Path, "/go/%d", &n); err == nil && n < len(targets) {
			http.Redirect(w, r, strings.ReplaceAll(targets[n], "SRV", srv.URL), http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "page "+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	cs := connect(t, allowLoopback)
	rules := []rewrite.Refusal{{Rule: "no-answers", BlockURLs: []string{"127.0.0.1/datasets/**"}, Message: "Do not read the answers."}}
	fetch := func(to string, meta mcp.Meta) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		mu.Lock()
		targets = append(targets, to)
		n := len(targets) - 1
		mu.Unlock()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{"url": fmt.Sprintf("%s/go/%d", srv.URL, n)}, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	withRules := mcp.Meta{rewrite.RefusalsMetaKey: rules}
	for _, to := range []string{"/datasets/x", "/DATASETS/./x/", "SRV/models/../datasets/y", "/proxy/SRV/datasets/z", "/go/0"} {
		text, isErr := fetch(to, withRules)
		if !isErr || !strings.HasPrefix(text, "Do not read the answers. [Not fetched: ") || !strings.Contains(text, "rule 'no-answers'") {
			t.Errorf("redirect to %s under the rule: isError=%v %q", to, isErr, text)
		}
	}
	if text, isErr := fetch("/models/x", withRules); isErr || !strings.HasSuffix(text, "page /models/x") {
		t.Errorf("redirect elsewhere under the rule: isError=%v %q", isErr, text)
	}
	if text, isErr := fetch("/datasets/x", nil); isErr || !strings.HasSuffix(text, "page /datasets/x") {
		t.Errorf("redirect without rules: isError=%v %q", isErr, text)
	}
	text, isErr := call(t, cs, map[string]any{"url": srv.URL + "/datasets/direct"})
	if isErr || !strings.HasSuffix(text, "page /datasets/direct") {
		t.Errorf("direct fetch without rules: %q", text)
	}
	if _, isErr := fetch("/x", mcp.Meta{rewrite.RefusalsMetaKey: "not a list"}); !isErr {
		t.Error("malformed rules were ignored")
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cs := connect(t, allowLoopback)
	mustFail(t, cs, map[string]any{"url": "http://" + addr + "/"}, "Connection refused by "+addr, "Check the URL")
}

func TestUserAgent(t *testing.T) {
	ua := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua <- r.UserAgent()
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	cs := connect(t, &Options{AllowPrivateNetworks: true, Version: "v1.2.3"})
	mustFetch(t, cs, map[string]any{"url": srv.URL})
	if got := <-ua; got != "mcpmux-fetch/v1.2.3" {
		t.Errorf("User-Agent = %q", got)
	}
}

func TestToolListing(t *testing.T) {
	cs := connect(t, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "fetch" {
		t.Fatalf("tools = %v, want just fetch", res.Tools)
	}
	schema := res.Tools[0].InputSchema.(map[string]any)
	if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != "url" {
		t.Errorf("required = %v, want [url]", schema["required"])
	}
	props := schema["properties"].(map[string]any)
	if d := props["max_length"].(map[string]any)["default"]; d != float64(DefaultMaxLength) {
		t.Errorf("max_length default = %v", d)
	}
}
