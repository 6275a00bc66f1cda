// Package upstream keeps the connections to tool servers: one supervised
// MCP client session per server (or per client session, for stateful
// servers), restarted with backoff when it dies.
//
// It knows nothing of the aggregator: it reports tool list changes through
// the callback in [Options].
package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/oauth"
)

// State is the condition of a server's connection.
type State string

const (
	StateStarting   State = "starting"   // first connection attempt running
	StateUp         State = "up"         // connected (per-client: able to connect)
	StateRestarting State = "restarting" // connection lost or failed; reconnecting
	StateFailed     State = "failed"     // last attempt failed; retrying after a backoff
	StateStopped    State = "stopped"    // removed or shut down
)

// States are all the states, StateNeedsLogin (auth.go) included, in the
// order of a server's life.
var States = []State{StateStarting, StateUp, StateRestarting, StateFailed, StateNeedsLogin, StateStopped}

// Options configure a Pool and its servers. Every field is optional.
type Options struct {
	// Logger receives the pool's logs and children's stderr; nil discards.
	Logger *slog.Logger
	// Mask is the masker of Logger (logs.Masked), which also masks the
	// children's stderr quoted in errors; nil masks nothing.
	Mask *logs.Masker
	// ClientInfo is how mcpmux introduces itself to tool servers.
	ClientInfo *mcp.Implementation
	// ConnectTimeout bounds a connection attempt of a server that sets
	// none itself; zero means config.DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Self is the binary run for tool_command: mcpmux; empty means
	// os.Executable.
	Self string
	// Transport, if set, may return the transport for a server instead of
	// a child process or HTTP; tests use it for in-memory servers. A nil
	// result means the usual transport.
	Transport func(*config.Server) mcp.Transport
	// Groups, if set, is told of each child's process group from its
	// start until it has ended, so that it can end the groups should
	// mcpmux die without closing them (see internal/reaper).
	Groups GroupTracker
	// Tokens keeps the OAuth tokens of servers with auth: oauth (see
	// package oauth); without it such servers cannot connect.
	Tokens *oauth.Store
	// ManyClients says the pool serves several client sessions at once
	// (Streamable HTTP with sessions): a server with session: auto that
	// keeps state per session then gets a connection per client (see
	// Server.PerClient). Over stdio there is one client, which may as
	// well have the shared connection.
	ManyClients bool
	// Authorize, if set, shows a server's OAuth authorization URL to
	// whoever can approve the access (`mcpmux login`, tests), and the
	// server runs the authorization code flow when it must. Without it a
	// server whose tokens are missing, expired beyond refresh or revoked
	// is StateNeedsLogin until tokens are stored.
	Authorize func(ctx context.Context, server, authURL string) error
	// MaxResultBytes, if set, gives max_result_bytes, read at each
	// connection: no message bigger is read from a url: server (see
	// wireTransport). Nil means config.DefaultMaxResultBytes.
	MaxResultBytes func() config.Size
	// Liveness is how often a server with calls waiting is pinged; four
	// times it, how long a ping may go unanswered before the server is
	// unresponsive (see liveness.go). Zero means DefaultLiveness.
	Liveness time.Duration
	// Timing holds the pool's other waits; its zero value is mcpmux's.
	// Tests shorten them here, per pool, instead of in globals.
	Timing Timing
}

// Timing is how long the pool waits for things; a zero field means the
// default named beside it.
type Timing struct {
	// Backoff is the first delay before a server is started again
	// (DefaultBackoff); each failure in a row doubles it, up to 64 times.
	Backoff time.Duration
	// KeepAlive is how often a quiet session of MCP 2025-11-25 is pinged
	// (DefaultKeepAlive).
	KeepAlive time.Duration
	// RestartWait is how long a call waits for a restarting server to
	// come back before it fails (DefaultRestartWait).
	RestartWait time.Duration
	// ProgressLinger is how long a finished request's progress token is
	// still routed (DefaultProgressLinger).
	ProgressLinger time.Duration
}

// The defaults of Timing.
const (
	DefaultBackoff        = 500 * time.Millisecond
	DefaultKeepAlive      = 30 * time.Second
	DefaultRestartWait    = 10 * time.Second
	DefaultProgressLinger = 2 * time.Second
)

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (t Timing) backoff() time.Duration     { return orDefault(t.Backoff, DefaultBackoff) }
func (t Timing) keepAlive() time.Duration   { return orDefault(t.KeepAlive, DefaultKeepAlive) }
func (t Timing) restartWait() time.Duration { return orDefault(t.RestartWait, DefaultRestartWait) }
func (t Timing) progressLinger() time.Duration {
	return orDefault(t.ProgressLinger, DefaultProgressLinger)
}

// GroupTracker learns the process groups of the children while they run.
type GroupTracker interface {
	Track(pgid int)
	Untrack(pgid int)
}

// ClientID identifies a client session, for per-client connections.
type ClientID string

// Status is a snapshot of a server's condition, for check and /healthz.
type Status struct {
	Name     string `json:"name"`
	State    State  `json:"state"`
	Error    string `json:"error,omitempty"`
	Tools    int    `json:"tools"`
	Restarts int    `json:"restarts"`
	// Failures counts the connection attempts that failed in a row; zero
	// once one succeeds.
	Failures  int    `json:"failures,omitempty"`
	PID       int    `json:"pid,omitempty"`
	Transport string `json:"transport"`
	// Protocol is the MCP version spoken with the server (its latest
	// connection); empty until one connected.
	Protocol string    `json:"protocol,omitempty"`
	Session  string    `json:"session"`
	Clients  int       `json:"clients,omitempty"`
	Since    time.Time `json:"since"`
	// Connections are the open per-client connections.
	Connections []ConnStatus `json:"connections,omitempty"`
}

// ConnStatus describes one per-client connection.
type ConnStatus struct {
	// Client is a fingerprint of the client session's id, not the id: an
	// HTTP session id is a credential, and /healthz is open to probes.
	Client string    `json:"client"`
	Task   string    `json:"task,omitempty"`
	PID    int       `json:"pid,omitempty"`
	Since  time.Time `json:"since"`
}

// Server is one tool server and its connection(s).
type Server struct {
	cfg    *config.Server
	opts   *Options
	events *listeners // the pool's (see Pool.Listen)
	log    *slog.Logger
	sdkLog *slog.Logger // for the go-sdk client; its Info is our Debug
	// session says whether each client session gets its own connection
	// (session.go).
	session *sessionMode
	// bounds are the waits and sizes its settings come to (bounds.go).
	bounds bounds
	// probes asks what the server lists to clients with fewer features
	// (capabilities.go).
	probes *toolProbes

	auth   *serverAuth // the OAuth of a server with auth: (auth.go)
	dialer *dialer     // opens its connections (conn.go)

	ctx      context.Context // cancelled by Stop
	cancel   context.CancelFunc
	done     chan struct{} // supervisor exited
	firstTry chan struct{} // first connection attempt finished

	mu       sync.Mutex
	state    State
	lastErr  error
	since    time.Time
	restarts int
	failures int           // consecutive failed connection attempts
	changed  chan struct{} // closed and replaced on every state change
	limit    limiter       // max_concurrency of a shared server; nil: unlimited
	cur      *conn         // the shared connection while up
	features Features      // last known lists; kept while restarting
	era      string        // the protocol version of the latest connection
	clients  *clientConns  // per-client connections (perclient.go); its maps under mu

	logLevel logLevel // the level the clients asked for (logging.go)
}

func newServer(cfg *config.Server, opts *Options, events *listeners) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:      cfg,
		opts:     opts,
		events:   events,
		log:      log.With("server", cfg.Name),
		sdkLog:   logs.QuietInfo(log.With("server", cfg.Name, "component", "mcp-client")),
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		firstTry: make(chan struct{}),
		state:    StateStarting,
		since:    time.Now(),
		changed:  make(chan struct{}),
		limit:    newLimiter(cfg.MaxConcurrency),
		bounds:   bounds{cfg: cfg, opts: opts},
		auth:     &serverAuth{cfg: cfg, tokens: opts.Tokens, authorize: opts.Authorize},
	}
	s.session = newSessionMode(cfg, opts.ManyClients, s.log)
	s.dialer = &dialer{
		cfg:       cfg,
		opts:      opts,
		bounds:    s.bounds,
		log:       s.log,
		auth:      s.auth,
		perClient: s.PerClient,
		adopt:     func(c *conn) { c.srv = s },
		sawEra: func(era string) {
			s.mu.Lock()
			s.era = era
			s.mu.Unlock()
		},
	}
	s.clients = &clientConns{
		mu:       &s.mu,
		cfg:      cfg,
		log:      s.log,
		ctx:      ctx,
		dial:     s.dialer.dial,
		apply:    s.logLevel.apply,
		state:    func() State { return s.state },
		setState: s.setState,
		features: s.Features,
		conns:    map[ClientID]*conn{},
		dialing:  map[ClientID]chan struct{}{},
	}
	s.probes = &toolProbes{
		ctx:     ctx,
		log:     s.log,
		timeout: s.bounds.connectTimeout,
		whileUp: func(f func()) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.state != StateUp {
				return fmt.Errorf("server %q is not up", cfg.Name)
			}
			f()
			return nil
		},
		tools: func() []*mcp.Tool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.features.Tools
		},
		shared: s.current,
		dial:   s.dialer.dial,
	}
	return s
}

// Config returns the server's configuration.
func (s *Server) Config() *config.Server { return s.cfg }

// Name returns the server's config name.
func (s *Server) Name() string { return s.cfg.Name }

// Tools returns the last known tool list. The slice is never modified.
func (s *Server) Tools() []*mcp.Tool { return s.Features().Tools }

// Features returns the last known lists of the server.
func (s *Server) Features() Features {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.features
}

// Status reports the server's condition.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		Name:     s.cfg.Name,
		State:    s.state,
		Tools:    len(s.features.Tools),
		Restarts: s.restarts,
		Failures: s.failures,
		Session:  s.session.mode(),
		Protocol: s.era,
		Clients:  len(s.clients.conns),
		Since:    s.since,
	}
	if s.lastErr != nil {
		st.Error = s.lastErr.Error()
	}
	switch {
	case !s.cfg.IsRemote():
		st.Transport = "stdio"
	case s.cfg.Type == config.TransportSSE || s.dialer.useSSE.Load():
		st.Transport = "sse"
	default:
		st.Transport = "streamable-http"
	}
	if s.cur != nil {
		st.PID = s.cur.pid
	}
	for id, c := range s.clients.conns {
		st.Connections = append(st.Connections, ConnStatus{Client: clientFingerprint(id), Task: c.runID, PID: c.pid, Since: c.started})
	}
	slices.SortFunc(st.Connections, func(a, b ConnStatus) int { return strings.Compare(a.Client, b.Client) })
	return st
}

// PIDs returns the process ids of the server's running children.
func (s *Server) PIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []int
	if s.cur != nil && s.cur.pid > 0 {
		pids = append(pids, s.cur.pid)
	}
	for _, c := range s.clients.conns {
		if c.pid > 0 {
			pids = append(pids, c.pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// setState changes the state and wakes everyone waiting for a change.
// s.mu must be held.
func (s *Server) setState(st State, err error) {
	if s.state == StateStopped {
		return
	}
	s.state, s.lastErr, s.since = st, err, time.Now()
	close(s.changed)
	s.changed = make(chan struct{})
}

// maxCallTimeout is the longest call deadline of any of the tools of the
// server configured by cfg: it needs only the config.
func maxCallTimeout(cfg *config.Server, global time.Duration) time.Duration {
	d := cfg.CallTimeout("", global)
	for _, t := range cfg.ToolTimeout {
		d = max(d, t)
	}
	return d
}

// clientFingerprint names a client session in status output without
// revealing its id: the first 12 hex digits of its SHA-256.
func clientFingerprint(id ClientID) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

// PerClient reports whether each client session gets its own connection:
// session: per-client, or session: auto for a server found to keep state
// per session (see sessionMode.keepsState).
func (s *Server) PerClient() bool { return s.session.perClient() }

// current is the shared connection while up; nil otherwise.
func (s *Server) current() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}
