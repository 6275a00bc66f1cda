package upstream

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
)

// Pool holds the servers of the current configuration.
type Pool struct {
	opts      Options
	listeners listeners // see Listen

	applyMu sync.Mutex // one Apply at a time
	mu      sync.RWMutex
	servers map[string]*Server
	closed  bool
	// current is servers for readers: the call path looks servers up
	// without a lock. The map is replaced, never modified.
	current atomic.Pointer[map[string]*Server]

	// Servers replaced or removed by Apply stop in the background while
	// their running calls finish; Close cuts that short.
	retiring    sync.WaitGroup
	retireCtx   context.Context
	stopRetired context.CancelFunc
}

// NewPool returns an empty pool; Apply fills it.
func NewPool(opts *Options) *Pool {
	p := &Pool{}
	p.publish(map[string]*Server{})
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.ClientInfo == nil {
		p.opts.ClientInfo = &mcp.Implementation{Name: "mcpmux", Version: "dev"}
	}
	p.retireCtx, p.stopRetired = context.WithCancel(context.Background())
	return p
}

// publish makes m the servers; p.mu must be held (or p new).
func (p *Pool) publish(m map[string]*Server) {
	p.servers = m
	p.current.Store(&m) // m, a variable of its own: never written again
}

// Get returns the server with the config name, or nil.
func (p *Pool) Get(name string) *Server {
	return (*p.current.Load())[name]
}

// Servers returns the servers sorted by name.
func (p *Pool) Servers() []*Server {
	out := slices.Collect(maps.Values(*p.current.Load()))
	slices.SortFunc(out, func(a, b *Server) int { return strings.Compare(a.cfg.Name, b.cfg.Name) })
	return out
}

// Statuses reports every server's status, sorted by name.
func (p *Pool) Statuses() []Status {
	servers := p.Servers()
	out := make([]Status, len(servers))
	for i, s := range servers {
		out[i] = s.Status()
	}
	return out
}

// Changes says what an Apply did, by server name.
type Changes struct {
	Added, Removed, Restarted, Kept []string
	// Failed are changed servers whose new version did not come up while
	// the old one was serving: the old one keeps serving (name → error).
	Failed map[string]error
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.Added)+len(c.Removed)+len(c.Restarted) == 0
}

// Apply makes the pool run exactly the given servers. Servers whose config
// is unchanged (same name and hash) are not touched. New and changed ones
// are started in parallel; Apply waits for their first connection attempt
// (bounded by their connect timeout) and only then swaps them in, so that a
// restarted server's old connection keeps serving until the new one is
// ready. Replaced and removed servers are stopped in the background after
// their running calls finish, bounded by their call timeout.
func (p *Pool) Apply(ctx context.Context, cfgs []*config.Server, callTimeout time.Duration) Changes {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	p.mu.RLock()
	old := maps.Clone(p.servers)
	closed := p.closed
	p.mu.RUnlock()
	if closed {
		return Changes{}
	}

	var ch Changes
	next := make(map[string]*Server, len(cfgs))
	var started []*Server
	for _, cfg := range cfgs {
		if o := old[cfg.Name]; o != nil && o.cfg.Hash == cfg.Hash {
			next[cfg.Name] = o
			ch.Kept = append(ch.Kept, cfg.Name)
			continue
		}
		s := newServer(cfg, &p.opts, &p.listeners)
		s.start()
		started = append(started, s)
		next[cfg.Name] = s
		if old[cfg.Name] != nil {
			ch.Restarted = append(ch.Restarted, cfg.Name)
		} else {
			ch.Added = append(ch.Added, cfg.Name)
		}
	}
	for _, s := range started {
		select {
		case <-s.firstTry:
		case <-ctx.Done():
		}
	}
	// A restart whose new version failed must not take a working server
	// away: keep the old one and report the failure.
	var failed []*Server
	for i := 0; i < len(ch.Restarted); i++ {
		name := ch.Restarted[i]
		s, o := next[name], old[name]
		if st := s.Status(); st.State != StateUp && o.Status().State == StateUp {
			if ch.Failed == nil {
				ch.Failed = map[string]error{}
			}
			ch.Failed[name] = fmt.Errorf("%s", st.Error)
			next[name] = o
			failed = append(failed, s)
			ch.Restarted = slices.Delete(ch.Restarted, i, i+1)
			i--
		}
	}
	for _, s := range failed {
		go s.Stop(context.Background(), 0)
	}
	var retired []*Server
	for name, o := range old {
		if next[name] != o {
			retired = append(retired, o)
			if next[name] == nil {
				ch.Removed = append(ch.Removed, name)
			}
		}
	}

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		for _, s := range started {
			s.Stop(context.Background(), 0)
		}
		return Changes{}
	}
	p.publish(next)
	// Registered under p.mu, so that Close, which sets closed under it,
	// waits for these too.
	for _, o := range retired {
		p.retiring.Go(func() { o.stop(p.retireCtx, maxCallTimeout(o.cfg, callTimeout), errRetired) })
	}
	p.mu.Unlock()
	slices.Sort(ch.Added)
	slices.Sort(ch.Removed)
	slices.Sort(ch.Restarted)
	slices.Sort(ch.Kept)
	return ch
}

// ReleaseClient closes the per-client connections of a client session.
func (p *Pool) ReleaseClient(id ClientID) {
	for _, s := range p.Servers() {
		if s.PerClient() {
			s.ReleaseClient(id)
		}
	}
}

// Close stops every server, giving running calls up to grace to finish;
// calls still running then are cancelled and answered with a
// *StoppedError.
func (p *Pool) Close(ctx context.Context, grace time.Duration) {
	p.mu.Lock()
	p.closed = true
	servers := slices.Collect(maps.Values(p.servers))
	p.publish(map[string]*Server{})
	p.mu.Unlock()
	stopRetired := time.AfterFunc(grace, p.stopRetired)
	defer stopRetired.Stop()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() { s.stop(ctx, grace, ErrShuttingDown) })
	}
	wg.Wait()
	p.retiring.Wait()
}
