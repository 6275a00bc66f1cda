package upstream

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Events are what a pool's servers say outside any client's request, for
// whoever serves their lists. Each func, if set, is called on a goroutine
// of the server.
type Events struct {
	// Changed is called after the features (tools, prompts, resources) of
	// a server changed.
	Changed func(server string)
	// Log receives a server's log messages sent while none of its clients'
	// requests was running: server-wide messages.
	//lint:ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where it is not, and passes the servers' log messages to its clients.
	Log func(server string, p *mcp.LoggingMessageParams)
	// ResourceUpdated receives a server's notifications/resources/updated.
	ResourceUpdated func(server string, p *mcp.ResourceUpdatedNotificationParams)
	// SoleClient, if set, returns the one client of the pool's servers,
	// if they have exactly one (mcpmux over stdio): what a server asks on
	// its shared connection outside any client's call (its roots as it
	// starts, say) goes to that client, as it would directly. It may wait
	// for the client to initialize, until ctx ends; nil: no such client.
	SoleClient func(ctx context.Context) Caller
}

// Listen has the pool's servers tell e of their events from now on, until
// the pool is closed. What serves the pool's lists listens as it is made
// (see aggregator.New): it hears every event from then on, and nothing
// can reach it before it exists.
func (p *Pool) Listen(e Events) { p.listeners.add(e) }

// listeners are the Events a pool's servers tell; the list is replaced,
// never modified, so that telling takes no lock.
type listeners struct {
	mu   sync.Mutex // serializes add
	list atomic.Pointer[[]Events]
}

func (l *listeners) add(e Events) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var list []Events
	if cur := l.list.Load(); cur != nil {
		list = append(list, *cur...)
	}
	list = append(list, e)
	l.list.Store(&list)
}

func (l *listeners) each(f func(Events)) {
	if cur := l.list.Load(); cur != nil {
		for _, e := range *cur {
			f(e)
		}
	}
}

func (l *listeners) changed(server string) {
	l.each(func(e Events) {
		if e.Changed != nil {
			e.Changed(server)
		}
	})
}

//lint:ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where it is not, and passes the servers' log messages to its clients.
func (l *listeners) log(server string, p *mcp.LoggingMessageParams) {
	l.each(func(e Events) {
		if e.Log != nil {
			e.Log(server, p)
		}
	})
}

// soleClient returns the first sole client a listener knows (see
// Events.SoleClient), or nil.
func (l *listeners) soleClient(ctx context.Context) Caller {
	var out Caller
	l.each(func(e Events) {
		if out == nil && e.SoleClient != nil {
			out = e.SoleClient(ctx)
		}
	})
	return out
}

func (l *listeners) resourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams) {
	l.each(func(e Events) {
		if e.ResourceUpdated != nil {
			e.ResourceUpdated(server, p)
		}
	})
}
