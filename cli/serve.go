package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpmux/mcpmux/app"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/replica"
)

// serveFlags are the flags of serving (mcpmux [flags]).
type serveFlags struct {
	commonFlags
	httpAddr  string
	profile   string
	token     string
	tokenFile string
	origins   stringList
	grace     time.Duration
	stateless bool
	noWatch   bool
	runID     string
	// Replicas (docs/scaling.md): see replicaSet.
	stateKeyFile string
	advertise    string
	peers        stringList
}

func newServeFlags(stdout, stderr io.Writer) (*flag.FlagSet, *serveFlags) {
	fs := newFlagSet("serve", stdout, stderr)
	f := &serveFlags{}
	f.register(fs, "info")
	fs.StringVar(&f.httpAddr, "http", "", "serve Streamable HTTP on `ADDR` (host:port) instead of stdio")
	fs.StringVar(&f.profile, "profile", "", "stdio mode: serve this profile instead of all tools")
	// MCPMUX_TOKEN is read when serving starts (see http), not as the
	// flag's default, which the usage would print.
	fs.StringVar(&f.token, "token", "", "HTTP: bearer token clients must send (default $MCPMUX_TOKEN); required for a non-loopback address")
	fs.StringVar(&f.tokenFile, "token-file", "", "HTTP: read the bearer token from `FILE` (one token per line; overrides token_file in mcpmux.yaml)")
	fs.Var(&f.origins, "allowed-origin", "HTTP: also allow browser requests from `ORIGIN` (scheme://host[:port|:*]); repeatable")
	fs.DurationVar(&f.grace, "shutdown-grace", 10*time.Second, "on shutdown, how long running calls may take to finish (HTTP: while draining)")
	fs.BoolVar(&f.stateless, "stateless", false, "HTTP: serve without sessions, so that any replica answers any request (as stateless: true in mcpmux.yaml; see docs/scaling.md)")
	fs.BoolVar(&f.noWatch, "no-watch", false, "do not watch the config directory; reload only on SIGHUP")
	fs.StringVar(&f.stateKeyFile, "state-key-file", "", "HTTP replicas: sign parked calls' requestState with the key in `FILE` (default $"+replica.KeyEnv+"), the same on every replica; else a key of this process")
	fs.StringVar(&f.advertise, "advertise", "", "HTTP replicas: the `HOST:PORT` the peers reach this replica at (default: the --http address, if it is not a wildcard)")
	fs.Var(&f.peers, "peers", "HTTP replicas: forward a retry of a call parked on another replica to it, if it is among `HOST:PORT[,...]` (a name may resolve to every replica: a headless Service); repeatable")
	fs.StringVar(&f.runID, "task-id", os.Getenv("TASK_ID"), "task of this instance's calls, unless a call names its own ($TASK_ID)")
	return fs, f
}

// http is how the flags ask to serve HTTP.
func (f *serveFlags) http() *app.HTTP {
	token := f.token
	if token == "" {
		token = os.Getenv("MCPMUX_TOKEN")
	}
	return &app.HTTP{Addr: f.httpAddr, Token: token, TokenFile: f.tokenFile, Origins: f.origins, Grace: f.grace}
}

func serveCmd(args []string, stdout, stderr io.Writer) int {
	fs, f := newServeFlags(stdout, stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	log, mask, err := f.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux:", err)
		return 2
	}
	mode := app.WithSessions
	switch {
	case f.stateless && f.httpAddr == "":
		log.Error("--stateless applies to --http: a stdio client is one session")
		return 2
	case f.stateless:
		mode = app.Stateless
	case f.httpAddr != "":
		mode = app.SessionsByConfig
	}
	replicas, err := f.replicaSet(log, mask)
	if err != nil {
		log.Error("cannot serve", "error", err)
		return 2
	}
	in, err := app.New(&app.Options{Dir: f.configDir, RunID: f.runID, Mode: mode, Log: log, Mask: mask, Version: buildVersion(), Replicas: replicas})
	if err != nil {
		log.Error("cannot start", "error", explainConfigDir(err, fs, f.configDir))
		return 1
	}
	in.LogFileErrors()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if f.httpAddr != "" {
		front, err := in.ListenHTTP(f.http())
		switch {
		case errors.Is(err, app.ErrNoToken):
			// The refusal itself is the message: docs/operations.md quotes it.
			log.Error(app.ErrNoToken.Error(), "addr", f.httpAddr)
			return 2
		case errors.As(err, new(*app.RefusedError)):
			log.Error("cannot serve HTTP", "error", err)
			return 2
		case err != nil:
			log.Error("cannot listen", "addr", f.httpAddr, "error", err)
			return 1
		}
		if err := front.Serve(ctx, !f.noWatch); err != nil {
			log.Error("cannot serve HTTP", "error", err)
			return 1
		}
		return 0
	}
	if in.Aggregator().Server(f.profile) == nil {
		log.Error("unknown profile", "profile", f.profile, "profiles", in.Snapshot().Settings.ProfileNames())
		return 2
	}
	err = in.ServeStdio(ctx, f.profile, f.grace, !f.noWatch)
	// A signal while the servers close ends mcpmux at once.
	stop()
	in.Close(f.grace)
	if err != nil {
		log.Error("cannot serve stdio", "error", err)
		return 1
	}
	return 0
}

// replicaSet is this replica among its peers: the key that signs parked
// calls' states (--state-key-file, or MCPMUX_STATE_KEY; masked in the
// log, whose masker is mask), its own address and its peers'. Peers need
// a key shared by every replica: with one per process, no replica could
// read another's states.
func (f *serveFlags) replicaSet(log *slog.Logger, mask *logs.Masker) (*replica.Set, error) {
	key, err := replica.ReadKey(f.stateKeyFile)
	if err != nil {
		return nil, err
	}
	if key != nil {
		mask.Add(string(key))
	}
	var peers []string
	for _, l := range f.peers {
		for _, p := range strings.Split(l, ",") {
			if p = strings.TrimSpace(p); p != "" {
				peers = append(peers, p)
			}
		}
	}
	self := f.advertise
	switch {
	case (len(peers) > 0 || self != "") && f.httpAddr == "":
		return nil, errors.New("--peers and --advertise apply to --http: a stdio mcpmux has no replicas")
	case len(peers) > 0 && key == nil:
		return nil, fmt.Errorf("--peers needs a signing key shared by every replica: set %s or --state-key-file (the same on each; openssl rand -hex 32 makes one)", replica.KeyEnv)
	case len(peers) > 0 && self == "":
		if host, port, err := net.SplitHostPort(f.httpAddr); err == nil && port != "0" && host != "" && !net.ParseIP(host).IsUnspecified() {
			self = f.httpAddr
		}
	}
	return replica.New(replica.Options{Key: key, Self: self, Peers: peers})
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
