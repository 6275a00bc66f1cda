package stdioconn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peer is the other end of a Conn under test: what it writes the Conn
// reads, and it reads what the Conn writes, line by line.
type peer struct {
	t       *testing.T
	conn    *Conn
	in      *io.PipeWriter // the Conn's input
	out     *bufio.Reader  // the Conn's output
	closes  int
	mu      sync.Mutex
	written []string // lines written through write
}

func newPeer(t *testing.T, opts Options) *peer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &peer{t: t, in: inW, out: bufio.NewReader(outR)}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p.conn = newConn(inR, outW, func() error {
		p.mu.Lock()
		p.closes++
		p.mu.Unlock()
		return errors.Join(inR.Close(), outW.Close())
	}, opts)
	t.Cleanup(func() { p.conn.Close() })
	return p
}

// send writes s to the Conn's input; it returns once the Conn's read loop
// has taken all of it. It may run on a goroutine of its own.
func (p *peer) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, s); err != nil {
		p.t.Errorf("sending: %v", err)
	}
}

// readMsg is the next message the Conn delivers.
func (p *peer) readMsg() jsonrpc.Message {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msg, err := p.conn.Read(ctx)
	if err != nil {
		p.t.Fatalf("Read: %v", err)
	}
	return msg
}

// line is the next line the Conn writes.
func (p *peer) line() string {
	p.t.Helper()
	l, err := p.out.ReadString('\n')
	if err != nil {
		p.t.Fatalf("reading the Conn's output: %v", err)
	}
	return strings.TrimSuffix(l, "\n")
}

func (p *peer) write(msg jsonrpc.Message) {
	p.t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.conn.Write(context.Background(), msg) }()
	p.written = append(p.written, p.line())
	if err := <-done; err != nil {
		p.t.Fatalf("Write: %v", err)
	}
}

func id(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	i, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// Messages are written byte for byte as the go-sdk encodes them (its key
// order, no HTML escaping), their raw values as they are.
func TestWriteAsTheSDK(t *testing.T) {
	msgs := []jsonrpc.Message{
		&jsonrpc.Request{ID: id(t, float64(7)), Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"text":"<a&b> é \u2028 \"q\""}}`)},
		&jsonrpc.Request{ID: id(t, "mcpmux-1"), Method: "tools/list"},
		&jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)},
		&jsonrpc.Request{Method: "odd\tmethod<>é\"", Params: json.RawMessage(`null`)},
		&jsonrpc.Response{ID: id(t, "a\"b"), Result: json.RawMessage(`{"content":[{"type":"text","text":"hi"}]}`)},
		&jsonrpc.Response{ID: id(t, float64(3)), Error: &jsonrpc.Error{Code: -32602, Message: "bad <params>", Data: json.RawMessage(`{"x":1}`)}},
		&jsonrpc.Response{ID: id(t, float64(4)), Error: fmt.Errorf("wrapped: %w", &jsonrpc.Error{Code: -32042, Message: "inner"})},
		&jsonrpc.Response{ID: id(t, float64(5)), Error: errors.New("plain")},
		&jsonrpc.Response{ID: id(t, float64(6))},
	}
	for _, m := range msgs {
		want, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendMessage(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("wrote\n%s\nthe go-sdk writes\n%s", got, want)
		}
	}
	// A raw value with line breaks is compacted (it would end the line);
	// one without is written as it is.
	got, _ := appendMessage(nil, &jsonrpc.Response{ID: id(t, float64(1)), Result: json.RawMessage("{\n  \"a\": [1, 2]\n}")})
	if want := `{"jsonrpc":"2.0","id":1,"result":{"a":[1,2]}}`; string(got) != want {
		t.Errorf("with line breaks: %s, want %s", got, want)
	}
	got, _ = appendMessage(nil, &jsonrpc.Response{ID: id(t, float64(1)), Result: json.RawMessage(`{"a": [1, 2]}`)})
	if want := `{"jsonrpc":"2.0","id":1,"result":{"a": [1, 2]}}`; string(got) != want {
		t.Errorf("without: %s, want %s", got, want)
	}
}

// Every line is read as the go-sdk's decoder reads it: the same message,
// or an error where it has one.
func TestDecodeAsTheSDK(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":"s-1","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
		`{"jsonrpc":"2.0","method":"","id":2}`,
		`{"result":{"content":[]},"jsonrpc":"2.0","id":9}`,
		`{"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"no","data":[1]}}`,
		`{"jsonrpc":"2.0","id":9.0,"result":{}}`,
		`{"jsonrpc":"2.0","id":"é\u00e9","result":{"x":"\ud83d\ude00"}}`,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":{},"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x"} trailing`,
		`{"jsonrpc":"2.0","id":1,"method":"x"`,
		`{"JSONRPC":"2.0","ID":1,"Method":"x"}`,
		`not json`,
		strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
		`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
	}
	for _, l := range lines {
		want, wantErr := jsonrpc.DecodeMessage([]byte(l))
		if l == `{"jsonrpc":"2.0","id":1,"method":"x"} trailing` {
			wantErr = errors.New("the go-sdk's reader refuses data after a value")
		}
		got, err := decodeMessage([]byte(l))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%.60s: error %v, the go-sdk's %v", l, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Errorf("%.60s:\n got %#v\nwant %#v", l, got, want)
		}
	}
}

// normalize makes raw values comparable (nil and empty alike).
func normalize(m jsonrpc.Message) jsonrpc.Message {
	switch m := m.(type) {
	case *jsonrpc.Request:
		c := *m
		if len(c.Params) == 0 {
			c.Params = nil
		}
		return &c
	case *jsonrpc.Response:
		c := *m
		if len(c.Result) == 0 {
			c.Result = nil
		}
		return &c
	}
	return m
}

// A message cut anywhere, arriving in pieces, is read whole; a line longer
// than the read buffer too; blank lines and CRLF endings are skipped.
func TestPartialLines(t *testing.T) {
	p := newPeer(t, Options{})
	big := strings.Repeat("x", 3*readBufferSize+17)
	stream := `{"jsonrpc":"2.0","id":1,"method":"a","params":{}}` + "\r\n\n" +
		`{"jsonrpc":"2.0","id":2,"method":"b","params":{"t":"` + big + `"}}` + "\n" +
		`  {"jsonrpc":"2.0","id":3,"result":{}}  ` + "\n"
	go func() {
		for i := 0; i < len(stream); {
			n := min(1+i%7, len(stream)-i)
			if i > 100 && i < len(stream)-200 {
				n = min(4093, len(stream)-i)
			}
			if _, err := io.WriteString(p.in, stream[i:i+n]); err != nil {
				return
			}
			i += n
		}
	}()
	if r, ok := p.readMsg().(*jsonrpc.Request); !ok || r.Method != "a" {
		t.Fatalf("first: %#v", r)
	}
	r, ok := p.readMsg().(*jsonrpc.Request)
	if !ok || r.Method != "b" || !bytes.Contains(r.Params, []byte(big)) {
		t.Fatalf("second (%d bytes of params): %v", len(r.Params), ok)
	}
	if resp, ok := p.readMsg().(*jsonrpc.Response); !ok || resp.ID != id(t, float64(3)) {
		t.Fatalf("third: %#v", resp)
	}
}

// The last line without its newline is read at the end of the stream,
// then io.EOF.
func TestLastLineWithoutNewline(t *testing.T) {
	p := newPeer(t, Options{})
	go func() {
		io.WriteString(p.in, `{"jsonrpc":"2.0","id":1,"method":"a"}`)
		p.in.Close()
	}()
	if r, ok := p.readMsg().(*jsonrpc.Request); !ok || r.Method != "a" {
		t.Fatalf("got %#v", r)
	}
	if _, err := p.conn.Read(context.Background()); err != io.EOF {
		t.Fatalf("then %v, want io.EOF", err)
	}
}

// A line over the bound is never buffered: an answer becomes an error
// answer of its id (wherever the id is in it), a request gets an error
// reply, anything else is dropped; the next message comes through.
func TestLineOverTheBound(t *testing.T) {
	const bound = 1000
	p := newPeer(t, Options{MaxMessageBytes: bound})
	pad := strings.Repeat(`\"x{[,:`, 400)
	go func() {
		// An answer with its id last (as the TypeScript SDK writes), with
		// nested "id" keys and strings with brackets before it.
		p.send(`{"result":{"content":[{"type":"text","text":"` + pad + `","id":5}]},"jsonrpc":"2.0","id":"mcpmux-7"}` + "\n")
		// A request of the peer.
		p.send(`{"jsonrpc":"2.0","id":12,"method":"sampling/createMessage","params":{"x":"` + pad + `"}}` + "\n")
		// A notification.
		p.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"x":"` + pad + `"}}` + "\n")
		p.send(`{"jsonrpc":"2.0","id":13,"method":"ping"}` + "\n")
	}()
	resp, ok := p.readMsg().(*jsonrpc.Response)
	if !ok || resp.ID != id(t, "mcpmux-7") || resp.Error == nil || !strings.Contains(resp.Error.Error(), "over the bound of a message on stdio (1000 bytes)") {
		t.Fatalf("the oversized answer became %#v", resp)
	}
	var reply struct {
		ID    any            `json:"id"`
		Error *jsonrpc.Error `json:"error"`
	}
	if err := json.Unmarshal([]byte(p.line()), &reply); err != nil || reply.ID != float64(12) || reply.Error == nil || reply.Error.Code != jsonrpc.CodeInvalidRequest {
		t.Fatalf("the oversized request got %+v (%v)", reply, err)
	}
	if r, ok := p.readMsg().(*jsonrpc.Request); !ok || r.Method != "ping" {
		t.Fatalf("next: %#v", r)
	}
}

// initialize answers the initialize request (read from the peer, as a
// server) with version v.
func initialize(t *testing.T, p *peer, v string) {
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + v + `"}}` + "\n")
	p.readMsg()
	p.write(&jsonrpc.Response{ID: id(t, float64(0)), Result: json.RawMessage(`{"protocolVersion":"` + v + `"}`)})
}

const batchOfTwo = `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"b","method":"ping"}]` + "\n"

// Batches are refused once the protocol version forbids them: learnt from
// the initialize exchange, or the _meta of a 2026-07-28 request; each
// request of the batch gets an error, and the connection goes on.
func TestBatchRefused(t *testing.T) {
	for _, how := range []string{"initialize 2025-06-18", "initialize 2025-11-25", "2026 request", "client side"} {
		t.Run(how, func(t *testing.T) {
			p := newPeer(t, Options{Role: Server})
			switch how {
			case "client side":
				// The Conn sends initialize, and reads its answer.
				p = newPeer(t, Options{Role: Client})
				p.write(&jsonrpc.Request{ID: id(t, float64(0)), Method: "initialize", Params: json.RawMessage(`{"protocolVersion":"2025-11-25"}`)})
				p.send(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}` + "\n")
				p.readMsg()
			case "2026 request":
				p.send(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n")
				p.readMsg()
			default:
				initialize(t, p, strings.TrimPrefix(how, "initialize "))
			}
			go p.send(batchOfTwo + `{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
			for _, want := range []string{`"id":1,`, `"id":"b",`} {
				l := p.line()
				if !strings.Contains(l, want) || !strings.Contains(l, `"code":-32600`) || !strings.Contains(l, "JSON-RPC batching is not supported") {
					t.Fatalf("reply %s, want an error for %s", l, want)
				}
			}
			if r, ok := p.readMsg().(*jsonrpc.Request); !ok || r.ID != id(t, float64(3)) {
				t.Fatalf("after the batch: %#v", r)
			}
		})
	}
}

// Before 2025-06-18 (or before any version is known, as with the go-sdk)
// a batch is read, and its answers go back as one array once all are in.
func TestBatchAnswered(t *testing.T) {
	p := newPeer(t, Options{Role: Server})
	initialize(t, p, "2025-03-26")
	go p.send(batchOfTwo)
	var reqs []*jsonrpc.Request
	for range 3 {
		reqs = append(reqs, p.readMsg().(*jsonrpc.Request))
	}
	if reqs[1].Method != "notifications/x" {
		t.Fatalf("batch read as %v", reqs)
	}
	// Answered in the other order: nothing is written until both are.
	if err := p.conn.Write(context.Background(), &jsonrpc.Response{ID: reqs[2].ID, Result: json.RawMessage(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	p.write(&jsonrpc.Response{ID: reqs[0].ID, Result: json.RawMessage(`{"n":1}`)})
	if got, want := p.written[len(p.written)-1], `[{"jsonrpc":"2.0","id":1,"result":{"n":1}},{"jsonrpc":"2.0","id":"b","result":{"n":2}}]`; got != want {
		t.Fatalf("batch answer %s, want %s", got, want)
	}
}

// A line that is not JSON-RPC ends nothing: a server answers it with a
// parse error (JSON-RPC 2.0 §5.1), a client drops it.
func TestNotJSONRPC(t *testing.T) {
	t.Run("server", func(t *testing.T) {
		p := newPeer(t, Options{Role: Server})
		go p.send("hello\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
		if l := p.line(); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,`) {
			t.Fatalf("reply %s", l)
		}
		if r, ok := p.readMsg().(*jsonrpc.Request); !ok || r.Method != "ping" {
			t.Fatalf("next: %#v", r)
		}
	})
	t.Run("client", func(t *testing.T) {
		var logs bytes.Buffer
		var mu sync.Mutex
		p := newPeer(t, Options{Role: Client, Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))})
		go p.send("Server started on stdio\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
		if r, ok := p.readMsg().(*jsonrpc.Response); !ok || r.ID != id(t, float64(1)) {
			t.Fatalf("next: %#v", r)
		}
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(logs.String(), "Server started on stdio") {
			t.Errorf("the dropped line is not in the log: %s", logs.String())
		}
	})
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close unblocks a waiting Read, runs the close function once however
// often and concurrently it is called, and later Writes fail.
func TestClose(t *testing.T) {
	p := newPeer(t, Options{})
	read := make(chan error, 1)
	go func() {
		_, err := p.conn.Read(context.Background())
		read <- err
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { p.conn.Close() })
	}
	wg.Wait()
	if err := <-read; err != io.EOF {
		t.Errorf("the waiting Read returned %v, want io.EOF", err)
	}
	if p.closes != 1 {
		t.Errorf("closed %d times", p.closes)
	}
	if err := p.conn.Write(context.Background(), &jsonrpc.Request{Method: "x"}); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("Write after Close: %v", err)
	}
}

// Concurrent writes never interleave: each line is one whole message.
func TestConcurrentWrites(t *testing.T) {
	p := newPeer(t, Options{})
	const writers, each = 8, 50
	big := strings.Repeat("y", 100<<10)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				params := json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d,"pad":"%s"}`, w, i, big[:(w*each+i)%len(big)]))
				if err := p.conn.Write(context.Background(), &jsonrpc.Request{Method: "n", Params: params}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := map[string]bool{}
	for range writers * each {
		l := p.line()
		m, err := jsonrpc.DecodeMessage([]byte(l))
		if err != nil {
			t.Fatalf("a line is not one message: %v", err)
		}
		var k struct{ W, I int }
		json.Unmarshal(m.(*jsonrpc.Request).Params, &k)
		seen[fmt.Sprint(k.W, k.I)] = true
	}
	wg.Wait()
	if len(seen) != writers*each {
		t.Errorf("%d distinct messages, want %d", len(seen), writers*each)
	}
}

// Real MCP sessions over two Conns, in both protocol eras: the SDK does
// the protocol on top (initialize or server/discover, tools, a request
// from the server).
func TestMCPSessions(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			ctx := context.Background()
			srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
			mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
				Text string `json:"text"`
			}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
			})
			c2s, s2c := pipes(), pipes()
			ss, err := srv.Connect(ctx, &IOTransport{Reader: c2s.r, Writer: s2c.w, Options: Options{Role: Server}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &clientTransport{r: s2c.r, w: c2s.w}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s", got)
			}
			for i := range 3 {
				text := fmt.Sprintf("<hi & é> %d\n", i)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
				if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != text {
					t.Fatalf("call %d: %v %+v", i, err, res)
				}
			}
		})
	}
}

type pipe struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func pipes() pipe {
	r, w := io.Pipe()
	return pipe{r, w}
}

type clientTransport struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (t *clientTransport) Connect(context.Context) (mcp.Connection, error) {
	return newConn(t.r, t.w, func() error { return errors.Join(t.r.Close(), t.w.Close()) }, Options{Role: Client}), nil
}

// The command transport talks to a child over its stdin and stdout, and
// Close ends it as MCP's stdio shutdown says: stdin closed, then SIGTERM,
// then SIGKILL for a child that ignores both.
func TestCommandTransport(t *testing.T) {
	ctx := context.Background()
	c, err := (&CommandTransport{Command: exec.Command("cat")}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msg := &jsonrpc.Request{ID: id(t, float64(1)), Method: "ping"}
	if err := c.Write(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Read(ctx); err != nil || got.(*jsonrpc.Request).Method != "ping" {
		t.Fatalf("echoed %v, %v", got, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("cat ended with %v", err)
	}

	cmd := exec.Command("sh", "-c", `trap "" TERM; echo ready; while :; do sleep 1; done`)
	c, err = (&CommandTransport{Command: cmd, TerminateDuration: 50 * time.Millisecond, Options: Options{Logger: slog.New(slog.DiscardHandler)}}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("a child ignoring stdin and SIGTERM: Close returned %v, want it killed", err)
	}
}

// BenchmarkCall is one tools/call of a go-sdk client to a go-sdk server
// over OS pipes, each side on the go-sdk's stdio connection
// (mcp.IOTransport) or on this package's, in both protocol eras; bytes
// and allocations per call are both sides' together.
func BenchmarkCall(b *testing.B) {
	for _, conn := range []string{"sdk", "stdioconn"} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			for _, size := range []int{16, 8 << 10} {
				b.Run(fmt.Sprintf("conn=%s/protocol=%s/result=%dB", conn, version, size), func(b *testing.B) {
					benchCall(b, conn == "sdk", version, size)
				})
			}
		}
	}
}

func benchCall(b *testing.B, sdk bool, version string, size int) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	text := strings.Repeat("x", size)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	})
	c2sR, c2sW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	s2cR, s2cW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	var st, ct mcp.Transport
	if sdk {
		st, ct = &mcp.IOTransport{Reader: c2sR, Writer: s2cW}, &mcp.IOTransport{Reader: s2cR, Writer: c2sW}
	} else {
		st = &IOTransport{Reader: c2sR, Writer: s2cW, Options: Options{Role: Server}}
		ct = &IOTransport{Reader: s2cR, Writer: c2sW, Options: Options{Role: Client}}
	}
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		b.Fatalf("negotiated %s", got)
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
