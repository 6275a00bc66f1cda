package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/stdioconn"
	"github.com/mcpmux/mcpmux/oauth"
)

// dialer opens the connections of a server: a child process or an HTTP
// session, with its go-sdk client session. It is given at construction
// (newServer) the server's config, bounds, logger and OAuth, and funcs for
// the little it tells or asks of the server. The conns it opens belong to
// the server (adopt) and call back into it; the dialer holds no pointer
// to the server.
type dialer struct {
	cfg    *config.Server
	opts   *Options
	bounds bounds
	log    *slog.Logger
	auth   *serverAuth
	useSSE atomic.Bool // the URL turned out to speak legacy SSE only
	// perClient says the connections are each one client's (Server.PerClient).
	perClient func() bool
	// adopt makes a new conn the server's (conn.srv), before its session
	// opens: what the server asks meanwhile goes through it.
	adopt func(c *conn)
	// sawEra records the protocol version of the latest connection.
	sawEra func(era string)
}

// offeredProtocol is the protocol version offered to the server for its
// config protocol (see era.go): the go-sdk client tries server/discover for
// 2026-07-28 and falls back to initialize on any error, so auto and a
// pinned 2026-07-28 offer the same; a pin is checked once connected. A
// legacy HTTP+SSE server is offered 2025-11-25 unless pinned to
// 2026-07-28: that transport predates MCP 2026-07-28, and a refused
// server/discover on it would hide the reason of a failed connection
// (such as an endpoint on another origin) behind the initialize that
// follows.
func (d *dialer) offeredProtocol() string {
	sse := d.cfg.Type == config.TransportSSE || d.useSSE.Load()
	if d.cfg.Protocol == config.Protocol2025 || sse && d.cfg.Protocol != config.Protocol2026 {
		return config.Protocol2025
	}
	return config.Protocol2026
}

const (
	keepAliveFailures  = 3
	terminateGrace     = 2 * time.Second // after closing stdin, before SIGTERM
	killGrace          = 3 * time.Second // after SIGTERM, before SIGKILL
	refreshListTimeout = 30 * time.Second
)

// conn is one MCP client session with a tool server: a child process or an
// HTTP session.
type conn struct {
	srv      *Server
	cs       *mcp.ClientSession
	cancel   context.CancelFunc // ends the context the session was opened with
	pid      int                // process group of a stdio child; 0 for remote servers
	cmd      *exec.Cmd          // the stdio child; nil for remote servers
	groups   GroupTracker       // told when the child's group has ended; may be nil
	limit    limiter            // max_concurrency of a per-client connection
	started  time.Time
	runID    string         // task id the connection was opened for (per-client)
	features ClientFeatures // the capabilities it declares
	era      string         // the protocol version in use (era.go)
	ttl      listTTL        // when its lists expire (2026 servers' ttlMs)

	wire    mcp.Connection // the session's connection, for raw requests (raw.go)
	raw     *rawCalls      // raw requests waiting for their answers
	gate    *progressGate  // orders answers after the progress before them
	refresh chan struct{}  // tools/list_changed seen; capacity 1, coalescing
	lists   refreshes      // the refreshes asked for and done (refreshLoop)
	// ofClient: a client's own connection (perclient.go), whose lists are
	// its client's (refreshOwn), not the catalog's.
	ofClient atomic.Bool
	// shared: the server's shared connection (connectAndList), not a
	// probe's or a client's own.
	shared  bool
	done    chan struct{} // closed when the session has ended (see watch)
	waitErr error         // why it ended; set before done is closed

	tasks *callTasks  // the tasks servers run for its calls (mcptasks.go, tasks2026.go)
	asked *askedTasks // the tasks mcpmux runs for its server (servertasks.go)

	mu       sync.Mutex
	requests map[string]*inflight // by progress token
	owner    Caller               // latest caller; the client of a per-client connection
	// own are the resources a client's own connection lists (refreshOwn):
	// those the server made for the client's session show only to it.
	ownResources []*mcp.Resource
	inflight     int
	drained      chan struct{} // closed when draining and inflight reaches 0
	draining     bool
	closed       bool
	lastUse      time.Time
	idle         *time.Timer // per-client connections only
	// unresponsive is set when the server stopped answering pings while
	// calls waited (liveness.go).
	unresponsive *UnresponsiveError
}

// dial connects to the server described by d.cfg, under the connect
// timeout, declaring the client features f. task, when set, is put into a
// child's environment as TASK_ID.
func (d *dialer) dial(parent context.Context, runID string, f ClientFeatures) (*conn, error) {
	// The context given to Connect must outlive dial: the SSE transport
	// keeps its event stream on it. So the connect timeout is a timer that
	// cancels it, stopped once connected, and close cancels it for good.
	ctx, cancel := context.WithCancelCause(parent)
	timer := time.AfterFunc(d.bounds.connectTimeout(), func() { cancel(errConnectTimeout) })
	c, err := d.connect(ctx, runID, f)
	if timedOut := !timer.Stop(); err == nil && timedOut {
		c.close()
		err = fmt.Errorf("no answer within %v", d.bounds.connectTimeout())
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	c.cancel = func() { cancel(nil) }
	return c, nil
}

// errConnectTimeout is the cause of a dial's context ended by the connect
// timeout, as against one whose caller gave up (the server stopping, a
// call ending): only the first is the server's fault.
var errConnectTimeout = errors.New("connect timeout")

// dialError describes a connection attempt that failed, err, after its
// context ctx ended: the server did not answer in time, or whoever dialed
// gave up (then it is no failure of the server's, and says so).
func (d *dialer) dialError(ctx context.Context, err error, noAnswer string) error {
	if context.Cause(ctx) == errConnectTimeout {
		return fmt.Errorf("%s within %v: %w", noAnswer, d.bounds.connectTimeout(), err)
	}
	return fmt.Errorf("given up before it answered (the server is stopping, or its caller went): %w", context.Cause(ctx))
}

// connect opens the session; ctx bounds the attempt and the connection.
// It records the era the server speaks, and refuses one other than a
// pinned protocol.
func (d *dialer) connect(ctx context.Context, runID string, f ClientFeatures) (*conn, error) {
	c, err := d.openSession(ctx, runID, f)
	if err != nil {
		return nil, err
	}
	c.era = c.cs.InitializeResult().ProtocolVersion
	if err := checkEra(d.cfg.Protocol, c.era); err != nil {
		c.close()
		return nil, err
	}
	d.sawEra(c.era)
	return c, nil
}

// openSession connects the go-sdk client session of a new conn.
func (d *dialer) openSession(ctx context.Context, runID string, f ClientFeatures) (*conn, error) {
	c := &conn{started: time.Now(), runID: runID, features: f, gate: newProgressGate(), raw: newRawCalls(), refresh: make(chan struct{}, 1), done: make(chan struct{}), lastUse: time.Now()}
	d.adopt(c)
	c.tasks = connTasks(c)
	c.asked = connAsked(c) // after c.tasks, whose callerFor it uses
	// A client's own connection knows its client from the start: what the
	// server asks while it initializes (roots/list) is that client's.
	c.owner, _ = ctx.Value(ownerKey{}).(Caller)
	c.shared, _ = ctx.Value(sharedKey{}).(bool)
	if d.perClient() {
		c.limit = newLimiter(d.cfg.MaxConcurrency)
	}
	client := mcp.NewClient(d.opts.ClientInfo, c.clientOptions(f))
	client.AddReceivingMiddleware(c.rootsMiddleware, c.elicitMiddleware)
	sessOpts := &mcp.ClientSessionOptions{ProtocolVersion: d.offeredProtocol()}

	if f := d.opts.Transport; f != nil {
		if t := f(d.cfg); t != nil {
			cs, err := client.Connect(ctx, c.tap(t, c.gate), sessOpts)
			if err != nil {
				return nil, fmt.Errorf("connecting: %w", err)
			}
			c.cs = cs
			return c, nil
		}
	}
	if d.cfg.IsRemote() {
		cs, err := d.dialRemote(ctx, client, sessOpts, c)
		if err != nil {
			return nil, err
		}
		c.cs = cs
		return c, nil
	}

	cmd, stderr, err := d.command(runID)
	if err != nil {
		return nil, err
	}
	child := &childTransport{CommandTransport: &stdioconn.CommandTransport{Command: cmd, TerminateDuration: terminateGrace, Options: stdioconn.Options{
		// A result up to max_result_bytes is read (and then cut to it);
		// past the bound one call fails and the connection goes on.
		MaxMessageBytes: int(max(int64(stdioconn.DefaultMaxMessageBytes), d.bounds.maxResultBytes()+2*eventSlack)),
		Logger:          d.log,
	}}, groups: d.opts.Groups}
	cs, err := client.Connect(ctx, c.tap(child, c.gate), sessOpts)
	stderr.started()
	if cmd.Process != nil {
		c.pid = cmd.Process.Pid
	}
	c.groups = d.opts.Groups
	if err != nil {
		// Connect has closed the session, which waits for the child; make
		// sure nothing else of its process group survives.
		c.endGroup(0)
		if ctx.Err() != nil {
			err = d.dialError(ctx, err, "no answer to initialize (is it an MCP server on stdio? lines it printed to stdout that are not JSON-RPC are logged as dropped)")
		}
		// Connect's failed close has waited for the child, so its exit
		// status is known.
		if st := cmd.ProcessState; st != nil && st.Exited() {
			err = fmt.Errorf("%w (%v)", err, st)
		}
		if tail := stderr.Tail(); tail != "" {
			err = fmt.Errorf("%w; its stderr ended with: %s", err, tail)
		}
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	c.cs, c.cmd = cs, cmd
	return c, nil
}

// dialRemote connects over Streamable HTTP and falls back to legacy SSE when
// the server does not speak it (as the MCP spec's compatibility notes say).
// A server with auth: is authorized by its OAuth handler, and does not
// fall back: its failure is about authorization, not the transport.
func (d *dialer) dialRemote(ctx context.Context, client *mcp.Client, opts *mcp.ClientSessionOptions, c *conn) (*mcp.ClientSession, error) {
	h, err := d.auth.handler()
	if err != nil {
		return nil, err
	}
	legacy := d.cfg.Type == config.TransportSSE || d.useSSE.Load()
	var legacyAuth oauth.Handler // the Streamable HTTP transport authorizes by itself
	if legacy {
		legacyAuth = h
	}
	// One client for either transport: a server with auth: does not fall
	// back to legacy SSE below.
	hc, maxEvent := d.httpClient(c, legacyAuth), d.bounds.maxEventSize()
	sse := func() (*mcp.ClientSession, error) {
		return client.Connect(ctx, c.tap(&mcp.SSEClientTransport{Endpoint: d.cfg.URL, HTTPClient: hc, MaxEventSize: maxEvent}, nil), opts)
	}
	if legacy {
		cs, err := sse()
		if err != nil {
			return nil, fmt.Errorf("connecting to %s (SSE): %w", d.cfg.URL, err)
		}
		return cs, nil
	}
	t := &mcp.StreamableClientTransport{Endpoint: d.cfg.URL, HTTPClient: hc, MaxRetries: 2, MaxEventSize: maxEvent}
	if h != nil {
		t.OAuthHandler = h
	}
	cs, err := client.Connect(ctx, c.tap(t, nil), opts)
	if err == nil {
		return cs, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("connecting to %s: %w", d.cfg.URL, d.dialError(ctx, err, "no answer"))
	}
	if h != nil {
		return nil, fmt.Errorf("connecting to %s: %w", d.cfg.URL, err)
	}
	cs, sseErr := sse()
	if sseErr != nil {
		return nil, fmt.Errorf("connecting to %s: Streamable HTTP: %v; legacy SSE: %v", d.cfg.URL, err, sseErr)
	}
	d.log.Info("server speaks legacy SSE only; using it", "url", d.cfg.URL)
	d.useSSE.Store(true)
	return cs, nil
}

// credentialTransport keeps a server's credentials on its origin: the
// configured headers go on every request to the configured URL's origin
// (scheme, host and port), and on none to another. A redirect to another
// origin is followed without them: the configured headers, an
// Authorization (the OAuth token, which the go-sdk sets itself and Go
// keeps on a redirect to the same host name on another port) and a
// Cookie are removed. A request mcpmux did not get by a redirect to
// another origin, the endpoint a legacy SSE server names, is refused.
type credentialTransport struct {
	base    http.RoundTripper
	origin  string // of the configured URL
	headers map[string]string
}

func newCredentialTransport(base http.RoundTripper, endpoint string, headers map[string]string) *credentialTransport {
	u, _ := url.Parse(endpoint)
	return &credentialTransport{base: base, origin: origin(u), headers: headers}
}

func (t *credentialTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) == t.origin {
		if len(t.headers) > 0 {
			req = req.Clone(req.Context())
			for k, v := range t.headers {
				req.Header.Set(k, v)
			}
		}
		return t.base.RoundTrip(req)
	}
	if req.Response == nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("refusing to send a request to %s: the server named an address on another origin than its URL (%s)", origin(req.URL), t.origin)
	}
	req = req.Clone(req.Context())
	for k := range t.headers {
		req.Header.Del(k)
	}
	req.Header.Del("Authorization")
	req.Header.Del("Cookie")
	return t.base.RoundTrip(req)
}

// origin is u's scheme, host and port, the port spelled out.
func origin(u *url.URL) string {
	if u == nil {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// childStderr is the read end of a child's stderr pipe, logged line by
// line. An OS pipe read here, not exec.Cmd's copying: with that, Wait
// would wait for every grandchild that holds stderr open (the server under
// an npx wrapper), delaying each close of such a server by WaitDelay.
type childStderr struct {
	*lineLogger
	w      *os.File      // the child's end; closed here once it has started
	copied chan struct{} // closed when every writer has closed the pipe
}

// stderrChunk is the most of a child's stderr read at once, and the size
// asked for its pipe: a child that floods stderr costs mcpmux one read per
// stderrChunk (the default pipe holds 64 KiB, and io.Copy reads 32).
// stderrFirstChunk is the buffer a child starts with: most write a few
// lines now and then, and 20 buffers of stderrChunk each were half of the
// live heap of a 20-server mcpmux.
const (
	stderrChunk      = 256 << 10
	stderrFirstChunk = 4 << 10
)

// drain reads the child's stderr into the line logger until every writer
// has closed it. Its buffer doubles, up to stderrChunk, whenever a read
// fills it (the child writes faster than it is read), and goes back to
// stderrFirstChunk when a read takes less than that: a child that floods
// only at times holds the big buffer only then.
func (e *childStderr) drain(r *os.File) {
	defer close(e.copied)
	defer r.Close()
	if rc, err := r.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, stderrChunk) }) // best effort
	}
	buf := make([]byte, stderrFirstChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = e.lineLogger.Write(buf[:n])
		}
		if err != nil {
			return
		}
		buf = nextStderrBuffer(buf, n)
	}
}

// nextStderrBuffer is the buffer of the read after one that read n bytes
// into buf (see drain).
func nextStderrBuffer(buf []byte, n int) []byte {
	switch {
	case n == len(buf) && len(buf) < stderrChunk:
		return make([]byte, min(2*len(buf), stderrChunk))
	case n < stderrFirstChunk && len(buf) > stderrFirstChunk:
		return make([]byte, stderrFirstChunk)
	}
	return buf
}

// started closes mcpmux's copy of the child's end, so that the pipe ends
// when the child's process group does.
func (e *childStderr) started() { _ = e.w.Close() }

// Tail returns the last lines, once the child's output has been read (or
// after a moment, should a grandchild keep the pipe open).
func (e *childStderr) Tail() string {
	select {
	case <-e.copied:
	case <-time.After(time.Second):
	}
	return e.lineLogger.Tail()
}

// command builds the child process of a stdio server, and the logger that
// receives its stderr.
func (d *dialer) command(runID string) (*exec.Cmd, *childStderr, error) {
	path, err := resolveCommand(d.cfg.Command, d.opts.Self)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(path, d.cfg.Args...)
	cmd.Dir = d.cfg.Cwd
	cmd.Env = childEnv(os.Environ(), d.cfg.Env, runID)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("creating the stderr pipe: %w", err)
	}
	stderr := &childStderr{lineLogger: newLineLogger(d.log, d.opts.Mask, "stderr"), w: w, copied: make(chan struct{})}
	go stderr.drain(r)
	cmd.Stderr = w
	// Own process group, so that shutdown reaches an npx wrapper's child
	// too; and die with us if we are killed without a chance to clean up
	// (the rest of the group is the reaper's job: see internal/reaper).
	// The kernel sends Pdeathsig when the thread that forked exits, not the
	// process: childTransport forks on a thread that never exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A grandchild holding stderr open must not block Wait forever.
	cmd.WaitDelay = killGrace
	return cmd, stderr, nil
}

// resolveCommand applies the two aliases of the config format: "mcpmux" is
// this binary, and "python" is python3 on machines that have no python.
func resolveCommand(name, self string) (string, error) {
	switch name {
	case "mcpmux":
		if self != "" {
			return self, nil
		}
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("finding the mcpmux binary: %w", err)
		}
		return exe, nil
	case "python":
		if _, err := exec.LookPath("python"); err != nil {
			if p, err3 := exec.LookPath("python3"); err3 == nil {
				return p, nil
			}
		}
	}
	if strings.ContainsRune(name, '/') {
		return name, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("command %q not found on PATH", name)
	}
	return p, nil
}

// childEnv is our environment without mcpmux's own settings (its token
// must not leak into every tool server), plus the server's env and TASK_ID.
func childEnv(base []string, extra map[string]string, runID string) []string {
	env := make([]string, 0, len(base)+len(extra)+1)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MCPMUX_") {
			continue
		}
		if _, override := extra[k]; override {
			continue
		}
		if runID != "" && k == "TASK_ID" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	if runID != "" {
		env = append(env, "TASK_ID="+runID)
	}
	return env
}

// watch starts waiting for the end of the session; c.done is closed then.
func (c *conn) watch() {
	go func() {
		c.waitErr = c.cs.Wait()
		c.raw.end(c.waitErr)
		close(c.done)
	}()
}

func (c *conn) signalRefresh() {
	c.lists.ask()
	if c.ofClient.Load() {
		// A client's own connection: its lists are its client's alone.
		go c.refreshOwn()
		return
	}
	select {
	case c.refresh <- struct{}{}:
	default:
	}
}

// acquire registers a call on c; it fails once c is draining.
func (c *conn) acquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining || c.closed {
		return false
	}
	c.inflight++
	c.lastUse = time.Now()
	if c.idle != nil {
		c.idle.Stop()
	}
	return true
}

// release ends a call registered by acquire.
func (c *conn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
	c.lastUse = time.Now()
	if c.inflight == 0 {
		if c.draining && c.drained != nil {
			close(c.drained)
			c.drained = nil
		}
		if c.idle != nil && !c.draining {
			c.idle.Reset(c.srv.cfg.IdleTimeout)
		}
	}
}

// stopTaking makes acquire fail from now on, for a connection about to be
// closed.
func (c *conn) stopTaking() {
	c.mu.Lock()
	c.draining = true
	c.mu.Unlock()
}

// abort cancels the requests running on c, with cause as the reason their
// callers read.
func (c *conn) abort(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.requests {
		if !r.done && r.cancel != nil {
			r.cancel(cause)
		}
	}
}

// lostReason says why c's session ended under a call: for a child, how it
// exited, once the transport has reaped it (which follows at once when it
// died).
func (c *conn) lostReason(err error) error {
	if c.cmd == nil {
		return connLostError(err)
	}
	select {
	case <-c.done:
		// The transport has waited for the child before ending the session.
		if st := c.cmd.ProcessState; st != nil {
			return fmt.Errorf("the server exited (%v)", st)
		}
	case <-time.After(exitStatusWait):
	}
	return errors.New("the server exited or closed its output")
}

// exitStatusWait is how long a call cut off by a dying child waits to learn
// its exit status.
const exitStatusWait = time.Second

// drain stops new calls and waits up to timeout for running ones to end;
// it reports whether they did.
func (c *conn) drain(ctx context.Context, timeout time.Duration) bool {
	c.mu.Lock()
	c.draining = true
	if c.idle != nil {
		c.idle.Stop()
	}
	if c.inflight == 0 {
		c.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	c.drained = ch
	n := c.inflight
	c.mu.Unlock()
	c.srv.log.Info("waiting for running calls before closing", "calls", n, "limit", timeout)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		c.srv.log.Warn("running calls did not finish in time; cancelling them", "limit", timeout)
	case <-ctx.Done():
	}
	return false
}

// close ends the session and makes sure the child's whole process group is
// gone: closing stdin first (the polite way the MCP spec describes), then
// SIGTERM, then SIGKILL.
func (c *conn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.draining = true
	if c.idle != nil {
		c.idle.Stop()
	}
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		_ = c.cs.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(terminateGrace + killGrace):
	}
	c.endGroup(killGrace)
	if c.cancel != nil {
		c.cancel()
	}
}

// endGroup terminates the child's process group (see killGroup) and then
// tells the tracker it has ended.
func (c *conn) endGroup(grace time.Duration) {
	killGroup(c.pid, grace)
	if c.groups != nil && c.pid > 0 {
		c.groups.Untrack(c.pid)
	}
}

// killGroup terminates the process group pgid: SIGTERM, then SIGKILL if
// anything is left after grace. It returns when the group is gone or
// SIGKILL was sent.
func killGroup(pgid int, grace time.Duration) {
	if pgid <= 0 {
		return
	}
	if err := syscall.Kill(-pgid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		return
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
