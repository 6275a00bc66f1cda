package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Resuming a call's stream (Streamable HTTP).
//
// A server may close the event stream of a call before it answers, as
// SEP-1699 allows: the client reconnects with a GET carrying the last event
// id it saw, and the server replays what it sent since, the answer
// included. The go-sdk client does that by itself. But a server may have
// nothing to replay: its event store lost the answer (the reference
// conformance server's test_reconnection does), or it has none. Then the
// resumed stream stays silent and the call would wait for its timeout,
// up to 15 minutes. So the HTTP streams of every call are watched:
//
//   - when the SDK reconnects to resume a call's stream, the caller is told
//     (CallParams.StreamClosed), so that it can close its own client's
//     stream likewise and the client sees what it would see directly;
//   - if the resumed stream brings nothing at all within resume_timeout
//     (5s by default) of the reconnection, the call ends with a
//     *ResultLostError; anything on it (the answer, progress, a log line,
//     a request) shows the server is delivering, and the call goes on;
//   - a stream that ends before the answer without an event id cannot be
//     resumed, and a resumed one may end without the answer; the SDK then
//     fails the call, and the watch says why.

// ResultLostError is returned for a call whose server closed the response
// stream before answering and did not deliver the answer on resumption.
type ResultLostError struct {
	Server string
	Reason string
}

func (e *ResultLostError) Error() string {
	return fmt.Sprintf("server %q closed the call's response stream before answering, and %s", e.Server, e.Reason)
}

// streamWatch follows the HTTP streams of one call.
type streamWatch struct {
	server string
	wait   time.Duration             // how long a resumed stream may stay silent (resume_timeout)
	closed func(retry time.Duration) // see CallParams.StreamClosed; may be nil
	lose   context.CancelCauseFunc   // ends the call

	mu       sync.Mutex
	retry    time.Duration // the last retry field seen on its streams
	sawID    bool          // an event of the call's first stream had an id
	ended    bool          // the call's first stream has ended
	resumes  int           // resumption requests made
	timer    *time.Timer   // running while a resumed stream is silent
	finished bool
}

type watchKey struct{}

// watchCall returns ctx carrying a watch of the call's streams, and the
// watch, whose finish is to be called when the call is over. A resumed
// stream may stay silent for wait; closed is told of the first
// resumption; lose ends the call.
func watchCall(ctx context.Context, server string, wait time.Duration, closed func(time.Duration), lose context.CancelCauseFunc) (context.Context, *streamWatch) {
	w := &streamWatch{server: server, wait: wait, closed: closed, lose: lose}
	return context.WithValue(ctx, watchKey{}, w), w
}

func watchOf(ctx context.Context) *streamWatch {
	w, _ := ctx.Value(watchKey{}).(*streamWatch)
	return w
}

// finish ends the watch: the call is over.
func (w *streamWatch) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finished = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// sawRetry records a retry field.
func (w *streamWatch) sawRetry(d time.Duration) {
	w.mu.Lock()
	w.retry = d
	w.mu.Unlock()
}

// sawEventID records that the first stream had an event id.
func (w *streamWatch) sawEventID(resumed bool) {
	if !resumed {
		w.mu.Lock()
		w.sawID = true
		w.mu.Unlock()
	}
}

// sawData records a message on a stream: on a resumed one, the server is
// delivering.
func (w *streamWatch) sawData(resumed bool) {
	if !resumed {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// streamEnded records the end of a stream of the call.
func (w *streamWatch) streamEnded(resumed bool) {
	if !resumed {
		w.mu.Lock()
		w.ended = true
		w.mu.Unlock()
	}
}

// resuming is called when the SDK sends the GET that resumes the call's
// stream: the first one tells the caller, and the resumed stream must
// bring something within the watch's wait. (A go-sdk server sends the headers of
// a resumed stream only with its first event, so the wait starts with the
// request, not its answer.)
func (w *streamWatch) resuming() {
	w.mu.Lock()
	w.resumes++
	first, retry, closed := w.resumes == 1, w.retry, w.closed
	if !w.finished {
		if w.timer != nil {
			w.timer.Stop()
		}
		w.timer = time.AfterFunc(w.wait, func() {
			w.lose(&ResultLostError{Server: w.server, Reason: fmt.Sprintf("when mcpmux reconnected to resume it (Last-Event-ID), the server sent nothing within %v (resume_timeout): it lost the answer", w.wait)})
		})
	}
	w.mu.Unlock()
	if first && closed != nil {
		closed(retry)
	}
}

// failure says why a call whose request failed lost its answer, if the
// stream is why: it ended before the answer without an event id to resume
// it by, or the resumed stream ended without the answer (a server with
// nothing to replay may end it at once).
func (w *streamWatch) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.resumes > 0:
		return &ResultLostError{Server: w.server, Reason: "when mcpmux reconnected to resume it (Last-Event-ID), the server's stream ended without the answer: it lost it"}
	case w.ended && !w.sawID:
		return &ResultLostError{Server: w.server, Reason: "the stream had no event id to resume it by"}
	}
	return nil
}

// watchRequest is the part of the HTTP client's RoundTrip that concerns
// watches: it reports resumption requests and, for a call's streams,
// whether the stream is a resumed one.
func watchRequest(req *http.Request) (w *streamWatch, resumed bool) {
	w = watchOf(req.Context())
	if w == nil {
		return nil, false
	}
	resumed = req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != ""
	if resumed {
		w.resuming()
	}
	return w, resumed
}

// lostCause returns the *ResultLostError that ended a call, if one did.
func lostCause(cctx context.Context) *ResultLostError {
	var lost *ResultLostError
	if errors.As(context.Cause(cctx), &lost) {
		return lost
	}
	return nil
}
