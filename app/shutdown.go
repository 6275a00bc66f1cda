package app

import (
	"net/http"
	"sync"
	"time"
)

// Graceful shutdown, in this order: over HTTP, drain (see drain); stop
// accepting; let running calls finish within what is left of the grace
// period; cancel the rest, which answers them with an isError result;
// deliver those answers; only then close the client connections. Closing
// them first would drop the answers.

// drain is the first step of an HTTP shutdown: the replica says that it is
// draining (/healthz answers 503, new sessions are refused; see
// aggregator.Drain and package front) and goes on serving until no request is running, for
// at most grace. Meanwhile a load balancer sees the 503 and sends new
// sessions elsewhere, the running calls finish and open sessions' calls are
// answered; once the replica has gone, their clients get 404 from the
// replica the balancer picks, and start a new session there.
func drain(in *Instance, requests *requestCounter, grace time.Duration) {
	in.agg.Drain()
	in.log.Info("draining: /healthz answers 503 and new sessions are refused; running calls may take up to the grace to finish", "grace", grace)
	requests.wait(grace)
}

// answerWait bounds how long the answers of the last calls may take to
// reach their clients once every call has returned.
const answerWait = 5 * time.Second

// requestCounter counts the HTTP requests being served, except GETs: those
// are a session's event streams, which stay open until closed.
type requestCounter struct {
	next http.Handler

	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while n is 0
}

// countRequests makes srv count its requests.
func countRequests(srv *http.Server) *requestCounter {
	rc := &requestCounter{next: srv.Handler}
	srv.Handler = rc
	return rc
}

func (rc *requestCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		rc.mu.Lock()
		rc.n++
		rc.mu.Unlock()
		defer rc.done()
	}
	rc.next.ServeHTTP(w, r)
}

func (rc *requestCounter) done() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.n--
	if rc.n == 0 && rc.zero != nil {
		close(rc.zero)
		rc.zero = nil
	}
}

// wait returns when no request is being served, or after d.
func (rc *requestCounter) wait(d time.Duration) {
	rc.mu.Lock()
	if rc.n == 0 {
		rc.mu.Unlock()
		return
	}
	if rc.zero == nil {
		rc.zero = make(chan struct{})
	}
	zero := rc.zero
	rc.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-zero:
	case <-t.C:
	}
}
