package front

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Event streams towards clients.
//
// With an event store (see Front.handler) the go-sdk answers a call's POST at
// once, for clients on protocol 2025-11-25: headers and a priming event
// with an id, and ids on every event after it, which a client whose stream
// drops sends back as Last-Event-ID to have the rest replayed. Two things
// it leaves out are added here, by wrapping the response writer:
//
//   - a retry field right after the priming event, telling the client how
//     long to wait before it reconnects (SEP-1699);
//   - an SSE comment every keepaliveInterval while a stream is open, so
//     that a call that runs for many minutes without a message keeps its
//     connection: Node's fetch gives up on a body silent for 300 s, and
//     proxies close idle connections sooner (nginx after 60 s).
//
// And one thing is held back: the priming event waits up to primingDelay
// for the call's answer, so that a quick call is one write, not two.

// sseRetry is the reconnection delay clients are given.
const sseRetry = time.Second

// keepaliveInterval is how often an open event stream gets a comment.
const keepaliveInterval = 25 * time.Second

// primingDelay is how long the priming event of a call's stream may wait
// for the call's answer, to go out with it in one write: most calls answer
// within it, and one write instead of two is cheaper for mcpmux and its
// client. A longer call gets its headers and priming event when it runs
// out, which is what matters to a client waiting for headers.
const primingDelay = 50 * time.Millisecond

// primingPrefix starts the go-sdk's priming event.
var primingPrefix = []byte("event: prime\n")

// sseWriter is the response writer of one request to /mcp.
type sseWriter struct {
	http.ResponseWriter

	mu       sync.Mutex
	wrote    bool        // the SDK has written (headers and) a first chunk
	stream   bool        // the response is an event stream
	priming  bool        // nothing but the priming event is written yet
	deferred *time.Timer // flushes a priming event still waiting; nil if none
	closed   bool        // the handler returned: write nothing more
	alive    bool        // the keepalive loop runs
	stop     chan struct{}
	stopped  chan struct{} // closed when the keepalive loop has ended
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{ResponseWriter: w, stop: make(chan struct{}), stopped: make(chan struct{})}
}

func (w *sseWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	first := !w.wrote
	w.wrote = true
	w.priming = false
	n, err := w.ResponseWriter.Write(p)
	if first && err == nil && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		w.stream = true
		if bytes.HasPrefix(p, primingPrefix) {
			_, err = fmt.Fprintf(w.ResponseWriter, "retry: %d\n\n", sseRetry.Milliseconds())
			w.priming = true
		} else {
			w.startKeepalive()
		}
	}
	return n, err
}

// Flush sends what was written, except a priming event alone: that waits
// up to primingDelay for the answer (see primingDelay).
func (w *sseWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if w.priming {
		if w.deferred == nil {
			w.deferred = time.AfterFunc(primingDelay, w.primingDue)
		}
		return
	}
	if w.deferred != nil {
		w.deferred.Stop()
		w.deferred = nil
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// primingDue sends a priming event whose call has not answered within
// primingDelay, and keeps the stream alive from then on.
func (w *sseWriter) primingDue() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || !w.priming {
		return
	}
	w.deferred = nil
	_ = http.NewResponseController(w.ResponseWriter).Flush()
	w.startKeepalive()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *sseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// startKeepalive starts the keepalive loop once; w.mu is held.
func (w *sseWriter) startKeepalive() {
	if !w.alive {
		w.alive = true
		go w.keepalive()
	}
}

// keepalive writes a comment on the stream every keepaliveInterval until
// the handler returns.
func (w *sseWriter) keepalive() {
	defer close(w.stopped)
	t := time.NewTicker(keepaliveInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		w.mu.Lock()
		if !w.closed {
			if _, err := w.ResponseWriter.Write([]byte(": keepalive\n\n")); err == nil {
				_ = http.NewResponseController(w.ResponseWriter).Flush()
			}
		}
		w.mu.Unlock()
	}
}

// finish is called when the handler returns: nothing may be written after
// (the server sends what is still buffered).
func (w *sseWriter) finish() {
	w.mu.Lock()
	w.closed = true
	if w.deferred != nil {
		w.deferred.Stop()
		w.deferred = nil
	}
	alive := w.alive
	w.mu.Unlock()
	if alive {
		close(w.stop)
		<-w.stopped
	}
}
