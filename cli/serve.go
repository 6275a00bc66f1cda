package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/netutil"

	"github.com/mcpmux/mcpmux/aggregator"
	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/internal/logs"
)

// serveFlags are the flags of serving (mcpmux [flags]).
type serveFlags struct {
	commonFlags
	httpAddr  string
	profile   string
	sec       *httpSecurity
	grace     time.Duration
	stateless bool
	noWatch   bool
	task      string
}

func newServeFlags(stdout, stderr io.Writer) (*flag.FlagSet, *serveFlags) {
	fs := newFlagSet("serve", stdout, stderr)
	f := &serveFlags{}
	f.register(fs, "info")
	fs.StringVar(&f.httpAddr, "http", "", "serve Streamable HTTP on `ADDR` (host:port) instead of stdio")
	fs.StringVar(&f.profile, "profile", "", "stdio mode: serve this profile instead of all tools")
	f.sec = registerHTTPSecurity(fs)
	fs.DurationVar(&f.grace, "shutdown-grace", 10*time.Second, "on shutdown, how long running calls may take to finish (HTTP: while draining)")
	fs.BoolVar(&f.stateless, "stateless", false, "HTTP: serve without sessions, so that any replica answers any request (as stateless: true in mcpmux.yaml; see docs/scaling.md)")
	fs.BoolVar(&f.noWatch, "no-watch", false, "do not watch the config directory; reload only on SIGHUP")
	fs.StringVar(&f.task, "task-id", os.Getenv("TASK_ID"), "task of this instance's calls, unless a call names its own ($TASK_ID)")
	return fs, f
}

func serveCmd(args []string, stdout, stderr io.Writer) int {
	fs, f := newServeFlags(stdout, stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	log, err := f.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux:", err)
		return 2
	}
	mode := withSessions
	switch {
	case f.stateless && f.httpAddr == "":
		log.Error("--stateless applies to --http: a stdio client is one session")
		return 2
	case f.stateless:
		mode = stateless
	case f.httpAddr != "":
		mode = sessionsByConfig
	}
	in, err := newInstance(f.configDir, f.task, mode, log)
	if err != nil {
		log.Error("cannot start", "error", explainConfigDir(err, fs, f.configDir))
		return 1
	}
	in.logFileErrors()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := in.startReloading(ctx, f.configDir, !f.noWatch); err != nil {
		log.Error("cannot watch the config directory", "error", err)
		return 1
	}

	if f.httpAddr != "" {
		opts, err := f.sec.options(in.snap.Settings)
		if err != nil {
			log.Error("cannot serve HTTP", "error", err)
			return 2
		}
		logs.MaskerOf(log).Add(f.sec.accepted...)
		in.tokens = f.sec.rotation(opts, log)
		return serveHTTP(ctx, in, f.httpAddr, opts, f.grace)
	}
	if in.agg.Server(f.profile) == nil {
		log.Error("unknown profile", "profile", f.profile, "profiles", in.snap.Settings.ProfileNames())
		return 2
	}
	go in.startServers(ctx)
	log.Info("serving MCP on stdio", "config", f.configDir, "profile", f.profile)
	// The session outlives the signal until the running calls are answered
	// (see shutdown.go).
	session, endSession := context.WithCancel(context.Background())
	defer endSession()
	closeServers := sync.OnceFunc(func() { in.close(f.grace) })
	go func() {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			closeServers()
			endSession()
		case <-session.Done():
		}
	}()
	err = in.agg.RunStdio(session, f.profile)
	endSession()
	stop()
	closeServers()
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		log.Error("stdio session ended with an error", "error", err)
		return 1
	}
	return 0
}

// errNoToken is why mcpmux --http will not bind a non-loopback address
// without a token; the container docs quote it.
const errNoToken = "refusing to serve on a non-loopback address without a token: set --token, MCPMUX_TOKEN, --token-file or token_file, or bind to 127.0.0.1"

func serveHTTP(ctx context.Context, in *instance, addr string, opts *aggregator.HTTPOptions, grace time.Duration) int {
	log := in.log
	if !hasToken(opts) && !isLoopback(addr) {
		log.Error(errNoToken, "addr", addr)
		return 2
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Error("cannot listen", "addr", addr, "error", err)
		return 1
	}
	// At most max_connections at once: more wait in the kernel's backlog,
	// so that clients holding connections cannot use up the descriptors
	// that children and config files need.
	maxConns := in.snap.Settings.Connections()
	ln = netutil.LimitListener(ln, maxConns)
	srv := &http.Server{
		Handler:           in.agg.HTTPHandler(opts),
		ReadHeaderTimeout: 10 * time.Second,
		// Request bodies are bounded by request_body_timeout (see
		// aggregator.HTTPHandler); an idle keep-alive connection goes after
		// this, so that it does not hold a place of max_connections.
		IdleTimeout: idleConnTimeout,
	}
	requests := countRequests(srv)
	go in.startServers(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "profiles", in.snap.Settings.ProfileNames(), "auth", hasToken(opts), "max_connections", maxConns, "stateless", in.load.Stateless)

	code := 0
	deadline := time.Now().Add(grace) // of a server that stopped by itself
	select {
	case <-ctx.Done():
		deadline = time.Now().Add(grace)
		drain(in, requests, grace)
	case err := <-served:
		log.Error("HTTP server stopped", "error", err)
		code = 1
	}
	log.Info("shutting down")
	// Stop accepting, let the calls still running finish (within what is
	// left of the grace), then close everything, including streams that
	// would keep Shutdown waiting.
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	go func() { _ = srv.Shutdown(sctx) }()
	in.closeBy(deadline, grace)
	requests.wait(answerWait)
	_ = srv.Close()
	return code
}

// idleConnTimeout closes keep-alive HTTP connections idle for that long.
const idleConnTimeout = 2 * time.Minute

// startReloading reloads the config on SIGHUP and, if watch is set, on
// every change in the directory. Reloads wait for the initial start.
func (in *instance) startReloading(ctx context.Context, dir string, watch bool) error {
	// Without a watcher, SIGHUP reads the directory itself; with one, it
	// asks the watcher for a snapshot now.
	rescan := func() {
		snap, err := config.Load(dir, in.load)
		if err != nil {
			in.log.Error("config directory unreadable; keeping the running configuration", "error", err)
			return
		}
		in.reload(ctx, snap)
	}
	if watch {
		w, err := config.Watch(ctx, dir, &config.WatchOptions{Logger: in.log, Load: in.load})
		if err != nil {
			return err
		}
		rescan = w.Rescan
		go in.watch(ctx, w)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				in.log.Info("SIGHUP: reloading the config")
				rescan()
			}
		}
	}()
	return nil
}

// isLoopback reports whether a listen address binds to loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
