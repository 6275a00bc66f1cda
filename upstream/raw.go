package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// Raw requests.
//
// The go-sdk's ClientSession sends only the methods it knows, and decodes
// every answer into its own types, which drop the fields they do not have
// (a tool's execution, a task's result) and cost a decode and an encode
// per call. A raw request goes around it on the same connection: mcpmux
// writes a jsonrpc.Request of its own on the session's Connection, with an
// id the SDK never uses ("mcpmux-N"), and gets the answer as the server
// sent it, as raw JSON. Everything else on the connection — the SDK's own
// requests, notifications, the server's requests to mcpmux — passes
// through untouched.
//
// Where the answer is taken off depends on the transport:
//
//   - stdio and legacy SSE: the Connection is wrapped (tapConn), and its
//     Read hands answers to raw requests to their callers instead of the
//     SDK;
//   - Streamable HTTP: the SDK's connection cannot be wrapped (the SDK
//     relies on its unexported methods), so it is used as it is, and the
//     answer is read from the HTTP response of the request's POST (and of
//     any GET resuming it) by wireTransport (wire.go), while the SDK,
//     reading the same bytes, drops an answer whose id it does not know.

// rawIDPrefix starts the id of every raw request.
const rawIDPrefix = "mcpmux-"

var rawIDs atomic.Uint64

// rawCalls are the raw requests of one connection waiting for their answer.
type rawCalls struct {
	mu      sync.Mutex
	pending map[string]chan rawAnswer
	err     error         // why the connection ended
	done    chan struct{} // closed when it ended
}

func newRawCalls() *rawCalls {
	return &rawCalls{pending: map[string]chan rawAnswer{}, done: make(chan struct{})}
}

// rawAnswer is what a raw request gets: the server's response, or why
// mcpmux did not read it.
type rawAnswer struct {
	resp *jsonrpc.Response
	err  error
}

// deliver hands resp to the raw request it answers, and reports whether it
// was the answer of one (answers of the SDK's own requests are not).
func (r *rawCalls) deliver(resp *jsonrpc.Response) bool {
	id, ok := resp.ID.Raw().(string)
	if !ok || !strings.HasPrefix(id, rawIDPrefix) {
		return false
	}
	r.answer(id, rawAnswer{resp: resp})
	return true
}

// answer hands a to the raw request id, if it still waits.
func (r *rawCalls) answer(id string, a rawAnswer) {
	r.mu.Lock()
	ch := r.pending[id]
	delete(r.pending, id)
	r.mu.Unlock()
	if ch != nil {
		ch <- a // buffered
	}
}

// end fails the waiting requests with err, what ended the connection (a
// read error, io.EOF, mcp.ErrConnectionClosed).
func (r *rawCalls) end(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		if err == nil {
			err = io.EOF
		}
		r.err = err
		close(r.done)
	}
}

// call sends a raw request with write, which writes a message on the
// session's connection, and waits for its answer: the result as the
// server sent it, or the error (a *jsonrpc.Error for a JSON-RPC error
// answer). When ctx ends first, the server is told the request is
// cancelled, as the SDK does for its own.
func (r *rawCalls) call(ctx context.Context, write func(context.Context, jsonrpc.Message) error, method string, params json.RawMessage) (json.RawMessage, error) {
	id := rawIDPrefix + strconv.FormatUint(rawIDs.Add(1), 10)
	jid, _ := jsonrpc.MakeID(id)
	ch := make(chan rawAnswer, 1)
	r.mu.Lock()
	if r.err != nil {
		err := r.err
		r.mu.Unlock()
		return nil, err
	}
	r.pending[id] = ch
	r.mu.Unlock()
	forget := func() {
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
	}
	// The server is told when the request ends early, as the SDK tells it of
	// its own: best effort, and not on the caller's time.
	cancelled := func() error {
		go func() {
			nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelNotifyTimeout)
			defer cancel()
			params, _ := json.Marshal(&mcp.CancelledParams{RequestID: id, Reason: ctx.Err().Error()})
			_ = write(nctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
		}()
		return ctx.Err()
	}
	if err := write(withRawRequest(ctx, r, id), &jsonrpc.Request{ID: jid, Method: method, Params: params}); err != nil {
		forget()
		if ctx.Err() != nil {
			// Over Streamable HTTP, writing waits for the response's
			// headers, which a server may send only with its answer: the
			// request was sent.
			return nil, cancelled()
		}
		return nil, &notSentError{method: method, err: err}
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, a.err
		}
		if a.resp.Error != nil {
			return nil, a.resp.Error
		}
		return a.resp.Result, nil
	case <-r.done:
		// What ended the connection, as the SDK gives its own requests.
		forget()
		return nil, r.err
	case <-ctx.Done():
		forget()
		return nil, cancelled()
	}
}

// tapConn is the Connection of a stdio or legacy SSE session: it takes the
// answers of raw requests off the stream, and counts the notifications
// answers wait for (see order.go) unless gate is nil.
type tapConn struct {
	mcp.Connection
	gate *progressGate // nil: counted in the HTTP bodies (wireTransport)
	raw  *rawCalls
	// status receives notifications/tasks/status, which the go-sdk drops
	// (mcptasks.go); take takes the requests mcpmux answers itself, and
	// declare is the tasks capability the initialize declares
	// (servertasks.go). All three are nil where the HTTP bodies see the
	// messages (wireTransport, declareTasksBodies).
	status  func(params json.RawMessage)
	take    func(*jsonrpc.Request) bool
	declare json.RawMessage
}

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && c.declare != nil && r.Method == "initialize" {
		declared := *r
		declared.Params = declareTasks(r.Params, c.declare)
		msg = &declared
	}
	return c.Connection.Write(ctx, msg)
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.raw.end(err)
			}
			return nil, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if c.gate != nil && gated(m.Method) {
				c.gate.sawRead()
			}
			if c.status != nil && m.Method == taskStatusMethod {
				c.status(m.Params)
				continue
			}
			if c.take != nil && c.take(m) {
				continue
			}
		case *jsonrpc.Response:
			if c.raw.deliver(m) {
				continue
			}
		}
		return msg, nil
	}
}

func (c *tapConn) Close() error {
	c.raw.end(mcp.ErrConnectionClosed)
	return c.Connection.Close()
}

// tap returns t connecting c's session so that raw requests can be sent
// on it: the Connection is recorded as c.wire, and for every transport but
// Streamable HTTP wrapped in a tapConn. gate, if set, counts the
// notifications read (nil where the HTTP bodies count them).
func (c *conn) tap(t mcp.Transport, gate *progressGate) mcp.Transport {
	return &tapTransport{Transport: t, gate: gate, c: c}
}

type tapTransport struct {
	mcp.Transport
	gate *progressGate
	c    *conn
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	wire, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.c.wire = wire
	if _, streamable := t.Transport.(*mcp.StreamableClientTransport); streamable {
		// Tapped in its HTTP bodies (wireTransport).
		return wire, nil
	}
	tc := &tapConn{Connection: wire, gate: t.gate, raw: t.c.raw}
	if t.gate != nil {
		tc.status = t.c.tasks.taskStatus
		if caps := t.c.features.tasksCapability(); caps != nil {
			tc.take, tc.declare = t.c.asked.take, caps
		}
	}
	return tc, nil
}

// rawCall sends a raw request on the connection and returns the server's
// result as it sent it. params are encoded unless already raw JSON.
func (c *conn) rawCall(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if c.wire == nil {
		return nil, errNoRawWire
	}
	raw, ok := params.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return nil, fmt.Errorf("encoding %s: %w", method, err)
		}
	}
	if !c.stateless() {
		return c.raw.call(ctx, c.wire.Write, method, raw)
	}
	raw, err := c.withRequestMeta(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", method, err)
	}
	send := func(params json.RawMessage) (json.RawMessage, error) {
		return c.raw.call(ctx, c.wire.Write, method, params)
	}
	var res json.RawMessage
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		res, err = c.multiRound(ctx, method, raw, send)
	default:
		res, err = send(raw)
	}
	if err != nil {
		return nil, err
	}
	return withoutEnvelope(res), nil
}

// cancelNotifyTimeout bounds sending notifications/cancelled for a raw
// request, as the go-sdk bounds its own.
const cancelNotifyTimeout = 5 * time.Second

type rawRequestKey struct{}

// rawRequest is the raw request an HTTP request carries.
type rawRequest struct {
	calls *rawCalls
	id    string
}

// withRawRequest marks the context of a raw request, so that
// wireTransport reads its answer from the HTTP response.
func withRawRequest(ctx context.Context, r *rawCalls, id string) context.Context {
	return context.WithValue(ctx, rawRequestKey{}, rawRequest{r, id})
}

// TooLargeError is an answer bigger than max_result_bytes, which mcpmux
// stopped reading: the call fails, the connection goes on.
type TooLargeError struct {
	Server string
	Limit  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the server's answer exceeds max_result_bytes = %v, so mcpmux stopped reading it", config.Size(e.Limit))
}

// deliverData delivers the answers of raw requests among the JSON-RPC
// messages in data: one message, or a batch.
func (r *rawCalls) deliverData(data []byte) {
	data = bytes.TrimSpace(data)
	if !bytes.Contains(data, []byte(rawIDPrefix)) {
		return // not ours: nothing to decode
	}
	msgs := []json.RawMessage{data}
	if len(data) > 0 && data[0] == '[' {
		if json.Unmarshal(data, &msgs) != nil {
			return
		}
	}
	for _, m := range msgs {
		if msg, err := jsonrpc.DecodeMessage(m); err == nil {
			if resp, ok := msg.(*jsonrpc.Response); ok {
				r.deliver(resp)
			}
		}
	}
}

// notSentError is a raw request that could not be written: over HTTP, its
// POST did not reach the server (the transport's "rejected" error).
type notSentError struct {
	method string
	err    error
}

func (e *notSentError) Error() string { return fmt.Sprintf("sending %s: %v", e.method, e.err) }
func (e *notSentError) Unwrap() error { return e.err }

// errNoRawWire is returned for a raw request on a connection whose
// transport was not connected through tapTransport.
var errNoRawWire = errors.New("the connection takes no raw requests")
