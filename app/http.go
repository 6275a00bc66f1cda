package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mcpmux/mcpmux/front"
	"golang.org/x/net/netutil"
)

// HTTP is how an instance serves Streamable HTTP: where, to whom, and how
// long a shutdown waits.
type HTTP struct {
	// Addr is the host:port to listen on.
	Addr string
	// Token is the one token clients must send (--token, or
	// MCPMUX_TOKEN); TokenFile names a file of tokens, one per line
	// (--token-file). With neither, token_file of mcpmux.yaml names the
	// file. A token file is read again on every reload.
	Token, TokenFile string
	// Origins are browser origins allowed besides the loopback ones and
	// mcpmux.yaml's allowed_origins (--allowed-origin).
	Origins []string
	// Grace is how long running calls may take to finish at shutdown,
	// the drain included.
	Grace time.Duration
}

// ErrNoToken is why mcpmux will not serve HTTP on a non-loopback address
// without a token; the container docs quote it.
var ErrNoToken = errors.New("refusing to serve on a non-loopback address without a token: set --token, MCPMUX_TOKEN, --token-file or token_file, or bind to 127.0.0.1")

// A RefusedError is a front that mcpmux refuses to serve as it was asked
// to: a bad token, token file or origin, or no token on a non-loopback
// address. The command line exits 2 for it, as for a bad flag.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// idleConnTimeout closes keep-alive HTTP connections idle for that long.
const idleConnTimeout = 2 * time.Minute

// maxHeaderBytes bounds a request's header, read before any token is
// checked: with Go's default (1 MiB), max_connections clients sending
// unfinished headers hold about a GiB per thousand connections. MCP
// requests carry a few small headers (a token, a session id, Mcp-*);
// HAProxy's whole buffer is 16 KiB. A bigger header gets 431.
const maxHeaderBytes = 64 << 10

// readHeaderTimeout is how long a client may take to send its header.
const readHeaderTimeout = 10 * time.Second

// An HTTPFront is an instance's Streamable HTTP front, listening.
type HTTPFront struct {
	in       *Instance
	front    *front.Front
	h        *HTTP
	ln       net.Listener
	srv      *http.Server
	requests *requestCounter
	auth     bool // clients must send a token
}

// ListenHTTP resolves the front's tokens and origins, refuses a
// non-loopback address without a token, and listens. From here on a
// token file is read again on every reload: before any can run, since
// reloads begin with Serve.
func (in *Instance) ListenHTTP(h *HTTP) (*HTTPFront, error) {
	if err := front.CheckOrigins(h.Origins); err != nil {
		return nil, &RefusedError{err}
	}
	tokens, err := front.ReadTokens(front.TokenSources{Flag: h.Token, File: h.TokenFile}, in.snap.Settings, in.log, in.mask)
	if err != nil {
		return nil, &RefusedError{err}
	}
	auth := !tokens.Empty()
	if !auth && !front.IsLoopback(h.Addr) {
		return nil, &RefusedError{fmt.Errorf("%s: %w", h.Addr, ErrNoToken)}
	}
	ln, err := net.Listen("tcp", h.Addr)
	if err != nil {
		return nil, err
	}
	fr := front.New(&front.Options{Engine: in.agg, Metrics: in.metrics, Tokens: tokens, AllowedOrigins: h.Origins, Logger: in.log, Mask: in.mask, Replicas: in.replicas})
	in.reloadMu.Lock()
	in.front = fr
	in.reloadMu.Unlock()
	// At most max_connections at once: more wait in the kernel's backlog,
	// so that clients holding connections cannot use up the descriptors
	// that children and config files need.
	ln = netutil.LimitListener(ln, in.snap.Settings.Connections())
	srv := &http.Server{
		Handler:           fr,
		ReadHeaderTimeout: readHeaderTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// Request bodies are bounded by request_body_timeout (see
		// package front); an idle keep-alive connection goes after
		// this, so that it does not hold a place of max_connections.
		IdleTimeout: idleConnTimeout,
	}
	return &HTTPFront{in: in, front: fr, h: h, ln: ln, srv: srv, requests: countRequests(srv), auth: auth}, nil
}

// Addr is the address the front listens on.
func (f *HTTPFront) Addr() net.Addr { return f.ln.Addr() }

// Serve starts the servers and serves until ctx ends, reloading on SIGHUP
// and, if watch is set, on every change of the config directory. Then it
// drains and shuts down in order (see shutdown.go). The error is why it
// stopped before ctx ended.
func (f *HTTPFront) Serve(ctx context.Context, watch bool) error {
	in, grace := f.in, f.h.Grace
	if err := in.follow(ctx, watch); err != nil {
		f.ln.Close()
		return fmt.Errorf("watching the config directory: %w", err)
	}
	go in.Start(ctx)
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(f.ln) }()
	in.log.Info("serving MCP over Streamable HTTP", "url", "http://"+f.ln.Addr().String()+"/mcp", "profiles", in.snap.Settings.ProfileNames(), "auth", f.auth, "max_connections", in.snap.Settings.Connections(), "stateless", in.load.Stateless)

	var stopped error
	deadline := time.Now().Add(grace) // of a server that stopped by itself
	select {
	case <-ctx.Done():
		deadline = time.Now().Add(grace)
		f.front.Drain() // streams held open for cancelled calls are no running calls
		drain(in, f.requests, grace)
	case err := <-served:
		stopped = fmt.Errorf("the HTTP server stopped: %w", err)
	}
	in.log.Info("shutting down")
	// Stop accepting, let the calls still running finish (within what is
	// left of the grace), then close everything, including streams that
	// would keep Shutdown waiting.
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	go func() { _ = f.srv.Shutdown(sctx) }()
	in.closeBy(deadline, grace)
	f.requests.wait(answerWait)
	_ = f.srv.Close()
	return stopped
}
