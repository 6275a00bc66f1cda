// Package aggregator is the MCP server that clients talk to: it merges the
// tools of every upstream server into one namespaced catalog per profile and
// runs each call through the pipeline (pipeline.go). It serves stdio itself;
// package front serves it over HTTP.
package aggregator

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/journal/replay"
	"github.com/mcpmux/mcpmux/metrics"
	"github.com/mcpmux/mcpmux/replica"
	"github.com/mcpmux/mcpmux/tracing"
	"github.com/mcpmux/mcpmux/upstream"
)

// DefaultProfile names the profile that sees every server, served at /mcp
// and in stdio mode without --profile.
const DefaultProfile = ""

// Options configure an Aggregator. Pool is required.
type Options struct {
	Pool *upstream.Pool
	// Settings are the initial settings; nil means config.DefaultSettings.
	Settings *config.Settings
	// Logger; nil discards.
	Logger *slog.Logger
	// Mask is the masker of Logger (logs.Masked): it also hides the
	// config's secrets in what clients see and in the journal; nil masks
	// nothing.
	Mask *logs.Masker
	// Version is reported to clients as the server version.
	Version string
	// MaxNameLength bounds exposed tool names; zero means MaxNameLength.
	MaxNameLength int
	// RunID is the evaluation task id of calls that name none themselves (by
	// _meta.task_id or the X-Task-Id header): a stdio instance's --task-id.
	RunID string
	// Metrics count what happens; nil counts in a registry of its own.
	Metrics *metrics.Metrics
	// Stateless serves HTTP without sessions (see package front): no
	// session ids, nothing a client could be sent outside a request of
	// its own (server-to-client requests, list_changed, subscriptions).
	// False keeps sessions.
	Stateless bool
	// Tracing holds the span exporter (package tracing), which the
	// application replaces on reload; nil never traces.
	Tracing *tracing.Switch
	// Replicas signs the states of parked calls (mrtr.go) and names this
	// replica in them; nil signs with a key of this process and names
	// none.
	Replicas *replica.Set
}

// Aggregator serves the merged catalog of a pool.
type Aggregator struct {
	log          *slog.Logger
	mask         *logs.Masker // secrets of the config, hidden in what clients see
	pool         *upstream.Pool
	impl         *mcp.Implementation
	maxName      int
	defaultRunID string
	stateless    bool        // see Options.Stateless
	draining     atomic.Bool // see Drain

	ready     chan struct{} // closed once the pool has started
	readyOnce sync.Once

	invalidFiles atomic.Pointer[[]InvalidFile] // see SetInvalidFiles

	mu       sync.Mutex // serializes Sync and profile changes
	settings *config.Settings
	current  atomic.Pointer[config.Settings] // settings for the call path, which must not take mu
	catalog  *Catalog
	profiles map[string]*profile

	clients *clientSessions // what mcpmux keeps of each client, and passes on to the servers (clients.go)
	out     *clientOut      // what mcpmux writes to clients outside the go-sdk: stdout, GET streams (taskfront.go)
	files   *outputFiles    // files of output_dir servers served to the session they were linked to (outputfiles.go)
	sole    soleClient      // the client of an instance serving stdio (soleclient.go)

	pass    *passThrough // prompts, resources, completion, server logs (passthrough.go)
	meta    *metaTools   // mcpmux's own tools (meta.go)
	lazy    *lazyLists   // what expose added to each client's lazy list (lazy.go)
	lists   *listing     // each client's lists, and the capability sets of the clients come (lists.go)
	metrics *metrics.Metrics
	parked  *parkedCalls    // calls of sessionless clients waiting for their input (mrtr.go)
	tracing *tracing.Switch // spans of client requests (tracing.go); nil is off

	// mcpTasks are the MCP tasks of clients, of both protocol eras
	// (mcptasks.go, tasks2026.go): the pipeline hands them a call's task
	// and its answer, and they answer the tasks/* methods.
	mcpTasks *mcpTasks
	// pipeline runs every tool call (pipeline.go).
	pipeline *pipeline

	journal   *journal.Journal              // writes nothing unless the settings name a dir
	frozen    *journal.Journal              // the replayed journal, appended to with replay.miss: record
	pins      pins                          // pin and tool_pinning (pinning.go)
	replay    atomic.Pointer[replay.Replay] // opened by recording, answered from by the pipeline (replayed)
	recording *recording                    // opens the journal and the replay (recording.go)
}

// profile is one mcp.Server and the view it currently serves.
type profile struct {
	name   string
	server *mcp.Server
	view   atomic.Pointer[view]
	// registered maps exposed names (or URIs) to the hash of the
	// definition given to the SDK; guarded by Aggregator.mu.
	registered map[string]string // tools
	prompts    map[string]string
	resources  map[string]string
	templates  map[string]string
	// lists orders a call's answer after the list_changed its server's
	// changes made the SDK send (listnotes.go).
	lists listNotes
}

// New returns an aggregator with an empty catalog; call Sync after the
// pool has servers, and MarkReady when the initial start is over. It
// listens to the pool (see upstream.Pool.Listen): a server's changed
// lists, server-wide log messages and resource updates reach it.
func New(opts *Options) *Aggregator {
	settings := opts.Settings
	if settings == nil {
		settings = config.DefaultSettings()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	replicas := opts.Replicas
	if replicas == nil {
		replicas, _ = replica.New(replica.Options{}) // a key of its own: no error
	}
	a := &Aggregator{
		log:          log,
		mask:         opts.Mask,
		pool:         opts.Pool,
		impl:         &mcp.Implementation{Name: "mcpmux", Version: version},
		maxName:      opts.MaxNameLength,
		defaultRunID: cleanTaskID(opts.RunID),
		stateless:    opts.Stateless,
		ready:        make(chan struct{}),
		settings:     settings,
		catalog:      BuildCatalog(nil, settings.Separator, opts.MaxNameLength),
		profiles:     map[string]*profile{},
		metrics:      opts.Metrics,
		tracing:      opts.Tracing,
	}
	if a.metrics == nil {
		a.metrics = metrics.New(nil)
	}
	a.parked = newParkedCalls(replicas, a.callClient)
	a.sole.newCaller = a.newCaller
	a.clients = &clientSessions{
		pool: opts.Pool, log: log, sole: &a.sole,
		runIDOf: a.runIDOf, request: a.request, profiles: a.allProfiles,
	}
	a.files = &outputFiles{stateless: a.stateless, settings: a.current.Load, whenEnded: a.clients.whenEnded}
	a.out = &clientOut{log: log, sole: &a.sole, stdioLevel: a.clients.stdioLevel, keptLevel: a.clients.withKeptLevel}
	a.journal = journal.New(&journal.Options{Log: log, Mask: a.mask, OnError: a.metrics.JournalLineLost})
	a.frozen = journal.New(&journal.Options{Log: log, Mask: a.mask, OnError: a.metrics.JournalLineLost})
	a.pins.log, a.pins.resync = log, a.Sync
	a.lazy = &lazyLists{lookupClient: a.clients.lookup, client: a.clients.get, notify: a.out.notify}
	a.lists = &listing{servers: a.pool.Servers, server: a.pool.Get, clientID: a.clients.id, lazy: a.lazy.listed}
	a.meta = &metaTools{
		stateless: a.stateless, log: log, mask: a.mask, metrics: a.metrics,
		health: a.Health, sessionTools: a.lists.sessionTools, expose: a.lazy.expose,
	}
	a.pipeline = &pipeline{
		log:             a.log,
		mask:            a.mask,
		pool:            a.pool,
		metrics:         a.metrics,
		stateless:       a.stateless,
		settings:        a.current.Load,
		journal:         a.journal,
		frozen:          a.frozen,
		replay:          a.replay.Load,
		request:         a.request,
		runIDOf:         a.runIDOf,
		applyApprovals:  a.pins.applyApprovals,
		runMeta:         a.meta.call,
		touchExposed:    a.lazy.touch,
		sessionTools:    a.lists.sessionTools,
		linkOutputFiles: a.files.link,
	}
	// mcpmux__call_tool calls through the pipeline, as a client does.
	a.meta.pipeline = a.pipeline.call
	a.mcpTasks = &mcpTasks{
		stateless: a.stateless,
		log:       a.log,
		mask:      a.mask,
		server:    a.pool.Get,
		settings:  a.current.Load,
		signer:    replicas,
		request:   a.request,
		ruleCall:  a.pipeline.ruleCall,
		runIDOf:   a.runIDOf,
		whenEnded: func(ss *mcp.ServerSession, f func()) { a.clients.whenEnded(context.Background(), ss, f) },
	}
	a.pipeline.tasks = a.mcpTasks
	a.lists.toolDef = a.mcpTasks.toolListing
	a.pass = &passThrough{
		pool: opts.Pool, log: log, stateless: opts.Stateless,
		runIDOf: a.runIDOf, request: a.request, profiles: a.allProfiles,
		subs: subscriptions{n: map[string]int{}},
	}
	a.recording = &recording{log: log, journal: a.journal, frozen: a.frozen, current: &a.replay, runIDOf: a.runIDOf}
	a.lists.record = a.recording.listed
	a.recording.apply(settings)
	a.current.Store(settings)
	a.mu.Lock()
	a.syncProfilesLocked()
	a.mu.Unlock()
	// Listening last, when a is whole: an event can only reach what exists.
	opts.Pool.Listen(upstream.Events{
		Changed:         func(string) { a.Sync() },
		Log:             a.pass.broadcastLog,
		ResourceUpdated: a.pass.resourceUpdated,
		SoleClient:      a.sole.caller,
	})
	return a
}

// MarkReady ends the start-up phase: until then, tools/list waits, so that
// a client connecting early still gets the whole catalog.
func (a *Aggregator) MarkReady() { a.readyOnce.Do(func() { close(a.ready) }) }

// SetSettings replaces the settings (blacklist, profiles, timeouts) and
// applies them to the catalog. Servers are not touched.
func (a *Aggregator) SetSettings(s *config.Settings) {
	// Reading a replayed journal may take a while: not under mu, which
	// tools/list and reloads wait for.
	a.recording.apply(s)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.settings = s
	a.current.Store(s)
	a.rebuildLocked()
}

// Settings returns the current settings. It does not wait for a reload
// in progress: the call path and the HTTP front read it on every request.
func (a *Aggregator) Settings() *config.Settings { return a.current.Load() }

// Stateless reports whether the aggregator serves without sessions (see
// Options.Stateless).
func (a *Aggregator) Stateless() bool { return a.stateless }

// Sync rebuilds the catalog from the pool's current tool lists and updates
// every profile's server with the difference. Clients get one
// tools/list_changed per effective change and none when nothing changed.
func (a *Aggregator) Sync() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rebuildLocked()
}

func (a *Aggregator) rebuildLocked() {
	var servers []ServerFeatures
	running := map[string]bool{}
	for _, s := range a.pool.Servers() {
		running[s.Name()] = true
		for _, f := range a.lists.featureSets() {
			s.Prefetch(f) // for a server come up since those clients came
		}
		f := s.Features()
		servers = append(servers, ServerFeatures{Name: s.Name(), Prefix: s.Config().NamePrefix(),
			Tools: f.Tools, ToolJSON: f.ToolJSON, Prompts: f.Prompts, PromptJSON: f.PromptJSON, Resources: f.Resources, Templates: f.Templates, Instructions: f.Instructions, Subscribe: f.Subscribe, Tasks: f.Tasks})
	}
	servers = append(servers, a.recording.servers(running, a.settings)...)
	a.catalog = buildCatalog(servers, a.settings.Separator, a.maxName, a.catalog)
	a.catalog.drift = a.pins.check(a.catalog, a.settings)
	// Servers added by a reload get the clients' log level too.
	go a.clients.pushLogLevel(context.Background(), a.clients.lowestLevel())
	for _, err := range a.catalog.Conflicts {
		a.log.Error("tool not exposed", "error", err)
	}
	a.meta.logShadowed(a.catalog, a.settings)
	a.syncProfilesLocked()
	if searchable(a.settings) {
		// Ahead of the first search, which would otherwise wait for it.
		go a.catalog.SearchIndex()
	}
}

// syncProfilesLocked creates and drops profiles to match the settings and
// brings each profile's registered tools in line with its new view.
func (a *Aggregator) syncProfilesLocked() {
	want := map[string]bool{DefaultProfile: true}
	for name := range a.settings.Profiles {
		want[name] = true
	}
	for name, p := range a.profiles {
		if !want[name] {
			// Sessions still connected to a removed profile see it empty.
			p.server.RemoveTools(slices.Collect(maps.Keys(p.registered))...)
			p.server.RemovePrompts(slices.Collect(maps.Keys(p.prompts))...)
			p.server.RemoveResources(slices.Collect(maps.Keys(p.resources))...)
			p.server.RemoveResourceTemplates(slices.Collect(maps.Keys(p.templates))...)
			delete(a.profiles, name)
		}
	}
	for name := range want {
		p := a.profiles[name]
		if p == nil {
			p = a.newProfile(name)
			a.profiles[name] = p
		}
		a.applyView(p, newView(name, a.catalog, a.settings))
	}
}

func (a *Aggregator) newProfile(name string) *profile {
	p := &profile{name: name, registered: map[string]string{}, prompts: map[string]string{}, resources: map[string]string{}, templates: map[string]string{}}
	p.view.Store(newView(name, BuildCatalog(nil, a.settings.Separator, a.maxName), a.settings))
	p.server = mcp.NewServer(a.impl, &mcp.ServerOptions{
		Logger: logs.QuietInfo(a.log.With("component", "mcp-server", "profile", name)),
		// Advertise everything with listChanged even while the catalog is
		// empty: a client connecting before any server is up must still
		// learn that tools will come. Stateless, nothing reaches a client
		// outside its own requests: neither list changes nor resource
		// updates (nor subscriptions: see passThrough.subscribe).
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: !a.stateless},
			Prompts:   &mcp.PromptCapabilities{ListChanged: !a.stateless},
			Resources: &mcp.ResourceCapabilities{ListChanged: !a.stateless, Subscribe: !a.stateless},
			//lint:ignore SA1019 logging is deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where it is not, and passes the servers' log messages to its clients.
			Logging: &mcp.LoggingCapabilities{},
			// Answered by passThrough.completeMiddleware.
			Completions: &mcp.CompletionCapabilities{},
		},
		SubscribeHandler:   a.pass.subscribe(p),
		UnsubscribeHandler: a.pass.unsubscribe(p),
		InitializedHandler: a.sessionInitialized(p),
		// A client's changed roots reach the servers whose roots are its.
		//lint:ignore SA1019 roots are deprecated from MCP 2026-07-28 on; mcpmux speaks 2025-11-25 and older with clients and servers (docs/protocol.md), where they are not, and passes a client's roots to the servers that ask for them.
		RootsListChangedHandler: func(ctx context.Context, req *mcp.RootsListChangedRequest) {
			a.clients.rootsChanged(ctx, p, req.Session)
		},
		// Every version the SDK speaks: 2025-11-25 and older clients
		// initialize a session; 2026-07-28 clients send each request on
		// its own (over HTTP the front routes those to a stateless
		// handler of this server: see package front).
	})
	p.server.AddSendingMiddleware(keepElicitAnswers, p.lists.middleware, a.notBeforeInitialized(p))
	a.mcpTasks.registerTaskMethods(p)
	p.server.AddReceivingMiddleware(a.traceMiddleware(p), a.sessionlessMiddleware, a.waitReadyMiddleware, a.clients.sessionMiddleware, a.mcpTasks.tasksMiddleware(p), a.instructionsMiddleware(p), a.lists.middleware(p), a.files.middleware, a.pass.unlistedMiddleware(p), a.pass.completeMiddleware(p), a.pipeline.callMiddleware(p), a.clients.logLevelMiddleware)
	return p
}

// applyView registers the difference between what p's server has and v.
// New and changed tools are added before the view is published and removed
// ones are removed after, so that a name in the view is always registered.
func (a *Aggregator) applyView(p *profile, v *view) {
	changed := false
	defer func() {
		if changed {
			p.lists.changed()
		}
	}()
	var removed []string
	for name := range p.registered {
		if _, ok := v.visible[name]; !ok {
			removed = append(removed, name)
		}
	}
	for _, name := range sortedKeys(v.visible) {
		e := v.visible[name]
		if p.registered[name] == e.hash {
			continue
		}
		if err := addTool(p.server, e.Def, a.pipeline.toolHandler(p)); err != nil {
			a.log.Error("tool not exposed", "tool", name, "server", e.Server, "error", err)
			continue
		}
		p.registered[name] = e.hash
		changed = true
	}
	if a.pass.register(p, v) {
		changed = true
	}
	p.view.Store(v)
	if len(removed) > 0 {
		changed = true
		slices.Sort(removed)
		p.server.RemoveTools(removed...)
		for _, name := range removed {
			delete(p.registered, name)
		}
	}
}

// addTool registers a tool, turning the SDK's panics on definitions it
// does not accept into errors: a strange downstream tool must not take
// mcpmux down.
func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid tool definition: %v", r)
		}
	}()
	s.AddTool(t, h)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.Sort(keys)
	return keys
}

// Server returns the MCP server of a profile, or nil if there is none.
func (a *Aggregator) Server(profile string) *mcp.Server {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.profiles[profile]; p != nil {
		return p.server
	}
	return nil
}

// allProfiles returns the profiles of the moment.
func (a *Aggregator) allProfiles() []*profile {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Collect(maps.Values(a.profiles))
}

func (a *Aggregator) profile(name string) *profile {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.profiles[name]
}

// Tools returns the entries a profile lists, in list order (servers in
// config order, each server's tools in its order, then the meta tools); ok
// is false if the profile does not exist.
func (a *Aggregator) Tools(profileName string) (entries []*Entry, ok bool) {
	p := a.profile(profileName)
	if p == nil {
		return nil, false
	}
	return slices.Clone(p.view.Load().toolList), true
}

// RunStdio serves the profile over stdin/stdout until the client leaves
// or ctx is done.
func (a *Aggregator) RunStdio(ctx context.Context, profileName string) error {
	s := a.Server(profileName)
	if s == nil {
		return fmt.Errorf("unknown profile %q", profileName)
	}
	// As s.Run with mcp.StdioTransport, with the seams of tasks.
	return a.out.serveStdio(ctx, s, os.Stdin, os.Stdout)
}

// needsCatalog reports whether answering method depends on the catalog.
func needsCatalog(method string) bool {
	for _, p := range []string{"tools/", "prompts/", "resources/", "completion/"} {
		if strings.HasPrefix(method, p) {
			return true
		}
	}
	return false
}

// waitReadyMiddleware holds requests about tools, prompts and resources
// until the pool has started, so that an early client neither sees a
// partial list nor calls a tool that is about to appear.
func (a *Aggregator) waitReadyMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if needsCatalog(method) {
			select {
			case <-a.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return next(ctx, method, req)
	}
}
