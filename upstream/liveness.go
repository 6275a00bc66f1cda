package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Liveness. A child stopped by SIGSTOP, or deadlocked, keeps its pipes
// open: nothing ends its session, and every call waits its whole timeout
// (900 s by default) while the server shows up. So while calls wait on a
// shared connection, mcpmux pings the server (MCP 2025 `ping`) every
// DefaultLiveness; a ping unanswered for pingPatience times that marks it
// unresponsive: the waiting calls fail at once with an UnresponsiveError,
// and the connection is closed, which restarts the server. A server that
// answers ping with an error (it does not know the method) is alive. The
// patience is long because a server that runs a tool on its only thread
// (a CPU-bound handler on Node's event loop) answers nothing meanwhile.

// DefaultLiveness is how often a server with calls waiting is pinged.
const DefaultLiveness = 30 * time.Second

// pingPatience is how many liveness intervals a ping may go unanswered.
const pingPatience = 4

// UnresponsiveError is why the calls of a server that stopped answering
// failed.
type UnresponsiveError struct{ After time.Duration }

func (e *UnresponsiveError) Error() string {
	return fmt.Sprintf("the server did not answer a ping within %v while calls waited (stopped or hung)", e.After)
}

// watchLiveness pings c while it has calls in flight, until it ends.
func (c *conn) watchLiveness(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		c.mu.Lock()
		busy := c.inflight > 0
		c.mu.Unlock()
		if !busy {
			continue
		}
		patience := pingPatience * every
		ctx, cancel := context.WithTimeout(c.srv.ctx, patience)
		err := c.cs.Ping(ctx, nil)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || c.srv.ctx.Err() != nil || isClosed(c) {
			continue
		}
		cause := &UnresponsiveError{After: patience}
		c.mu.Lock()
		c.unresponsive = cause
		c.mu.Unlock()
		c.srv.log.Warn("server unresponsive; failing its calls and restarting it", "error", cause, "pid", c.pid)
		c.stopTaking()
		c.abort(cause)
		go c.close()
		return
	}
}
