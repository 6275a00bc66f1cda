// Command mcpmux is an MCP aggregator: it serves the tools of many MCP tool
// servers, configured one YAML file each, as one namespaced catalog over
// stdio or Streamable HTTP.
//
// Usage:
//
//	mcpmux [--config DIR] [--profile NAME]        serve over stdio
//	mcpmux --http ADDR [--config DIR]             serve Streamable HTTP at /mcp, /mcp/{profile}
//	mcpmux init [--config DIR]                    write a commented starter config directory
//	mcpmux check [--config DIR]                   connect to every server and report
//	mcpmux tools [--config DIR] [--json]          print the merged catalog
//	mcpmux import FILE [--config DIR] [--force]   write tool files from a client's MCP config
//	mcpmux journal DIR [--json] [--html FILE]     summarise a call journal per task
//	mcpmux login SERVER [--config DIR]            authorize mcpmux to a server with auth: oauth
//	mcpmux logout SERVER                          delete a server's stored OAuth tokens
//	mcpmux fetch-server [flags]                   serve the built-in fetch tool on stdio
//	mcpmux healthcheck [URL]                      probe /healthz, for a container HEALTHCHECK
//	mcpmux version
//	mcpmux help [COMMAND]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/internal/reaper"
)

func main() {
	// A stdio client that leaves closes our stdout; a late write there must
	// fail with EPIPE (and mcpmux shut down as for a closed stdin) instead of
	// the Go runtime killing us with SIGPIPE. Notify, not Ignore: an ignored
	// signal would be inherited by every tool server we start.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if len(os.Args) == 2 && os.Args[1] == reaper.Command {
		// Not a command for users: the process a serving mcpmux starts to
		// end its children's process groups should it be killed. Before
		// the profiles, which are mcpmux's own (MCPMUX_CPUPROFILE).
		os.Exit(reaper.Run(os.Stdin, os.Stderr))
	}
	tuneGC()
	stopProfiles := startProfiles()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stopProfiles()
	os.Exit(code)
}

// commands maps subcommand names to their implementations.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"serve":   serveCmd,
	"init":    initCmd,
	"check":   checkCmd,
	"tools":   toolsCmd,
	"import":  importCmd,
	"journal": journalCmd,
	"version": versionCmd,
	// For a container HEALTHCHECK (healthcheck.go).
	"healthcheck": healthcheckCmd,
	// The built-in fetch tool (fetchserver.go), run as a tool server.
	"fetch-server": fetchServerCmd,
	// OAuth of url: servers (login.go).
	"login":  loginCmd,
	"logout": logoutCmd,
}

// commandDocs are the commands as usage lists them, in its order: the
// synopsis, what the command does, and more on its arguments for its -h.
var commandDocs = []struct{ synopsis, summary, details string }{
	{"mcpmux [flags]", "serve over stdio, for a client that starts mcpmux itself (the flags are below)", ""},
	{"mcpmux --http ADDR [flags]", "serve Streamable HTTP at /mcp and /mcp/{profile}; /healthz and /metrics beside", ""},
	{"mcpmux init [--config DIR] [--force]", "write a commented starter config directory", ""},
	{"mcpmux check [--config DIR]", "start every server once and report its state; exit 1 if one is not up or a file is invalid", ""},
	{"mcpmux tools [--config DIR] [--json] [--profile NAME]", "print the merged tool catalog", ""},
	{"mcpmux import FILE [--config DIR] [--force]", "write tool/*.yaml from a Claude Desktop, Cursor or VS Code MCP config",
		"FILE is claude_desktop_config.json, .cursor/mcp.json or .vscode/mcp.json."},
	{"mcpmux journal DIR [--json] [--html FILE]", "summarise a call journal per task",
		"Calls, errors, refusals, fallbacks, corrections, timeouts, replays, and total and slowest time per tool, per task."},
	{"mcpmux login SERVER [--config DIR] [--no-browser] [--timeout D]", "authorize mcpmux to a url: server with auth: oauth",
		"SERVER is a tool file's server with auth: oauth. The tokens go to $MCPMUX_STATE_DIR/oauth/ (default $XDG_STATE_HOME/mcpmux, ~/.local/state/mcpmux)."},
	{"mcpmux logout SERVER [--config DIR]", "delete the OAuth tokens that mcpmux login stored for a server", ""},
	{"mcpmux fetch-server [flags]", "serve the built-in fetch tool (URL to Markdown) on stdio", ""},
	{"mcpmux healthcheck [--timeout D] [URL]", "exit 0 if a serving mcpmux's /healthz answers 200, else 1",
		"URL defaults to $MCPMUX_HEALTHCHECK_URL, else " + defaultHealthURL + "."},
	{"mcpmux version", "print the version and commit", ""},
	{"mcpmux help [COMMAND]", "print this, or a command's usage and flags", ""},
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "-help", "--help":
			return helpCmd(args[1:], stdout, stderr)
		case "-version", "--version":
			return versionCmd(args[1:], stdout, stderr)
		}
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, ok := commands[args[0]]
		if !ok {
			fmt.Fprintf(stderr, "mcpmux: unknown command %q\n\n", args[0])
			usage(stderr)
			return 2
		}
		return cmd(args[1:], stdout, stderr)
	}
	return serveCmd(args, stdout, stderr)
}

// helpCmd prints the usage, or a command's.
func helpCmd(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stdout)
		return 0
	case len(args) == 1 && commands[args[0]] != nil:
		return commands[args[0]]([]string{"-h"}, stdout, stderr)
	}
	fmt.Fprintf(stderr, "mcpmux help: no command %q\n\n", strings.Join(args, " "))
	usage(stderr)
	return 2
}

// usage prints what mcpmux -h prints: the commands, then the flags of
// serving.
func usage(w io.Writer) {
	fmt.Fprint(w, "mcpmux: one MCP server in front of many tool servers\n\nUsage:\n")
	for _, c := range commandDocs {
		fmt.Fprintf(w, "  %s\n    \t%s\n", c.synopsis, c.summary)
	}
	fmt.Fprint(w, `
DIR holds tool/*.yaml (one tool server each) and an optional mcpmux.yaml;
it defaults to $MCPMUX_CONFIG, else ./config. "mcpmux init" writes one.
"mcpmux help COMMAND" (or "mcpmux COMMAND -h") prints a command's flags.

Flags of serving (mcpmux [flags], mcpmux --http ADDR [flags]):
`)
	fs, _ := newServeFlags(w, w)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// newFlagSet returns the flag set of a command, whose -h (see parseFlags)
// prints the command's usage and flags to stdout.
func newFlagSet(name string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { commandUsage(stdout, fs) }
	return fs
}

// commandUsage prints a command's synopsis, what it does, and its flags.
func commandUsage(w io.Writer, fs *flag.FlagSet) {
	if fs.Name() == "serve" {
		usage(w)
		return
	}
	for _, c := range commandDocs {
		if name, _, _ := strings.Cut(strings.TrimPrefix(c.synopsis, "mcpmux "), " "); name == fs.Name() {
			fmt.Fprintf(w, "usage: %s\n\n%s.\n", c.synopsis, upperFirst(c.summary))
			if c.details != "" {
				fmt.Fprintf(w, "%s\n", c.details)
			}
		}
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags:\n")
		out := fs.Output()
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// commonFlags are the flags every command takes.
type commonFlags struct {
	configDir string
	logLevel  string
	logFormat string
}

func (c *commonFlags) register(fs *flag.FlagSet, defaultLevel string) {
	registerConfigDir(fs, &c.configDir)
	fs.StringVar(&c.logLevel, "log-level", defaultLevel, "log level: debug, info, warn, error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
}

// registerConfigDir registers --config, whose default is $MCPMUX_CONFIG,
// else ./config.
func registerConfigDir(fs *flag.FlagSet, dir *string) {
	def := os.Getenv("MCPMUX_CONFIG")
	if def == "" {
		def = "config"
	}
	fs.StringVar(dir, "config", def, "config directory `DIR`, holding tool/*.yaml and mcpmux.yaml")
}

// explainConfigDir turns the error of a config directory that does not
// exist into one that says where mcpmux looked, why there, and what to do;
// other errors are returned as they are. fs holds the --config flag.
func explainConfigDir(err error, fs *flag.FlagSet, dir string) error {
	if !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	where, _ := filepath.Abs(dir)
	why := "the default"
	switch {
	case flagGiven(fs, "config"):
		why = "from --config"
	case os.Getenv("MCPMUX_CONFIG") != "":
		why = "from MCPMUX_CONFIG"
	}
	init := "mcpmux init"
	if dir != "config" {
		init += " --config " + dir
	}
	return fmt.Errorf("no config directory at %s (%s): name one with --config DIR or MCPMUX_CONFIG=DIR, or write a starter one with: %s", where, why, init)
}

// flagGiven reports whether the flag name was given on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// logger builds the slog logger: always to stderr, as stdout carries the
// stdio protocol. It masks the secrets of the config (logs.MaskerOf), which
// newInstance and reloads feed it.
func (c *commonFlags) logger(stderr io.Writer) (*slog.Logger, error) {
	log, err := c.plainLogger(stderr)
	if err != nil {
		return nil, err
	}
	return logs.Masked(log, &logs.Masker{}), nil
}

func (c *commonFlags) plainLogger(stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", c.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", c.logFormat)
}

// parseFlags parses a command's flags. -h prints the command's usage to
// stdout (see newFlagSet) and exits 0; a bad flag is reported on the flag
// set's output with where to look, exit 2. ok is false when the command
// should exit with code.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := parseQuietly(fs, args); err != nil {
		return flagError(fs, err), false
	}
	if fs.NArg() > 0 {
		return flagError(fs, fmt.Errorf("unexpected argument %q", fs.Arg(0))), false
	}
	return 0, true
}

// parseQuietly parses args without the flag package's own printing, which
// shows the whole usage on every mistake.
func parseQuietly(fs *flag.FlagSet, args []string) error {
	help, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = help
	fs.SetOutput(out)
	return err
}

// flagError reports a parse error (or prints the usage for -h) and returns
// the exit code.
func flagError(fs *flag.FlagSet, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return 0
	}
	name := "mcpmux " + fs.Name()
	if fs.Name() == "serve" {
		name = "mcpmux"
	}
	fmt.Fprintf(fs.Output(), "%s: %v\nRun \"%s -h\" for the usage.\n", name, err, name)
	return 2
}
