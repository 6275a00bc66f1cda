package upstream

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// Notification ordering.
//
// The go-sdk reads a server's messages in order, but hands an answer to its
// caller straight from the reader while notifications wait in a handler
// queue. So a call can return before the progress and log messages the
// server sent ahead of its answer have been handled; forwarded that late,
// they reach the client after the answer, or over Streamable HTTP on
// another stream (out of order) or not at all. A progressGate counts those
// notifications as the transport reads them and as our handlers finish
// them, and a call holds its answer until everything read before the
// answer has been handled.

// progressWait bounds the wait: a notification the SDK drops before our
// handler (malformed params) must not hold answers up for longer.
const progressWait = time.Second

type progressGate struct {
	mu      sync.Mutex
	read    uint64        // gated notifications read by the transport
	handled uint64        // gated notifications our handlers have finished
	changed chan struct{} // closed and replaced whenever handled grows
}

func newProgressGate() *progressGate { return &progressGate{changed: make(chan struct{})} }

func (g *progressGate) sawRead() {
	g.mu.Lock()
	g.read++
	g.mu.Unlock()
}

func (g *progressGate) sawHandled() {
	g.mu.Lock()
	g.handled++
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

// wait returns once every progress notification read so far has been
// handled, or after progressWait, or when ctx ends.
func (g *progressGate) wait(ctx context.Context) {
	g.mu.Lock()
	target := g.read
	caughtUp := g.handled >= target
	g.mu.Unlock()
	if caughtUp {
		return // the usual case: no timer per call
	}
	g.waitFor(ctx, target)
}

// waitFor returns once target notifications have been handled, or after
// progressWait, or when ctx ends.
func (g *progressGate) waitFor(ctx context.Context, target uint64) {
	timer := time.NewTimer(progressWait)
	defer timer.Stop()
	for {
		g.mu.Lock()
		if g.handled >= target {
			g.mu.Unlock()
			return
		}
		changed := g.changed
		g.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-timer.C:
			// Something read was never handled: stop waiting for it.
			g.mu.Lock()
			g.handled = max(g.handled, target)
			g.mu.Unlock()
			return
		}
	}
}

// then runs f once every notification read so far has been handled (see
// wait): at once in the usual case (and without a gate), else on a
// goroutine of its own.
func (g *progressGate) then(f func()) {
	if g == nil {
		f()
		return
	}
	g.mu.Lock()
	target := g.read
	caughtUp := g.handled >= target
	g.mu.Unlock()
	if caughtUp {
		f()
		return
	}
	go func() {
		g.waitFor(context.Background(), target)
		f()
	}()
}

// gated reports whether a notification method is one a call's answer
// waits for: those forwarded to the caller of the call.
func gated(method string) bool {
	switch method {
	case "notifications/progress", "notifications/message",
		"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		return true
	}
	return false
}

// refreshes order a call's answer after the lists its server changed
// before answering. A server that adds a resource during a call (say
// server-everything's gzip-file-as-resource) sends list_changed before the
// answer, and a client that lists after the answer must find the
// resource, as it would directly: the answer waits until the refresh the
// notification started has been applied (the catalog synced, the clients'
// list_changed on its way). Only for a connection whose lists mcpmux
// follows (the shared one, with refreshLoop).
type refreshes struct {
	mu        sync.Mutex
	following bool          // a refreshLoop serves the connection
	wanted    uint64        // refreshes asked for (list_changed handled)
	finished  uint64        // of those, the ones refreshLoop has applied
	changed   chan struct{} // closed and replaced whenever finished grows
}

func (r *refreshes) start() {
	r.mu.Lock()
	r.following = true
	r.mu.Unlock()
}

func (r *refreshes) ask() {
	r.mu.Lock()
	r.wanted++
	r.mu.Unlock()
}

// asked is the count of refreshes asked for, which a refresh starting now
// covers.
func (r *refreshes) asked() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wanted
}

// done records that the refreshes up to n have been applied.
func (r *refreshes) done(n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n > r.finished {
		r.finished = n
		if r.changed != nil {
			close(r.changed)
			r.changed = nil
		}
	}
}

// wait returns once every refresh asked for so far has been applied, or
// after refreshWait, or when ctx ends.
func (r *refreshes) wait(ctx context.Context) {
	r.mu.Lock()
	target := r.wanted
	if !r.following || r.finished >= target {
		r.mu.Unlock()
		return // the usual case: no timer per call
	}
	r.mu.Unlock()
	timer := time.NewTimer(refreshWait)
	defer timer.Stop()
	for {
		r.mu.Lock()
		if r.finished >= target {
			r.mu.Unlock()
			return
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-timer.C:
			return // a slow listing holds the answer no longer
		}
	}
}

// refreshWait bounds how long an answer waits for its server's lists.
const refreshWait = 5 * time.Second

// gatedMethods are gated's methods as the go-sdk and the TypeScript SDK
// encode them (without spaces).
var gatedMethods = [][]byte{[]byte(`"method":"notifications/progress"`), []byte(`"method":"notifications/message"`),
	[]byte(`"method":"notifications/tools/list_changed"`), []byte(`"method":"notifications/prompts/list_changed"`), []byte(`"method":"notifications/resources/list_changed"`)}

// gatedMessage reports whether a message (JSON, as read from an HTTP
// response) is a notification a call's answer waits for.
func gatedMessage(data []byte) bool {
	for _, m := range gatedMethods {
		if bytes.Contains(data, m) {
			return true
		}
	}
	return false
}
