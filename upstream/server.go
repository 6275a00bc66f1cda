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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// Options configure a Pool and its servers. Every field is optional.
type Options struct {
	// Logger receives the pool's logs and children's stderr; nil discards.
	Logger *slog.Logger
	// ClientInfo is how mcpmux introduces itself to tool servers.
	ClientInfo *mcp.Implementation
	// ConnectTimeout bounds a connection attempt of a server that sets
	// none itself; zero means config.DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Self is the binary run for tool_command: mcpmux; empty means
	// os.Executable.
	Self string
	// OnChanged is called, on a goroutine of the server, after the
	// features (tools, prompts, resources) of a server changed.
	OnChanged func(server string)
	// OnLog receives a server's log messages sent while none of its
	// clients' requests was running: server-wide messages.
	OnLog func(server string, p *mcp.LoggingMessageParams)
	// OnResourceUpdated receives a server's notifications/resources/updated.
	OnResourceUpdated func(server string, p *mcp.ResourceUpdatedNotificationParams)
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
	// Authorize, if set, shows a server's OAuth authorization URL to
	// whoever can approve the access (`mcpmux login`, tests), and the
	// server runs the authorization code flow when it must. Without it a
	// server whose tokens are missing, expired beyond refresh or revoked
	// is StateNeedsLogin until tokens are stored.
	Authorize func(ctx context.Context, server, authURL string) error
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
	Failures  int       `json:"failures,omitempty"`
	PID       int       `json:"pid,omitempty"`
	Transport string    `json:"transport"`
	Session   string    `json:"session"`
	Clients   int       `json:"clients,omitempty"`
	Since     time.Time `json:"since"`
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
	log    *slog.Logger
	sdkLog *slog.Logger // for the go-sdk client; its Info is our Debug
	useSSE atomic.Bool  // the URL turned out to speak legacy SSE only

	authOnce sync.Once     // makes auth
	auth     oauth.Handler // the auth: section's OAuth handler; nil without one
	authErr  error

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
	probes   toolProbes    // what the server lists to clients with fewer features
	clients  map[ClientID]*conn
	dialing  map[ClientID]chan struct{}
	logLevel mcp.LoggingLevel // the clients' lowest logging/setLevel; "" until one sets it
}

func newServer(cfg *config.Server, opts *Options) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{
		cfg:      cfg,
		opts:     opts,
		log:      log.With("server", cfg.Name),
		sdkLog:   logs.QuietInfo(log.With("server", cfg.Name, "component", "mcp-client")),
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		firstTry: make(chan struct{}),
		state:    StateStarting,
		since:    time.Now(),
		changed:  make(chan struct{}),
		clients:  map[ClientID]*conn{},
		dialing:  map[ClientID]chan struct{}{},
		limit:    newLimiter(cfg.MaxConcurrency),
	}
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
		Session:  s.cfg.Session,
		Clients:  len(s.clients),
		Since:    s.since,
	}
	if s.lastErr != nil {
		st.Error = s.lastErr.Error()
	}
	switch {
	case !s.cfg.IsRemote():
		st.Transport = "stdio"
	case s.cfg.Type == config.TransportSSE || s.useSSE.Load():
		st.Transport = "sse"
	default:
		st.Transport = "streamable-http"
	}
	if s.cur != nil {
		st.PID = s.cur.pid
	}
	for id, c := range s.clients {
		st.Connections = append(st.Connections, ConnStatus{Client: clientFingerprint(id), Task: c.task, PID: c.pid, Since: c.started})
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
	for _, c := range s.clients {
		if c.pid > 0 {
			pids = append(pids, c.pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// resumeTimeout is how long a resumed stream may stay silent (see
// resume.go).
func (s *Server) resumeTimeout() time.Duration {
	if s.cfg.ResumeTimeout > 0 {
		return s.cfg.ResumeTimeout
	}
	return config.DefaultResumeTimeout
}

func (s *Server) connectTimeout() time.Duration {
	switch {
	case s.cfg.ConnectTimeout > 0:
		return s.cfg.ConnectTimeout
	case s.opts.ConnectTimeout > 0:
		return s.opts.ConnectTimeout
	}
	return config.DefaultConnectTimeout
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

// start runs the supervisor.
func (s *Server) start() { go s.supervise() }

// supervise keeps the server connected until Stop: connect, list tools,
// wait for the connection to end, back off, repeat. For per-client servers
// it only probes the tool list; connections are made per client on demand.
func (s *Server) supervise() {
	defer close(s.done)
	var bo backoff
	first := true
	finishFirst := func() {
		if first {
			first = false
			close(s.firstTry)
		}
	}
	defer finishFirst()
	for {
		c, features, err := s.connectAndList()
		if s.ctx.Err() != nil {
			if c != nil {
				c.close()
			}
			return
		}
		if nl := asNeedsLogin(err); nl != nil {
			finishFirst()
			if !s.awaitLogin(nl) {
				return
			}
			continue
		}
		if err != nil {
			withdrawn := s.failed(err)
			delay := bo.next()
			s.log.Error("server failed to start", "error", err, "attempts_failed", s.Status().Failures, "retry_in", delay.Round(time.Millisecond))
			if withdrawn {
				s.log.Warn("server is down; its tools are withdrawn until it is back", "attempts_failed", withdrawAfter)
				s.notifyChanged()
			}
			finishFirst()
			if !s.sleep(delay) {
				return
			}
			s.mu.Lock()
			s.restarts++
			s.setState(StateRestarting, err)
			s.mu.Unlock()
			continue
		}

		if s.cfg.PerClient() {
			// The probe only served to learn the tools; each client gets
			// its own connection.
			c.close()
			s.setUp(nil, features)
			finishFirst()
			<-s.ctx.Done()
			return
		}

		if !s.setUp(c, features) {
			c.close()
			return
		}
		s.log.Info("server connected", "tools", len(features.Tools), "prompts", len(features.Prompts), "resources", len(features.Resources)+len(features.Templates), "pid", c.pid, "startup", time.Since(c.started).Round(time.Millisecond))
		finishFirst()
		go s.refreshLoop(c)

		var lost error
		select {
		case <-c.done:
			lost = c.waitErr
		case <-s.ctx.Done():
			return // Stop drains and closes c
		}
		s.mu.Lock()
		if s.cur == c {
			s.cur = nil
		}
		if s.state == StateNeedsLogin {
			// A call found the authorization gone (see loginLost).
			err := s.lastErr
			s.mu.Unlock()
			c.close()
			if !s.awaitLogin(err) {
				return
			}
			continue
		}
		s.restarts++
		reason := connLostError(lost)
		s.setState(StateRestarting, reason)
		s.mu.Unlock()
		c.close()
		if time.Since(c.started) > stableAfter {
			bo.reset()
		}
		delay := bo.next()
		s.log.Warn("server connection lost; restarting", "error", reason, "retry_in", delay.Round(time.Millisecond))
		if !s.sleep(delay) {
			return
		}
	}
}

// withdrawAfter is how many connection attempts in a row may fail before
// a server counts as down: its tools leave the catalog (clients are told
// with list_changed) until an attempt succeeds again. Until then they stay
// listed, so that a server that restarts after a crash does not make its
// tools flicker.
const withdrawAfter = 3

// failed records a failed connection attempt. It reports whether the
// server has just become down and its lists were withdrawn.
func (s *Server) failed(err error) (withdrawn bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures++
	s.setState(StateFailed, err)
	if s.failures == withdrawAfter && !s.features.same(Features{}) {
		s.features = Features{}
		s.probes.reset()
		return true
	}
	return false
}

// connLostError describes why a connection ended.
func connLostError(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return errors.New("the server exited or closed the connection")
	}
	return fmt.Errorf("connection lost: %w", err)
}

// connectAndList dials and fetches the lists.
func (s *Server) connectAndList() (*conn, Features, error) {
	c, err := s.dial(s.ctx, "", AllFeatures)
	if err != nil {
		return nil, Features{}, err
	}
	c.watch()
	ctx, cancel := context.WithTimeout(s.ctx, s.connectTimeout())
	defer cancel()
	s.applyLogLevel(ctx, c)
	f, err := listFeatures(ctx, c)
	if err != nil {
		c.close()
		return nil, Features{}, err
	}
	return c, f, nil
}

// setUp publishes a working connection and its lists. It reports false if
// the server was stopped meanwhile.
func (s *Server) setUp(c *conn, f Features) bool {
	s.mu.Lock()
	if s.state == StateStopped {
		s.mu.Unlock()
		return false
	}
	s.cur = c
	changed := !s.features.same(f)
	s.features = f
	// A new connection may list differently to a probe than the last one.
	s.probes.reset()
	s.failures = 0
	s.setState(StateUp, nil)
	s.mu.Unlock()
	if changed {
		s.notifyChanged()
	}
	return true
}

func (s *Server) notifyChanged() {
	if f := s.opts.OnChanged; f != nil {
		f(s.cfg.Name)
	}
}

// refreshLoop re-lists everything whenever the server says a list changed.
func (s *Server) refreshLoop(c *conn) {
	for {
		select {
		case <-c.done:
			return
		case <-s.ctx.Done():
			return
		case <-c.refresh:
		}
		ctx, cancel := context.WithTimeout(s.ctx, refreshListTimeout)
		f, err := listFeatures(ctx, c)
		cancel()
		if err != nil {
			s.log.Warn("refreshing the server's lists failed", "error", err)
			continue
		}
		s.mu.Lock()
		changed := s.cur == c && !s.features.same(f)
		if changed {
			s.features = f
			s.probes.reset()
		}
		s.mu.Unlock()
		if changed {
			s.log.Info("server's lists changed", "tools", len(f.Tools), "prompts", len(f.Prompts), "resources", len(f.Resources)+len(f.Templates))
			s.notifyChanged()
		}
	}
}

// sleep waits d or until Stop; it reports whether to go on.
func (s *Server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// Request says on whose behalf a request runs.
type Request struct {
	Client ClientID // caller's session, for per-client servers
	Task   string   // caller's task id, for the environment of a per-client child
	Caller Caller   // receives the server's requests and logs meanwhile; may be nil
	// Features are the caller's capabilities, which its own connection to a
	// per-client server declares; the zero value declares none (use
	// AllFeatures for a caller without known capabilities).
	Features ClientFeatures
}

// CallParams is one tool call for a server.
type CallParams struct {
	Request
	Params *mcp.CallToolParams
	// Progress, if set, receives the server's progress notifications for
	// the call (with mcpmux's token; the caller maps it back).
	Progress func(context.Context, *mcp.ProgressNotificationParams)
	// StreamClosed, if set, is called when a Streamable HTTP server closed
	// the call's response stream before answering and mcpmux reconnects to
	// resume it, with the retry delay the server asked for (see resume.go).
	// It returns whether the caller can no longer be reached for this call
	// (its own stream closed for good): the server's requests during the
	// rest of the call are then not its.
	StreamClosed func(retry time.Duration) (unreachable bool)
	// Task, if set, is the client's params.task: the call is
	// task-augmented (MCP 2025-11-25), and the result is what the server
	// answers, a CreateTaskResult if it took the task (see mcptasks.go).
	Task json.RawMessage
	// RunTask makes mcpmux run the tool as a task for a caller that called
	// it plainly (a tool whose execution.taskSupport is "required"): the
	// result is the task's.
	RunTask bool
}

// hooks are what a request's caller wants to hear about while it runs.
type hooks struct {
	progress     func(context.Context, *mcp.ProgressNotificationParams)
	streamClosed func(retry time.Duration) (unreachable bool)
}

// CallTool calls a tool on the server and returns its result as the server
// sent it: a raw request (raw.go), whose result is neither decoded nor
// re-encoded on its way to the client. Errors are of the types in
// errors.go or the context's error; a tool's own failure is a result with
// isError.
func (s *Server) CallTool(ctx context.Context, p CallParams) (json.RawMessage, error) {
	return run(ctx, s, p.Request, hooks{p.Progress, p.StreamClosed}, func(ctx context.Context, c *conn, token string) (json.RawMessage, error) {
		params := *p.Params
		if params.Arguments == nil {
			params.Arguments = json.RawMessage("{}") // TypeScript servers reject "arguments": null
		}
		if p.Progress != nil {
			params.Meta = withProgressToken(params.Meta, token)
		}
		return c.callTool(ctx, &params, &p, token) // plain, task-augmented or run as a task
	})
}

// GetPrompt gets a prompt from the server.
func (s *Server) GetPrompt(ctx context.Context, r Request, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return run(ctx, s, r, hooks{}, func(ctx context.Context, c *conn, _ string) (*mcp.GetPromptResult, error) {
		return c.cs.GetPrompt(ctx, p)
	})
}

// ReadResource reads a resource from the server.
func (s *Server) ReadResource(ctx context.Context, r Request, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return run(ctx, s, r, hooks{}, func(ctx context.Context, c *conn, _ string) (*mcp.ReadResourceResult, error) {
		return c.cs.ReadResource(ctx, p)
	})
}

// Complete asks the server for completions, and returns its result as it
// sent it (a raw request, raw.go).
func (s *Server) Complete(ctx context.Context, r Request, p *mcp.CompleteParams) (json.RawMessage, error) {
	return run(ctx, s, r, hooks{}, func(ctx context.Context, c *conn, _ string) (json.RawMessage, error) {
		return c.rawCall(ctx, "completion/complete", p)
	})
}

// Subscribe subscribes to updates of a resource, on the caller's
// connection (the shared one, or the caller's own).
func (s *Server) Subscribe(ctx context.Context, r Request, uri string) error {
	_, err := run(ctx, s, r, hooks{}, func(ctx context.Context, c *conn, _ string) (struct{}, error) {
		return struct{}{}, c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	return err
}

// Unsubscribe ends a subscription made with Subscribe.
func (s *Server) Unsubscribe(ctx context.Context, r Request, uri string) error {
	_, err := run(ctx, s, r, hooks{}, func(ctx context.Context, c *conn, _ string) (struct{}, error) {
		return struct{}{}, c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	return err
}

// run sends one request on a connection for r, registered as in flight so
// that what the server asks or says meanwhile reaches r.Caller.
//
// An HTTP server that answers "unknown session" has not run the request:
// it restarted and forgot us. Then the request is sent once more, on the
// new session, so that the client never sees that restart.
func run[R any](ctx context.Context, s *Server, r Request, h hooks, send func(context.Context, *conn, string) (R, error)) (R, error) {
	res, err := runOnce(ctx, s, r, h, send)
	if errors.Is(err, errSessionLost) {
		s.log.Info("resending the request on a new session")
		res, err = runOnce(ctx, s, r, h, send)
	}
	return res, err
}

func runOnce[R any](ctx context.Context, s *Server, r Request, h hooks, send func(context.Context, *conn, string) (R, error)) (R, error) {
	var zero R
	if !s.cfg.PerClient() {
		free, err := s.limit.take(ctx)
		if err != nil {
			return zero, err
		}
		defer free()
	}
	c, err := s.acquire(ctx, r)
	if err != nil {
		return zero, err
	}
	defer c.release()
	if s.cfg.PerClient() {
		free, err := c.limit.take(ctx)
		if err != nil {
			return zero, err
		}
		defer free()
	}
	// Stop cancels the request with a *StoppedError as the cause when it
	// runs past the grace period; a resumed stream that stays silent, with
	// a *ResultLostError.
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req := &inflight{caller: r.Caller, progress: h.progress, cancel: cancel}
	if s.cfg.IsRemote() {
		var closed func(time.Duration)
		if h.streamClosed != nil {
			closed = func(retry time.Duration) {
				if h.streamClosed(retry) {
					c.detach(req)
				}
			}
		}
		var w *streamWatch
		cctx, w = watchCall(cctx, s.cfg.Name, s.resumeTimeout(), closed, cancel)
		defer w.finish()
	}
	token := newProgressToken()
	defer c.begin(token, req)()
	res, err := send(cctx, c, token)
	if err != nil {
		return zero, s.callError(ctx, cctx, c, err)
	}
	c.gate.wait(ctx)
	return res, nil
}

// withProgressToken returns a copy of m with our progress token.
func withProgressToken(m mcp.Meta, token string) mcp.Meta {
	out := make(mcp.Meta, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out["progressToken"] = token
	return out
}

// callError classifies a failed call; cctx is the request's own context,
// below the caller's ctx.
func (s *Server) callError(ctx, cctx context.Context, c *conn, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var stopped *StoppedError
	if errors.As(context.Cause(cctx), &stopped) {
		return stopped
	}
	if lost := lostCause(cctx); lost != nil {
		return lost
	}
	if nl := asNeedsLogin(err); nl != nil {
		s.loginLost(c, nl)
		return &UnavailableError{Server: s.cfg.Name, Err: nl}
	}
	var refresh *oauth.RefreshError
	if errors.As(err, &refresh) {
		return &UnavailableError{Server: s.cfg.Name, Err: refresh}
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		// The HTTP server forgot our session (it restarted): reconnect. No
		// new call may take this connection meanwhile. (Checked before
		// JSON-RPC errors: writing a request the server refuses so wraps
		// the transport's own "rejected" error too.)
		s.log.Warn("server lost our session; reconnecting")
		c.stopTaking()
		go c.close()
		return &LostError{Server: s.cfg.Name, Err: errSessionLost}
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return &RPCError{Server: s.cfg.Name, Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	}
	if connGone(err) || isClosed(c) {
		// The connection is gone: later calls must wait for the next one
		// rather than find this one before the supervisor notices.
		c.stopTaking()
		return &LostError{Server: s.cfg.Name, Err: c.lostReason(err)}
	}
	if w := watchOf(cctx); w != nil {
		if lost := w.failure(); lost != nil {
			return lost
		}
	}
	return &LostError{Server: s.cfg.Name, Err: err}
}

// errSessionLost is the cause of a call refused by an HTTP server that no
// longer knows the session: the server did not run it.
var errSessionLost = errors.New("the server restarted and lost the session")

// connGone reports whether err says the connection itself broke: the
// child's pipes closed (a write to a dead child fails with EPIPE) or the
// session ended.
func connGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, mcp.ErrConnectionClosed)
}

func isClosed(c *conn) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// acquire returns a connection for a call, registered as in flight.
func (s *Server) acquire(ctx context.Context, r Request) (*conn, error) {
	if s.cfg.PerClient() {
		return s.acquireClient(ctx, r.Client, r.Task, r.Features)
	}
	var patience <-chan time.Time // started at the first wait for a restart
	for {
		s.mu.Lock()
		if c := s.cur; c != nil && c.acquire() {
			s.mu.Unlock()
			return c, nil
		}
		state, lastErr, changed := s.state, s.lastErr, s.changed
		s.mu.Unlock()
		switch state {
		case StateFailed, StateNeedsLogin:
			return nil, &UnavailableError{Server: s.cfg.Name, Err: lastErr}
		case StateStopped:
			return nil, &UnavailableError{Server: s.cfg.Name, Err: ErrStopped}
		}
		// Starting, restarting, or up on a connection that is going away:
		// wait for the outcome; for a restart, only briefly.
		if patience == nil && state != StateStarting {
			t := time.NewTimer(restartWait)
			defer t.Stop()
			patience = t.C
		}
		select {
		case <-changed:
		case <-patience:
			why := "it is restarting"
			if lastErr != nil {
				why = fmt.Sprintf("it is restarting after: %v;", lastErr)
			}
			return nil, &UnavailableError{Server: s.cfg.Name, Err: fmt.Errorf("%s it was not back within %v", why, restartWait)}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// restartWait is how long a call waits for a restarting server to come
// back before it fails; tests shorten it.
var restartWait = 10 * time.Second

var (
	// ErrStopped is why a stopped server refuses calls.
	ErrStopped = errors.New("the server was removed or mcpmux is shutting down")
	// ErrShuttingDown is why calls are cut short by Pool.Close.
	ErrShuttingDown = errors.New("mcpmux is shutting down")
	errRetired      = errors.New("the server was removed or changed by a config reload")
)

// acquireClient returns the caller's own connection, opening it on first
// use with the caller's features.
func (s *Server) acquireClient(ctx context.Context, id ClientID, task string, f ClientFeatures) (*conn, error) {
	for {
		s.mu.Lock()
		if s.state == StateStopped {
			s.mu.Unlock()
			return nil, &UnavailableError{Server: s.cfg.Name, Err: ErrStopped}
		}
		if c := s.clients[id]; c != nil {
			if c.acquire() {
				s.mu.Unlock()
				return c, nil
			}
			delete(s.clients, id)
		}
		if wait := s.dialing[id]; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if max := s.cfg.MaxClients; max > 0 && len(s.clients)+len(s.dialing) >= max {
			s.mu.Unlock()
			return nil, &LimitError{Server: s.cfg.Name, Max: max}
		}
		wait := make(chan struct{})
		s.dialing[id] = wait
		s.mu.Unlock()

		c, err := s.dial(s.ctx, task, f)
		if err == nil {
			s.applyLogLevel(ctx, c)
		}

		s.mu.Lock()
		delete(s.dialing, id)
		close(wait)
		if nl := asNeedsLogin(err); nl != nil {
			s.setState(StateNeedsLogin, nl)
		} else if err == nil && s.state == StateNeedsLogin {
			s.setState(StateUp, nil) // logged in again
		}
		if err != nil {
			s.mu.Unlock()
			return nil, &UnavailableError{Server: s.cfg.Name, Err: err}
		}
		if s.state == StateStopped {
			s.mu.Unlock()
			c.close()
			return nil, &UnavailableError{Server: s.cfg.Name, Err: ErrStopped}
		}
		c.watch()
		c.idle = time.AfterFunc(s.cfg.IdleTimeout, func() { s.closeIdle(id, c) })
		c.acquire()
		s.clients[id] = c
		s.mu.Unlock()
		s.log.Info("opened per-client connection", "client", string(id), "task", task, "pid", c.pid)
		go func() {
			<-c.done
			s.forgetClient(id, c)
		}()
		return c, nil
	}
}

// closeIdle closes a per-client connection that has not been used for the
// idle timeout.
func (s *Server) closeIdle(id ClientID, c *conn) {
	c.mu.Lock()
	idle := c.inflight == 0 && time.Since(c.lastUse) >= s.cfg.IdleTimeout-time.Millisecond
	c.mu.Unlock()
	if idle && c.holdsTasks() {
		// Its client's tasks may still run on it: idle once they are over.
		c.idle.Reset(s.cfg.IdleTimeout)
		return
	}
	if !idle {
		return
	}
	if s.forgetClient(id, c) {
		s.log.Info("closing idle per-client connection", "client", string(id), "idle", s.cfg.IdleTimeout)
	}
	c.close()
}

// forgetClient removes c from the client map; it reports whether it was there.
func (s *Server) forgetClient(id ClientID, c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clients[id] == c {
		delete(s.clients, id)
		return true
	}
	return false
}

// ReleaseClient closes the connection of a client session that ended.
// Calls still running on it are given a short time to finish.
func (s *Server) ReleaseClient(id ClientID) {
	s.mu.Lock()
	c := s.clients[id]
	delete(s.clients, id)
	s.mu.Unlock()
	if c == nil {
		return
	}
	s.log.Info("client left; closing its connection", "client", string(id), "pid", c.pid)
	c.drain(context.Background(), clientLeftDrain)
	c.close()
}

// Stop closes the server: no new calls, running calls get up to drain to
// finish, then every connection and child is closed. It returns when all
// are gone.
func (s *Server) Stop(ctx context.Context, drain time.Duration) {
	s.stop(ctx, drain, ErrStopped)
}

// stop is Stop; reason says why, to the calls it cuts short.
func (s *Server) stop(ctx context.Context, drain time.Duration, reason error) {
	s.cancel()
	s.mu.Lock()
	var conns []*conn
	if s.cur != nil {
		conns = append(conns, s.cur)
	}
	for _, c := range s.clients {
		conns = append(conns, c)
	}
	s.cur = nil
	s.clients = map[ClientID]*conn{}
	s.setState(StateStopped, nil)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			if !c.drain(ctx, drain) {
				// Cut the calls short with an answer that says why,
				// before the connection goes.
				c.abort(&StoppedError{Server: s.cfg.Name, Reason: reason, Grace: drain})
				c.drain(context.Background(), abortWait)
			}
			c.close()
		})
	}
	wg.Wait()
	<-s.done
	s.closeAuth()
}

// MaxCallTimeout is the longest call deadline of any of the server's tools.
func (s *Server) MaxCallTimeout(global time.Duration) time.Duration {
	d := s.cfg.CallTimeout("", global)
	for _, t := range s.cfg.ToolTimeout {
		d = max(d, t)
	}
	return d
}

const (
	stableAfter     = 30 * time.Second // a connection up this long resets the backoff
	clientLeftDrain = 5 * time.Second
	abortWait       = 2 * time.Second // for cancelled calls to return their answers
)

// backoff yields exponentially growing delays with jitter.
type backoff struct{ n int }

// backoffUnit is the first delay; tests shorten it.
var backoffUnit = 500 * time.Millisecond

func (b *backoff) next() time.Duration {
	d := backoffUnit << min(b.n, 6) // up to 32s
	b.n++
	// ±25% jitter, so that servers failing together do not retry together.
	return d*3/4 + rand.N(d/2)
}

func (b *backoff) reset() { b.n = 0 }

// clientFingerprint names a client session in status output without
// revealing its id: the first 12 hex digits of its SHA-256.
func clientFingerprint(id ClientID) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}
