package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpmux/mcpmux/internal/sse"
	"github.com/mcpmux/mcpmux/oauth"
)

// The HTTP wire of a url: server.
//
// The go-sdk reads every HTTP response of a remote server; mcpmux reads
// each once beside it, on its way to the go-sdk, for what the SDK does not
// give it: one http.RoundTripper (wireTransport) hands each event stream to
// one parser (package internal/sse), whose events go to every part of
// mcpmux that needs them:
//
//   - the answers of raw requests (raw.go): taken from the response of
//     their POST (or of a GET resuming its stream), event or JSON body, and
//     bounded by max_result_bytes;
//   - the notifications an answer waits for (order.go), counted as read;
//   - notifications/tasks/status, which the go-sdk drops (mcptasks.go);
//   - the server's requests mcpmux answers itself (servertasks.go), taken
//     off the stream: an event that may be one (mayTake, below) is held
//     whole and offered to them;
//   - a call's streams, followed to resume them (resume.go).
//
// Over stdio and legacy SSE raw answers are taken off the connection
// instead (tapConn), and over stdio so is the rest; the stream of a legacy
// SSE server is read here like any other.

// eventSlack is what an event may hold besides its data (id, event and
// retry lines) within the bound.
const eventSlack = 4 << 10

// httpClient returns the HTTP client of c, a connection to a url: server,
// for either transport. auth, if set, authorizes its requests (a legacy
// SSE server's: the Streamable HTTP transport has its own).
func (d *dialer) httpClient(c *conn, auth oauth.Handler) *http.Client {
	cred := newCredentialTransport(http.DefaultTransport, d.cfg.URL, d.cfg.Headers)
	w := &wireTransport{base: cred, server: d.cfg.Name, limit: d.bounds.maxResultBytes(), maxEvent: d.bounds.maxEventSize(), gate: c.gate, status: c.tasks.taskStatusMessage}
	if caps := c.features.tasksCapability(); caps != nil {
		// Tasks the server asks its client to run (servertasks.go).
		w.base = &declareTasksBodies{base: w.base, caps: caps}
		w.take = c.asked.takeMessage
	}
	if auth != nil {
		w.base = &authTransport{base: w.base, h: auth, origin: cred.origin}
	}
	return &http.Client{Transport: w}
}

// wireTransport reads the responses of a connection's HTTP requests.
type wireTransport struct {
	base     http.RoundTripper
	server   string
	limit    int64 // max_result_bytes: of one answer to a raw request
	maxEvent int   // the go-sdk's bound of an event
	gate     *progressGate
	status   func(message []byte)      // a notifications/tasks/status message
	take     func(message []byte) bool // takes a request mcpmux answers; nil: none
}

func (t *wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = withHeadersOf(req) // a tools/call's Mcp-Param-* (paramheaders.go)
	watch, resumed := watchRequest(req)
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 {
		return resp, err
	}
	r, raw := req.Context().Value(rawRequestKey{}).(rawRequest)
	tooLarge := func() []byte {
		r.calls.answer(r.id, rawAnswer{err: &TooLargeError{Server: t.server, Limit: t.limit}})
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.id, "error": map[string]any{"code": -32603, "message": "answer too large"}})
		return b
	}
	switch baseMediaType(resp.Header.Get("Content-Type")) {
	case "text/event-stream":
		s := &eventStream{t: t, watch: watch, resumed: resumed}
		h := sse.Handler{Event: s.event, Max: t.maxEvent}
		if t.take != nil {
			h.Hold = mayTake // held whole, so that it can be taken off
		}
		if raw {
			// Every event is handed to the go-sdk only once complete, so
			// that one over the bound is never buffered whole by either: it
			// fails the call, and the go-sdk reads an error answer of the
			// call's id (which it drops) and the end of the stream.
			s.raw = r.calls
			h.Hold = func([]byte) bool { return true }
			h.Max, h.TooLarge = int(t.limit+eventSlack), tooLarge
		}
		if watch != nil {
			h.End = func(error) { watch.streamEnded(resumed) }
		}
		resp.Body = sse.NewReader(resp.Body, h)
	case "application/json":
		if raw {
			resp.Body = readJSON(resp.Body, r.calls, t.limit, tooLarge)
		}
	}
	return resp, nil
}

// eventStream is one event stream read by a wireTransport.
type eventStream struct {
	t       *wireTransport
	raw     *rawCalls // the raw requests whose answers it carries; nil: none
	watch   *streamWatch
	resumed bool // it resumes the watched call's stream
}

// event hands an event to whatever needs it, and reports whether the
// go-sdk is not to read its message (taken).
func (s *eventStream) event(e *sse.Event) (drop bool) {
	if w := s.watch; w != nil {
		if len(e.Retry) > 0 {
			if ms, err := strconv.Atoi(string(e.Retry)); err == nil && ms >= 0 {
				w.sawRetry(time.Duration(ms) * time.Millisecond)
			}
		}
		if len(e.ID) > 0 {
			w.sawEventID(s.resumed)
		}
		if e.Long || len(bytes.TrimSpace(e.Data)) > 0 {
			w.sawData(s.resumed)
		}
	}
	data := e.Data
	if len(data) <= sse.Peek { // notifications are small: an answer is not searched
		if gatedMessage(data) {
			s.t.gate.sawRead()
		}
		if s.t.status != nil && bytes.Contains(data, taskStatusData) {
			s.t.status(data)
		}
	}
	if e.Held && s.t.take != nil && mayTake(data[:min(len(data), sse.Peek)]) && s.t.take(data) {
		return true
	}
	if s.raw != nil {
		s.raw.deliverData(data)
	}
	return false
}

func baseMediaType(v string) string {
	v, _, _ = strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(v))
}

// readJSON reads an application/json answer to a raw request, up to limit
// bytes, delivers it, and returns what the go-sdk reads in its place: the
// same bytes, or tooLarge's for an answer over the limit.
func readJSON(body io.ReadCloser, raw *rawCalls, limit int64, tooLarge func() []byte) io.ReadCloser {
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	switch {
	case err != nil:
		// As the go-sdk would have read it: the bytes, then the error.
		return readCloser{io.MultiReader(bytes.NewReader(data), errReader{err}), body}
	case int64(len(data)) > limit:
		body.Close()
		return readCloser{bytes.NewReader(tooLarge()), body}
	}
	raw.deliverData(data)
	return readCloser{bytes.NewReader(data), body}
}

type readCloser struct {
	io.Reader
	io.Closer
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// takenMethods are in the data of a request mcpmux may answer itself;
// spacedMethod, JSON written with spaces, which is looked at closer.
var (
	takenMethods = [][]byte{[]byte(`"method":"sampling/createMessage"`), []byte(`"method":"elicitation/create"`), []byte(`"method":"tasks/`)}
	spacedMethod = []byte(`"method": "`)
)

// mayTake reports, from the start of an event's data (where a request
// has its method), whether the event may be a request mcpmux answers
// itself: such an event is held until it is complete, and offered to
// askedTasks.takeMessage.
func mayTake(firstData []byte) bool {
	for _, m := range takenMethods {
		if bytes.Contains(firstData, m) {
			return true
		}
	}
	return bytes.Contains(firstData, spacedMethod)
}
