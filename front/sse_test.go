package front

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkEventStorePerRequest measures what the event store keeps of one
// request besides its messages (which count against its byte bound): the
// priming event and the stream's bookkeeping, held until the session
// ends. Reported as B/op.
func BenchmarkEventStorePerRequest(b *testing.B) {
	s := mcp.NewMemoryEventStore(nil)
	ctx := context.Background()
	streams := make([]string, b.N)
	for i := range streams {
		streams[i] = rand.Text()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		_ = s.Open(ctx, "session", streams[i])
		_ = s.Append(ctx, "session", streams[i], nil) // the priming event
	}
}

// flushRecorder records writes and flushes, and is safe for the
// keepalive's concurrent writes.
type flushRecorder struct {
	mu      sync.Mutex
	header  http.Header
	body    strings.Builder
	flushes int
	wrote   chan struct{}
}

func newFlushRecorder() *flushRecorder {
	return &flushRecorder{header: http.Header{}, wrote: make(chan struct{}, 100)}
}

func (r *flushRecorder) Header() http.Header { return r.header }
func (r *flushRecorder) WriteHeader(int)     {}
func (r *flushRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.body.Write(p)
	r.wrote <- struct{}{}
	return len(p), nil
}
func (r *flushRecorder) Flush() {
	r.mu.Lock()
	r.flushes++
	r.mu.Unlock()
}
func (r *flushRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body.String()
}

func (r *flushRecorder) flushCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flushes
}

// Time is the bubble's: the writer's own delays are tested, not shortened
// ones.
func TestSSEWriterAddsRetryAndKeepalive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newFlushRecorder()
		w := newSSEWriter(rec)
		w.Header().Set("Content-Type", "text/event-stream")
		if _, err := w.Write([]byte("event: prime\nid: s_0\ndata: \n\n")); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		<-rec.wrote // the priming event
		<-rec.wrote // the retry field
		time.Sleep(primingDelay + keepaliveInterval - time.Millisecond)
		synctest.Wait()
		if got := rec.String(); strings.Contains(got, "keepalive") {
			t.Errorf("a keepalive comment before %v: %q", keepaliveInterval, got)
		}
		<-rec.wrote // a keepalive comment
		w.finish()
		got := rec.String()
		if !strings.HasPrefix(got, "event: prime\nid: s_0\ndata: \n\nretry: 1000\n\n: keepalive\n\n") {
			t.Errorf("stream = %q, want the priming event, the retry field, then keepalive comments", got)
		}
		if _, err := w.Write([]byte("late")); err == nil {
			t.Error("a write after the handler returned went through")
		}
		if strings.Contains(rec.String(), "late") {
			t.Error("a write after the handler returned reached the connection")
		}
	})
}

func TestSSEWriterLeavesOtherResponsesAlone(t *testing.T) {
	rec := httptest.NewRecorder()
	w := newSSEWriter(rec)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0"}`))
	w.finish()
	if got := rec.Body.String(); got != `{"jsonrpc":"2.0"}` {
		t.Errorf("JSON response = %q, want it unchanged", got)
	}
}

// A call that answers within primingDelay sends its priming event and its
// answer in one flush; one that does not gets its priming event (and so
// its headers) when the delay runs out, and keepalive comments after.
func TestSSEWriterHoldsPrimingForTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quick := newFlushRecorder()
		w := newSSEWriter(quick)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: prime\nid: s_0\ndata: \n\n"))
		w.Flush()
		time.Sleep(primingDelay - time.Millisecond) // the answer comes just in time
		synctest.Wait()
		if n := quick.flushCount(); n != 0 {
			t.Errorf("the priming event alone was flushed (%d flushes)", n)
		}
		_, _ = w.Write([]byte("event: message\nid: s_1\ndata: {}\n\n"))
		w.Flush()
		w.finish()
		if n := quick.flushCount(); n != 1 {
			t.Errorf("priming event and answer took %d flushes, want 1", n)
		}
		if got := quick.String(); got != "event: prime\nid: s_0\ndata: \n\nretry: 1000\n\nevent: message\nid: s_1\ndata: {}\n\n" {
			t.Errorf("stream = %q", got)
		}

		slow := newFlushRecorder()
		w = newSSEWriter(slow)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: prime\nid: s_0\ndata: \n\n"))
		w.Flush()
		time.Sleep(primingDelay)
		synctest.Wait()
		if n := slow.flushCount(); n != 1 {
			t.Errorf("a call without an answer after %v: %d flushes, want its priming event's", primingDelay, n)
		}
		<-slow.wrote // the priming event
		<-slow.wrote // the retry field
		<-slow.wrote // a keepalive comment, written once the priming event went out
		w.finish()
		if n := slow.flushCount(); n != 2 {
			t.Errorf("a call without an answer: %d flushes, want the priming event's and a keepalive's", n)
		}
	})
}
