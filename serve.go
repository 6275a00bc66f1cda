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

func serveCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf commonFlags
	cf.register(fs, "info")
	httpAddr := fs.String("http", "", "serve Streamable HTTP on `ADDR` (host:port) instead of stdio")
	profile := fs.String("profile", "", "stdio mode: serve this profile instead of all tools")
	sec := registerHTTPSecurity(fs)
	grace := fs.Duration("shutdown-grace", 10*time.Second, "on shutdown, how long running calls may take to finish (HTTP: while draining)")
	statelessFlag := fs.Bool("stateless", false, "HTTP: serve without sessions, so that any replica answers any request (as stateless: true in mcpmux.yaml; see docs/scaling.md)")
	noWatch := fs.Bool("no-watch", false, "do not watch the config directory; reload only on SIGHUP")
	task := fs.String("task-id", os.Getenv("TASK_ID"), "task of this instance's calls, unless a call names its own ($TASK_ID)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	log, err := cf.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux:", err)
		return 2
	}
	mode := withSessions
	switch {
	case *statelessFlag && *httpAddr == "":
		log.Error("--stateless applies to --http: a stdio client is one session")
		return 2
	case *statelessFlag:
		mode = stateless
	case *httpAddr != "":
		mode = sessionsByConfig
	}
	in, err := newInstance(cf.configDir, *task, mode, log)
	if err != nil {
		log.Error("cannot start", "error", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := in.startReloading(ctx, cf.configDir, !*noWatch); err != nil {
		log.Error("cannot watch the config directory", "error", err)
		return 1
	}

	if *httpAddr != "" {
		opts, err := sec.options(in.snap.Settings)
		if err != nil {
			log.Error("cannot serve HTTP", "error", err)
			return 2
		}
		logs.MaskerOf(log).Add(sec.accepted...)
		in.tokens = sec.rotation(opts, log)
		return serveHTTP(ctx, in, *httpAddr, opts, *grace)
	}
	if in.agg.Server(*profile) == nil {
		log.Error("unknown profile", "profile", *profile, "profiles", in.snap.Settings.ProfileNames())
		return 2
	}
	go in.startServers(ctx)
	log.Info("serving MCP on stdio", "config", cf.configDir, "profile", *profile)
	// The session outlives the signal until the running calls are answered
	// (see shutdown.go).
	session, endSession := context.WithCancel(context.Background())
	defer endSession()
	closeServers := sync.OnceFunc(func() { in.close(*grace) })
	go func() {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			closeServers()
			endSession()
		case <-session.Done():
		}
	}()
	err = in.agg.RunStdio(session, *profile)
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
