// Command mcpmux is an MCP aggregator: it serves the tools of many MCP tool
// servers, configured one YAML file each, as one namespaced catalog over
// stdio or Streamable HTTP.
//
// Usage:
//
//	mcpmux [--config DIR] [--profile NAME]        serve over stdio
//	mcpmux --http ADDR [--config DIR]             serve Streamable HTTP at /mcp, /mcp/{profile}
//	mcpmux check [--config DIR]                   connect to every server and report
//	mcpmux tools [--config DIR] [--json]          print the merged catalog
//	mcpmux import FILE [--config DIR] [--force]   write tool files from a client's MCP config
//	mcpmux journal DIR [--json] [--html FILE]     summarise a call journal per task
//	mcpmux login SERVER [--config DIR]            authorize mcpmux to a server with auth: oauth
//	mcpmux logout SERVER                          delete a server's stored OAuth tokens
//	mcpmux fetch-server [flags]                   serve the built-in fetch tool on stdio
//	mcpmux healthcheck [URL]                      probe /healthz, for a container HEALTHCHECK
//	mcpmux version
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
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

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if args[0] == "help" {
			usage(stdout)
			return 0
		}
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

func usage(w io.Writer) {
	fmt.Fprint(w, `mcpmux: one MCP server for many tool servers

Usage:
  mcpmux [--config DIR] [--profile NAME]      serve over stdio
  mcpmux --http ADDR [--config DIR]           serve Streamable HTTP at /mcp and /mcp/{profile}
  mcpmux check [--config DIR]                 connect to every server and report its status
  mcpmux tools [--config DIR] [--json]        print the merged tool catalog
  mcpmux import FILE [--config DIR] [--force] write tool/*.yaml from a Claude Desktop,
                                              Cursor or VS Code MCP config
  mcpmux journal DIR [--json] [--html FILE]   summarise a call journal per task
  mcpmux login SERVER [--config DIR]          authorize mcpmux to a url: server with auth: oauth
  mcpmux logout SERVER                        delete the OAuth tokens stored for a server
  mcpmux fetch-server                         serve the built-in fetch tool (URL to Markdown) on stdio
  mcpmux healthcheck [URL]                    exit 0 if a serving mcpmux's /healthz answers 200
  mcpmux version                              print the version and commit

DIR holds tool/*.yaml (one tool server each) and an optional mcpmux.yaml;
it defaults to $MCPMUX_CONFIG, or ./config. Run "mcpmux <command> -h" for
the flags of a command.
`)
}

// commonFlags are the flags every command takes.
type commonFlags struct {
	configDir string
	logLevel  string
	logFormat string
}

func (c *commonFlags) register(fs *flag.FlagSet, defaultLevel string) {
	dir := os.Getenv("MCPMUX_CONFIG")
	if dir == "" {
		dir = "config"
	}
	fs.StringVar(&c.configDir, "config", dir, "config directory (tool/*.yaml and mcpmux.yaml)")
	fs.StringVar(&c.logLevel, "log-level", defaultLevel, "log level: debug, info, warn, error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
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

// parseFlags parses args, printing errors the usual way; ok is false when
// the command should exit with code.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "mcpmux %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}
