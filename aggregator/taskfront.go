package aggregator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/stdioconn"
	"github.com/mcpmux/mcpmux/upstream"
)

// The client-facing seam of tasks (mcptasks.go), where mcpmux handles the
// messages of its clients before and after the go-sdk does.
//
// The go-sdk's types have no tasks, so two fields of a client's requests
// would be lost when it decodes them: the task of a task-augmented
// tools/call (params.task) and the tasks capability of an initialize
// (params.capabilities.tasks). They are lifted into the request's _meta,
// under mcpmux's keys below, before the SDK reads the request: in each
// line of stdin (stdio), in each POST's body (HTTP). The SDK keeps _meta,
// and the pipeline takes them from there.
//
// Nor can the SDK send a notification it does not know:
// notifications/tasks/status is written by mcpmux between the SDK's own
// messages, as a line of stdout (which the SDK writes one message per
// Write), or as an event on the client session's open GET stream.
//
// Lifting works on the bytes, not on a wrapped mcp.Connection: the SDK's
// stdio connection learns the session's protocol version through an
// unexported method (to refuse JSON-RPC batches from 2025-06-18 on),
// which a wrapper would hide.

// The _meta keys the lifted fields travel under. A client that sets them
// itself says what the fields would have said.
const (
	augmentKey     = "mcpmux/task"         // a tools/call's params.task
	clientTasksKey = "mcpmux/client-tasks" // an initialize's params.capabilities.tasks
)

// liftPayload lifts the fields the go-sdk would drop from a JSON-RPC
// payload of a client (one message or a batch) into _meta. It reports
// whether it changed anything: most payloads are left as they are, and
// decided on without decoding; so is a payload that is not valid JSON,
// which the SDK answers.
func liftPayload(payload []byte) ([]byte, bool) {
	if !bytes.Contains(payload, []byte(`"initialize"`)) &&
		!(bytes.Contains(payload, []byte(`"tools/call"`)) && bytes.Contains(payload, []byte(`"task"`))) &&
		!(bytes.Contains(payload, []byte(`"action"`)) && bytes.Contains(payload, []byte(`"content"`))) {
		return payload, false
	}
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return liftMessage(trimmed)
	}
	var batch []json.RawMessage
	if json.Unmarshal(trimmed, &batch) != nil {
		return payload, false
	}
	changed := false
	for i, m := range batch {
		if out, ok := liftMessage(m); ok {
			batch[i], changed = out, true
		}
	}
	if !changed {
		return payload, false
	}
	out, err := json.Marshal(batch)
	if err != nil {
		return payload, false
	}
	return out, true
}

// liftMessage lifts the field of one message, if it has one.
func liftMessage(m []byte) ([]byte, bool) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(m, &msg) != nil {
		return m, false
	}
	var method string
	_ = json.Unmarshal(msg["method"], &method)
	if method == "" {
		return liftElicitContent(msg, m)
	}
	var params map[string]json.RawMessage
	if (method != "initialize" && method != "tools/call") || json.Unmarshal(msg["params"], &params) != nil || params == nil {
		return m, false
	}
	var key string
	var value json.RawMessage
	switch method {
	case "initialize":
		var caps map[string]json.RawMessage
		_ = json.Unmarshal(params["capabilities"], &caps)
		key, value = clientTasksKey, caps["tasks"] // the SDK ignores it where it is
	case "tools/call":
		key, value = augmentKey, params["task"]
		delete(params, "task")
	}
	if len(value) == 0 || string(value) == "null" {
		return m, false
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &meta) != nil || meta == nil {
			return m, false // the SDK refuses it
		}
	}
	meta[key] = value
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return m, false
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return m, false
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return m, false
	}
	return out, true
}

// liftElicitContent lifts the content of a client's answer to
// elicitation/create (a response whose result has an action and a
// content) into the result's _meta, as a JSON string of its bytes
// (upstream.ElicitContentKey): the SDK decodes the content into a map,
// which would reach the server with its keys re-ordered. m is the
// message, msg its fields.
func liftElicitContent(msg map[string]json.RawMessage, m []byte) ([]byte, bool) {
	var result map[string]json.RawMessage
	if json.Unmarshal(msg["result"], &result) != nil || result == nil || len(result["action"]) == 0 {
		return m, false
	}
	content := bytes.TrimSpace(result["content"])
	if len(content) == 0 || content[0] != '{' {
		return m, false
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := result["_meta"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &meta) != nil || meta == nil {
			return m, false
		}
	}
	var err error
	if meta[upstream.ElicitContentKey], err = json.Marshal(string(content)); err != nil {
		return m, false
	}
	if result["_meta"], err = json.Marshal(meta); err != nil {
		return m, false
	}
	if msg["result"], err = json.Marshal(result); err != nil {
		return m, false
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return m, false
	}
	return out, true
}

// liftLine lifts the fields of a line a stdio client sends (stdio frames
// each message as one line), and tells cancelled of each request the
// client cancels (notifications/cancelled), whose answer must not reach
// it.
func liftLine(line []byte, cancelled func(id json.RawMessage)) []byte {
	if bytes.Contains(line, []byte(`"notifications/cancelled"`)) {
		var n struct {
			Method string `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &n) == nil && n.Method == "notifications/cancelled" && len(n.Params.RequestID) > 0 {
			cancelled(n.Params.RequestID)
		}
	}
	if lifted, ok := liftPayload(line); ok {
		return lifted
	}
	return line
}

// stdioOut is stdout in stdio mode. The go-sdk writes each message as one
// line with one Write; a notification of mcpmux's goes between them.
type stdioOut struct {
	mu sync.Mutex
	w  io.Writer
	// cancelled are the ids of the requests the client cancelled, oldest
	// first, at most maxCancelled: the SDK answers a cancelled request
	// all the same, and the spec says it gets no answer, so its answer is
	// not written.
	cancelled []string
	ss        atomic.Pointer[mcp.ServerSession] // once connected
}

// maxCancelled bounds stdioOut.cancelled: a client that cancels requests
// already answered leaves their ids behind.
const maxCancelled = 256

// cancel notes that the client cancelled request id.
func (o *stdioOut) cancel(id json.RawMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.cancelled) == maxCancelled {
		o.cancelled = o.cancelled[1:]
	}
	o.cancelled = append(o.cancelled, string(bytes.TrimSpace(id)))
}

func (o *stdioOut) Write(p []byte) (int, error) {
	if o.unsolicited(p) {
		// Said to have been written: the SDK must not take the session
		// for broken.
		return len(p), nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.cancelled) > 0 && o.answersCancelled(p) {
		return len(p), nil
	}
	return o.w.Write(p)
}

// answersCancelled reports whether p is the answer to a cancelled
// request, and forgets that request. o.mu must be held.
func (o *stdioOut) answersCancelled(p []byte) bool {
	// The SDK writes an answer as {"jsonrpc":"2.0","id":…,"result" or
	// "error"…}, a request of mcpmux's with "method" after the id: the id
	// is read off the bytes, without decoding what may be a large result.
	const head = `{"jsonrpc":"2.0","id":`
	if !bytes.HasPrefix(p, []byte(head)) {
		return false
	}
	rest := p[len(head):]
	end := bytes.IndexByte(rest, ',')
	if end < 0 || !(bytes.HasPrefix(rest[end:], []byte(`,"result"`)) || bytes.HasPrefix(rest[end:], []byte(`,"error"`))) {
		return false
	}
	i := slices.Index(o.cancelled, string(rest[:end]))
	if i < 0 {
		return false
	}
	o.cancelled = slices.Delete(o.cancelled, i, i+1)
	return true
}

// unsolicited reports whether msg is a change notification outside any
// subscriptions/listen, for a client that has not initialized a session of
// 2025-11-25 or older. The go-sdk sends those to every session it does not
// know as one of 2026-07-28, a client that has sent nothing yet included;
// but a 2026-07-28 client gets notifications only for its requests and on
// its listen streams (each stamped with its subscription id), and one that
// has not said which protocol it speaks must get nothing it did not ask
// for.
func (o *stdioOut) unsolicited(msg []byte) bool {
	if !bytes.Contains(msg, []byte(`"notifications/`)) || bytes.Contains(msg, []byte(metaSubscriptionID)) {
		return false
	}
	if ss := o.ss.Load(); ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion < firstSessionlessVersion {
			return false
		}
	}
	var n struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &n) != nil || n.ID != nil {
		return false
	}
	return strings.HasSuffix(n.Method, "/list_changed") || n.Method == "notifications/resources/updated"
}

const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// Close leaves stdout open, as mcp.StdioTransport does.
func (o *stdioOut) Close() error { return nil }

func (o *stdioOut) notify(msg []byte) bool {
	if o.unsolicited(msg) {
		return false // not sent: see unsolicited
	}
	_, err := o.Write(append(msg, '\n'))
	return err == nil
}

// clientOut is what mcpmux writes to its clients outside the go-sdk, and
// the bytes it rewrites before the go-sdk reads them: the stdio session's
// stdout and the HTTP sessions' GET streams, where notifications the SDK
// has no method for go, and the lifting of what the SDK would drop (see
// above). It is given what it needs in New, not the Aggregator.
type clientOut struct {
	log *slog.Logger
	// sole is the client of an instance serving stdio (soleclient.go),
	// which serveStdio starts and ends.
	sole *soleClient
	// stdioLevel and keptLevel give a 2026-07-28 request without a log
	// level of its own the one its client set with logging/setLevel, on
	// stdio and over HTTP (clientSessions, removed2026.go).
	stdioLevel func(ss *mcp.ServerSession, line []byte) []byte
	keptLevel  func(r *http.Request, body []byte) []byte

	stdioOuts sync.Map      // *mcp.ServerSession → *stdioOut: stdout of a stdio session
	streams   clientStreams // open GET streams of HTTP sessions
}

// serveStdio serves the client session of s on in and out until the client
// leaves or ctx is done, as mcp.Server.Run does with mcp.StdioTransport,
// with the seams above.
func (o *clientOut) serveStdio(ctx context.Context, s *mcp.Server, in io.ReadCloser, out io.Writer) error {
	o.sole.expect()
	w := &stdioOut{w: out}
	ss, err := s.Connect(ctx, &stdioconn.IOTransport{Reader: in, Writer: w, Options: stdioconn.Options{
		Role:    stdioconn.Server,
		Logger:  o.log,
		Rewrite: func(line []byte) []byte { return o.stdioLevel(w.ss.Load(), liftLine(line, w.cancel)) },
	}}, nil)
	if err != nil {
		return err
	}
	w.ss.Store(ss)
	o.stdioOuts.Store(ss, w)
	defer o.stdioOuts.Delete(ss)
	defer o.sole.end(ss)
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-ended
		return ctx.Err()
	case err := <-ended:
		return err
	}
}

// LiftBody lifts the fields of a POST's body, and gives the SDK the lifted
// body to read (see front.Engine, for which it stays on Aggregator).
func (a *Aggregator) LiftBody(r *http.Request, body []byte) []byte { return a.out.liftBody(r, body) }

func (o *clientOut) liftBody(r *http.Request, body []byte) []byte {
	if r.Method != http.MethodPost {
		return body
	}
	out, changed := liftPayload(body)
	if kept := o.keptLevel(r, out); !bytes.Equal(kept, out) {
		out, changed = kept, true // removed2026.go
	}
	if !changed {
		return body
	}
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.ContentLength = int64(len(out))
	return out
}

// clientStreams are the open GET event streams of the HTTP client
// sessions, by session id: where a server-sent notification goes that the
// SDK cannot send.
type clientStreams struct {
	mu      sync.Mutex
	streams map[string][]*clientStream
}

// TrackStream returns the response writer of a GET of session id, which
// the aggregator holds while it is open to send the session what the SDK
// cannot, and the func that ends it, to call when the SDK's handler has
// returned (see front.Engine, for which it stays on Aggregator).
func (a *Aggregator) TrackStream(id string, w http.ResponseWriter) (http.ResponseWriter, func()) {
	return a.out.streams.track(id, w)
}

func (cs *clientStreams) track(id string, w http.ResponseWriter) (http.ResponseWriter, func()) {
	s := &clientStream{w: w}
	cs.mu.Lock()
	if cs.streams == nil {
		cs.streams = map[string][]*clientStream{}
	}
	cs.streams[id] = append(cs.streams[id], s)
	cs.mu.Unlock()
	return s, func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		cs.mu.Lock()
		defer cs.mu.Unlock()
		list := cs.streams[id]
		for i, x := range list {
			if x == s {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(cs.streams, id)
		} else {
			cs.streams[id] = list
		}
	}
}

// notify sends msg as an event on the latest open stream of session id; it
// reports whether there was one.
func (cs *clientStreams) notify(id string, msg []byte) bool {
	cs.mu.Lock()
	list := cs.streams[id]
	cs.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].send(msg) {
			return true
		}
	}
	return false
}

// clientStream is the response writer of one GET event stream. The SDK
// writes each event with one Write; mcpmux's events go between them, once
// the SDK has started the stream.
type clientStream struct {
	w       http.ResponseWriter
	mu      sync.Mutex
	started bool // the SDK has written the stream's headers and first event
	closed  bool // the SDK's handler has returned
}

func (s *clientStream) Header() http.Header         { return s.w.Header() }
func (s *clientStream) WriteHeader(code int)        { s.w.WriteHeader(code) }
func (s *clientStream) Flush()                      { _ = http.NewResponseController(s.w).Flush() }
func (s *clientStream) Unwrap() http.ResponseWriter { return s.w }

func (s *clientStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.w.Write(p)
	if err == nil && strings.HasPrefix(s.w.Header().Get("Content-Type"), "text/event-stream") {
		s.started = true
	}
	return n, err
}

// send writes msg as an event without an id: it is not replayed to a
// client that resumes the stream.
func (s *clientStream) send(msg []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.closed {
		return false
	}
	if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", msg); err != nil {
		return false
	}
	s.Flush()
	return true
}

// notify sends a client session a notification the go-sdk has no method
// for; it reports whether it could (over HTTP, the session must have its
// GET stream open).
func (o *clientOut) notify(ss *mcp.ServerSession, method string, params json.RawMessage) bool {
	msg, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: method, Params: params})
	if err != nil || ss == nil {
		return false
	}
	if w, ok := o.stdioOuts.Load(ss); ok {
		return w.(*stdioOut).notify(msg)
	}
	if id := ss.ID(); id != "" {
		return o.streams.notify(id, msg)
	}
	return false
}
