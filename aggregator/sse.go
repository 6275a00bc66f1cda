package aggregator

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
// With an event store (see HTTPHandler) the go-sdk answers a call's POST at
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

// sseRetry is the reconnection delay clients are given.
const sseRetry = time.Second

// keepaliveInterval is how often an open event stream gets a comment; tests
// shorten it.
var keepaliveInterval = 25 * time.Second

// primingPrefix starts the go-sdk's priming event.
var primingPrefix = []byte("event: prime\n")

// sseWriter is the response writer of one request to /mcp.
type sseWriter struct {
	http.ResponseWriter

	mu      sync.Mutex
	wrote   bool          // the SDK has written (headers and) a first chunk
	stream  bool          // the response is an event stream
	closed  bool          // the handler returned: write nothing more
	stop    chan struct{} // ends the keepalive loop
	stopped chan struct{} // closed when it has ended
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
	n, err := w.ResponseWriter.Write(p)
	if first && err == nil && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		w.stream = true
		if bytes.HasPrefix(p, primingPrefix) {
			_, err = fmt.Fprintf(w.ResponseWriter, "retry: %d\n\n", sseRetry.Milliseconds())
		}
		go w.keepalive()
	}
	return n, err
}

func (w *sseWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *sseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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

// finish is called when the handler returns: nothing may be written after.
func (w *sseWriter) finish() {
	w.mu.Lock()
	w.closed = true
	stream := w.stream
	w.mu.Unlock()
	if stream {
		close(w.stop)
		<-w.stopped
	}
}
