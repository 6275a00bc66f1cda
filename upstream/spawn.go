package upstream

import (
	"context"
	"runtime"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/stdioconn"
)

// childTransport starts a stdio child: on the spawning thread, and told to
// the group tracker as soon as it runs (before it has even answered
// initialize, which may take the whole connect timeout).
type childTransport struct {
	*stdioconn.CommandTransport
	groups GroupTracker // may be nil
}

func (t *childTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	var (
		c   mcp.Connection
		err error
	)
	onSpawnThread(func() { c, err = t.CommandTransport.Connect(ctx) })
	if err == nil && t.groups != nil && t.Command.Process != nil {
		t.groups.Track(t.Command.Process.Pid)
	}
	return c, err
}

var (
	spawnOnce sync.Once
	spawns    chan func()
)

// onSpawnThread runs fn, which starts a child, on one goroutine locked to
// its OS thread for good. The kernel sends a child's PR_SET_PDEATHSIG when
// the thread that forked it exits, not its process; Go ends a thread when
// a goroutine locked to it returns, so a child forked on an arbitrary
// thread could be killed while mcpmux runs on. This thread never exits.
func onSpawnThread(fn func()) {
	spawnOnce.Do(func() {
		spawns = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as mcpmux
			for f := range spawns {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawns <- func() {
		defer close(done)
		fn()
	}
	<-done
}
