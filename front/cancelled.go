package front

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
)

// Cancelled calls over Streamable HTTP with sessions (2025-11-25 and
// older). A client cancels a call with notifications/cancelled, which the
// spec says gets no answer; the go-sdk cancels the call's context and
// answers all the same, on the call's response stream. The front drops
// that answer, as the stdio seam does (aggregator/taskfront.go), and keeps
// the stream open without it, as a server of the TypeScript SDK does (and
// as mcpmux's clients see directly): a stream that ended without its
// answer would have a 2025-11-25 client reconnect with Last-Event-ID, and
// again whenever the replay ends, for as long as the session lasts. The
// stream stays open until its client closes it, the session ends or
// mcpmux drains.
//
// A 2026-07-28 client cancels by closing the call's stream (there is no
// session to name the call in): its request's context ends with the
// connection, which cancels the call (Front.handler), and nothing can be
// written to it any more.

// maxCancelledPerSession bounds the ids kept per session: a client that
// cancels calls already answered leaves their ids behind.
const maxCancelledPerSession = 256

// noteCancelled records the requests a POST's body of session id cancels,
// for a session being tracked (its ids go with it).
func (t *sessionTracker) noteCancelled(id string, body []byte) {
	if !bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
		return
	}
	var msgs []json.RawMessage
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &msgs) != nil {
			return
		}
	} else {
		msgs = []json.RawMessage{b}
	}
	for _, m := range msgs {
		var n struct {
			Method string `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(m, &n) != nil || n.Method != "notifications/cancelled" || len(n.Params.RequestID) == 0 {
			continue
		}
		t.mu.Lock()
		if s := t.sessions[id]; s != nil {
			if len(s.cancelled) == maxCancelledPerSession {
				s.cancelled = s.cancelled[1:]
			}
			s.cancelled = append(s.cancelled, string(bytes.TrimSpace(n.Params.RequestID)))
		}
		t.mu.Unlock()
	}
}

// wasCancelled reports whether the client of session id cancelled
// request rid (as JSON).
func (t *sessionTracker) wasCancelled(id string, rid []byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sessions[id]
	return s != nil && slices.Contains(s.cancelled, string(rid))
}

// ended returns a channel closed when session id has ended.
func (t *sessionTracker) ended(id string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.sessions[id]; s != nil {
		return s.gone
	}
	gone := make(chan struct{})
	close(gone)
	return gone
}

// dropCancelled is the writer of one HTTP request of a session: it drops
// the events that answer a request the client cancelled.
type dropCancelled struct {
	http.ResponseWriter
	sessions *sessionTracker
	session  string

	mu      sync.Mutex
	dropped bool // an answer was dropped: the stream is to be held open
}

func (w *dropCancelled) Write(p []byte) (int, error) {
	if rid, ok := answerID(p); ok && w.sessions.wasCancelled(w.session, rid) {
		w.mu.Lock()
		w.dropped = true
		w.mu.Unlock()
		return len(p), nil // said to be written: the SDK must go on
	}
	return w.ResponseWriter.Write(p)
}

func (w *dropCancelled) held() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Flush and Unwrap let http.ResponseController reach the writer below.
func (w *dropCancelled) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *dropCancelled) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// answerID returns the id of the JSON-RPC answer an event carries, read
// off the bytes as the go-sdk writes them ("data: " then
// {"jsonrpc":"2.0","id":…,"result" or "error"…}), without decoding what
// may be a large result.
func answerID(event []byte) ([]byte, bool) {
	const data, head = "data: ", `{"jsonrpc":"2.0","id":`
	i := bytes.Index(event, []byte(data+head))
	if i < 0 || (i > 0 && event[i-1] != '\n') {
		return nil, false
	}
	rest := event[i+len(data)+len(head):]
	end := bytes.IndexByte(rest, ',')
	if end < 0 || !(bytes.HasPrefix(rest[end:], []byte(`,"result"`)) || bytes.HasPrefix(rest[end:], []byte(`,"error"`))) {
		return nil, false
	}
	return rest[:end], true
}
