package upstream

//lint:file-ignore SA1019 sampling, roots and logging are deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where they are not, and declares to a server the sampling and roots that the calling client declared.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client capabilities and the tools they make a server list.
//
// Servers may list tools according to what the client declared at
// initialization (server-everything lists trigger-sampling-request only to
// a client that samples, get-roots-list only to one with roots). mcpmux
// therefore:
//
//   - gives a per-client connection exactly the capabilities of its client,
//     so that the server sees what it would see directly;
//   - gives a shared connection every capability it can forward (the
//     calling client answers), and learns what the server would list to a
//     client with fewer when such a client first comes, by asking it with
//     just those capabilities ([Server.ToolsFor]): with one request on the
//     shared connection for a server of MCP 2026-07-28, on a short-lived
//     probe session for an earlier one. A client is shown only what the
//     server lists for its own capabilities. Nothing is probed ahead of
//     such a client: a server starts once, and clients that declare
//     everything never wait for a probe, nor do those that declare at
//     least what a client declared whose probe listed every tool.

// ClientFeatures are the client capabilities mcpmux forwards to servers,
// which are the ones that can change what a server lists. The zero value
// has none.
type ClientFeatures struct {
	Roots           bool // roots/list
	Sampling        bool // sampling/createMessage
	SamplingTools   bool // sampling with tools (sampling.tools)
	FormElicitation bool // elicitation/create, form mode
	URLElicitation  bool // elicitation/create, URL mode
	// SamplingTasks and ElicitationTasks: the client runs a server's
	// sampling or elicitation requests as tasks when asked
	// (tasks.requests.sampling.createMessage,
	// tasks.requests.elicitation.create). mcpmux runs those tasks itself
	// and asks the client plainly (servertasks.go); they are declared to
	// the server as the client declared them, so that it lists what it
	// would list to the client.
	SamplingTasks    bool
	ElicitationTasks bool
}

// elicits reports whether f declares elicitation in some mode.
func (f ClientFeatures) elicits() bool { return f.FormElicitation || f.URLElicitation }

// AllFeatures is what a shared connection declares: everything mcpmux can
// forward to the client of a call.
var AllFeatures = ClientFeatures{Roots: true, Sampling: true, SamplingTools: true, FormElicitation: true, URLElicitation: true, SamplingTasks: true, ElicitationTasks: true}

// FeaturesOf returns the features a client declared; nil capabilities (a
// caller mcpmux does not know) have them all, so that nothing is hidden
// from an unknown caller. The go-sdk's capabilities have no tasks: see
// WithTasks.
func FeaturesOf(caps *mcp.ClientCapabilities) ClientFeatures {
	if caps == nil {
		return AllFeatures
	}
	var f ClientFeatures
	f.Roots = caps.RootsV2 != nil
	if s := caps.Sampling; s != nil {
		f.Sampling = true
		f.SamplingTools = s.Tools != nil
	}
	if e := caps.Elicitation; e != nil {
		// {} without modes means form, as the go-sdk reads it (the
		// 2025-06-18 spelling).
		f.FormElicitation = e.Form != nil || e.URL == nil
		f.URLElicitation = e.URL != nil
	}
	return f
}

// WithTasks returns f with the task features of a client's
// capabilities.tasks (as JSON, or decoded into maps): each only with the
// feature it runs as tasks.
func (f ClientFeatures) WithTasks(tasks any) ClientFeatures {
	var t struct {
		Requests struct {
			Sampling *struct {
				CreateMessage any `json:"createMessage"`
			} `json:"sampling"`
			Elicitation *struct {
				Create any `json:"create"`
			} `json:"elicitation"`
		} `json:"requests"`
	}
	raw, ok := tasks.(json.RawMessage)
	if !ok {
		raw, _ = json.Marshal(tasks)
	}
	_ = json.Unmarshal(raw, &t)
	f.SamplingTasks = f.Sampling && t.Requests.Sampling != nil && t.Requests.Sampling.CreateMessage != nil
	f.ElicitationTasks = f.elicits() && t.Requests.Elicitation != nil && t.Requests.Elicitation.Create != nil
	return f
}

// tasksCapability is the tasks capability a connection declares for f (in
// its initialize, which the go-sdk cannot: see declareTasks); nil for none.
func (f ClientFeatures) tasksCapability() json.RawMessage {
	if !f.SamplingTasks && !f.ElicitationTasks {
		return nil
	}
	requests := map[string]any{}
	if f.SamplingTasks {
		requests["sampling"] = map[string]any{"createMessage": map[string]any{}}
	}
	if f.ElicitationTasks {
		requests["elicitation"] = map[string]any{"create": map[string]any{}}
	}
	b, _ := json.Marshal(map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": requests})
	return b
}

// String names the features, for logs.
func (f ClientFeatures) String() string {
	s := ""
	add := func(on bool, name string) {
		if on {
			if s != "" {
				s += ","
			}
			s += name
		}
	}
	add(f.Roots, "roots")
	add(f.Sampling, "sampling")
	add(f.SamplingTools, "sampling.tools")
	add(f.FormElicitation, "elicitation.form")
	add(f.URLElicitation, "elicitation.url")
	add(f.SamplingTasks, "tasks.sampling")
	add(f.ElicitationTasks, "tasks.elicitation")
	if s == "" {
		return "none"
	}
	return s
}

// capabilities are the capabilities a connection declares for f. Sampling
// and elicitation are declared by the presence of their handlers (see
// conn.clientOptions), so only what the SDK takes from here is set.
func (f ClientFeatures) capabilities() *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{}
	if f.Roots {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	if f.Sampling {
		caps.Sampling = &mcp.SamplingCapabilities{}
		if f.SamplingTools {
			caps.Sampling.Tools = &mcp.SamplingToolsCapabilities{}
		}
	}
	if f.FormElicitation || f.URLElicitation {
		caps.Elicitation = &mcp.ElicitationCapabilities{}
		if f.FormElicitation {
			caps.Elicitation.Form = &mcp.FormElicitationCapabilities{}
		}
		if f.URLElicitation {
			caps.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
	}
	return caps
}

// ListsAll reports whether a client with f is listed every tool a shared
// connection lists: it has every feature that connection declares. Sampling
// with and without tools count as one: servers decide by sampling.
func (f ClientFeatures) ListsAll() bool {
	f.SamplingTools = f.Sampling
	return f.covers(AllFeatures)
}

// covers reports whether f has every feature of g.
func (f ClientFeatures) covers(g ClientFeatures) bool {
	return (f.Roots || !g.Roots) && (f.Sampling || !g.Sampling) && (f.SamplingTools || !g.SamplingTools) &&
		(f.FormElicitation || !g.FormElicitation) && (f.URLElicitation || !g.URLElicitation) &&
		(f.SamplingTasks || !g.SamplingTasks) && (f.ElicitationTasks || !g.ElicitationTasks)
}

// toolProbes asks and caches what a server lists to clients with fewer
// features than its catalog connection declares, per feature set. It is
// reset whenever the server's lists or connection change. What it needs
// of its server is given at construction (newServer), as funcs.
type toolProbes struct {
	ctx     context.Context // the server's: cancelled by Stop
	log     *slog.Logger
	timeout func() time.Duration // bounds a probe's listing
	// whileUp runs f under the server's lock if the server is up, and
	// otherwise returns why not: a probe starts only then (see running).
	whileUp func(f func()) error
	// tools are the tools the server lists on its shared connection.
	tools func() []*mcp.Tool
	// shared returns the server's shared connection, nil while down.
	shared func() *conn
	// dial opens a connection declaring f (Server.dial).
	dial func(ctx context.Context, runID string, f ClientFeatures) (*conn, error)

	mu      sync.Mutex
	results map[ClientFeatures]*probe
	// running counts the probes not yet ended, their connections
	// included: Stop waits for them, so that no child of a probe
	// outlives mcpmux. Added to only while the server is up, under the
	// server's lock (see probeFor), never after Stop has begun.
	running sync.WaitGroup
}

// probe is one probe's outcome, shared by everyone who waits for it.
type probe struct {
	done  chan struct{}
	names map[string]bool // tools listed; set before done is closed
	all   bool            // names are every tool the server lists
	err   error
}

// finished reports whether pr has ended.
func (pr *probe) finished() bool {
	select {
	case <-pr.done:
		return true
	default:
		return false
	}
}

// reset forgets every probe: the server's lists or connection changed. A
// probe still running answers those already waiting for it.
func (p *toolProbes) reset() {
	p.mu.Lock()
	p.results = nil
	p.mu.Unlock()
}

// toolsFor answers Server.ToolsFor.
func (p *toolProbes) toolsFor(ctx context.Context, f ClientFeatures) (map[string]bool, error) {
	if f.ListsAll() {
		return nil, nil
	}
	f.SamplingTools = f.Sampling // one probe for both (see ListsAll)
	if p.listedAllToFewer(f) {
		return nil, nil
	}
	pr, err := p.probeFor(ctx, f)
	if err != nil {
		return nil, err
	}
	if pr.all {
		return nil, nil
	}
	return pr.names, nil
}

// prefetch answers Server.Prefetch.
func (p *toolProbes) prefetch(f ClientFeatures) {
	if f.ListsAll() {
		return
	}
	go func() { _, _ = p.toolsFor(p.ctx, f) }()
}

// listedAllToFewer reports whether a finished probe for features that f
// has all of listed every tool.
func (p *toolProbes) listedAllToFewer(f ClientFeatures) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for g, pr := range p.results {
		if f.covers(g) && pr.finished() && pr.err == nil && pr.all {
			return true
		}
	}
	return false
}

// listsAll reports whether names are every tool the server lists.
func (p *toolProbes) listsAll(names map[string]bool) bool {
	for _, t := range p.tools() {
		if t != nil && !names[t.Name] {
			return false
		}
	}
	return true
}

// probeFor returns the outcome of a probe declaring f, making the probe if
// none was made for the current lists.
func (p *toolProbes) probeFor(ctx context.Context, f ClientFeatures) (*probe, error) {
	var pr *probe
	err := p.whileUp(func() {
		p.mu.Lock()
		pr = p.results[f]
		if pr == nil {
			pr = &probe{done: make(chan struct{})}
			if p.results == nil {
				p.results = map[ClientFeatures]*probe{}
			}
			p.results[f] = pr
			p.running.Add(1)
			go p.runProbe(pr, f)
		}
		p.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	select {
	case <-pr.done:
		return pr, pr.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runProbe lists the tools the server lists to a client declaring f: on a
// probe session that declares f; or, for a server of MCP 2026-07-28,
// where each request declares its client's capabilities, with a request
// of its shared connection declaring f (see probeConn). The answer is
// given before the probe session is closed: its process may take a while
// to exit, and nobody needs to wait for that but Stop.
func (p *toolProbes) runProbe(pr *probe, f ClientFeatures) {
	defer p.running.Done()
	c, shared := p.probeConn()
	if shared {
		defer c.release()
	} else {
		var err error
		if c, err = p.dial(p.ctx, "", f); err != nil {
			pr.err = p.probeFailed(f, err)
			close(pr.done)
			return
		}
		defer c.close()
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.timeout())
	defer cancel()
	tools, _, err := listTools(withRequest(ctx, &Request{Features: f}), c)
	if err != nil {
		pr.err = p.probeFailed(f, err)
		close(pr.done)
		return
	}
	pr.names = make(map[string]bool, len(tools))
	for _, t := range tools {
		if t != nil {
			pr.names[t.Name] = true
		}
	}
	pr.all = p.listsAll(pr.names)
	close(pr.done)
	p.log.Debug("capability probe", "capabilities", f.String(), "tools", len(pr.names), "lists_all", pr.all, "on_shared_connection", shared)
}

// probeFailed is the error of a probe for f that failed with err, logged
// unless the server is stopping (then the probe was cut short, and
// nobody waits for its answer).
func (p *toolProbes) probeFailed(f ClientFeatures, err error) error {
	err = fmt.Errorf("probing the tools listed to a client with capabilities %s: %w", f, err)
	if p.ctx.Err() == nil {
		p.log.Warn("capability probe failed; the client is shown every tool", "capabilities", f.String(), "error", err)
	}
	return err
}

// probeConn returns the shared connection, acquired, when it speaks MCP
// 2026-07-28: a probe there is one request, not a new session, and sees
// the server as its clients do (the same process, with the tools it has
// added since it started).
func (p *toolProbes) probeConn() (c *conn, shared bool) {
	cur := p.shared()
	if cur != nil && cur.stateless() && cur.acquire() {
		return cur, true
	}
	return nil, false
}

// ToolsFor returns the names of the tools the server lists to a client with
// features f, or nil if that is its whole list: when f.ListsAll, and when
// the server lists everything to a client with f (a server is taken never
// to list fewer tools to a client that declares more, so a client with
// more features than one that was listed everything is listed everything
// too, unasked).
//
// Otherwise the server is asked, once per feature set and connection (and
// again after its lists change), when the first client with those
// features comes, never ahead: on the shared connection with a request
// that declares f, for a server of MCP 2026-07-28; for one of an earlier
// version, whose session keeps what its client declared at
// initialization, on a probe session of its own that declares f (a
// second process, for a stdio server), closed once it has listed. A
// server that is not up is not probed: the caller gets nil and an error
// saying why.
func (s *Server) ToolsFor(ctx context.Context, f ClientFeatures) (map[string]bool, error) {
	return s.probes.toolsFor(ctx, f)
}

// Prefetch asks, in the background, what the server lists to a client
// with features f, unless it is known: when such a client has come, so
// that its first tools/list finds the answer ready or under way. A server
// that is not up is asked when it is (the caller calls again then).
func (s *Server) Prefetch(f ClientFeatures) { s.probes.prefetch(f) }
