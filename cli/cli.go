// Package cli is the mcpmux command: its process set-up (Main), its
// command line (Run), and one file per command. Serving, check and tools
// run an app.Instance; the other commands stand alone.
package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/mcpmux/mcpmux/internal/reaper"
)

// Main runs mcpmux as a process with the arguments args (os.Args[1:]) and
// returns its exit status.
func Main(args []string) int {
	// A stdio client that leaves closes our stdout; a late write there must
	// fail with EPIPE (and mcpmux shut down as for a closed stdin) instead of
	// the Go runtime killing us with SIGPIPE. Notify, not Ignore: an ignored
	// signal would be inherited by every tool server we start.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if len(args) == 1 && args[0] == reaper.Command {
		// Not a command for users: the process a serving mcpmux starts to
		// end its children's process groups should it be killed. Before
		// the profiles, which are mcpmux's own (MCPMUX_CPUPROFILE).
		return reaper.Run(os.Stdin, os.Stderr)
	}
	tuneGC()
	stopProfiles := startProfiles()
	defer stopProfiles()
	return Run(args, os.Stdout, os.Stderr)
}

// A command is one row of the command table: what runs it, and how the
// usage lists it.
type command struct {
	// name is the word after mcpmux that runs it; "" for a row of the
	// usage alone.
	name string
	// run runs the command with its arguments; nil for a row of the usage
	// alone (serving over HTTP, help, which Run handles itself).
	run func(args []string, stdout, stderr io.Writer) int
	// synopsis, what the command does, and more on its arguments for its
	// -h (serve's -h prints the whole usage).
	synopsis, summary, details string
}

// commands are mcpmux's commands, in the order usage lists them. A new
// command is a file of its own and a row here. (Set by init: a command's
// flag set prints its usage from this table.)
var commands []command

func init() {
	commands = []command{
		{"serve", serveCmd, "mcpmux [flags]", "serve over stdio, for a client that starts mcpmux itself (the flags are below)", ""},
		{"", nil, "mcpmux --http ADDR [flags]", "serve Streamable HTTP at /mcp and /mcp/{profile}; /healthz and /metrics beside", ""},
		{"init", initCmd, "mcpmux init [--config DIR] [--force]", "write a commented starter config directory", ""},
		{"check", checkCmd, "mcpmux check [--config DIR]", "start every server once and report its state; exit 1 if one is not up or a file is invalid", ""},
		{"tools", toolsCmd, "mcpmux tools [--config DIR] [--json] [--profile NAME]", "print the merged tool catalog", ""},
		{"import", importCmd, "mcpmux import FILE [--config DIR] [--force]", "write tool/*.yaml from a Claude Desktop, Cursor or VS Code MCP config",
			"FILE is claude_desktop_config.json, .cursor/mcp.json or .vscode/mcp.json."},
		{"journal", journalCmd, "mcpmux journal DIR [--json] [--html FILE] [--sort ORDER]", "summarise a call journal per task",
			"A table of the tasks (calls, errors, refusals, fallbacks, corrections, drift, cost, duration), then per task its tools' calls, errors, times and costs. --sort errors puts the tasks with the most errors first."},
		{"pin", pinCmd, "mcpmux pin write FILE [--from JOURNAL_DIR] [--config DIR]", "write the servers' tool definitions (or a journal's) as a manifest for pin: in mcpmux.yaml", ""},
		{"approve", approveCmd, "mcpmux approve SERVER [TOOL] [--config DIR]", "trust the changed definitions of tools that tool_pinning quarantined", ""},
		// OAuth of url: servers.
		{"login", loginCmd, "mcpmux login SERVER [--config DIR] [--no-browser] [--timeout D]", "authorize mcpmux to a url: server with auth: oauth",
			"SERVER is a tool file's server with auth: oauth. The tokens go to $MCPMUX_STATE_DIR/oauth/ (default $XDG_STATE_HOME/mcpmux, ~/.local/state/mcpmux)."},
		{"logout", logoutCmd, "mcpmux logout SERVER [--config DIR]", "delete the OAuth tokens that mcpmux login stored for a server", ""},
		// The built-in fetch tool, run as a tool server.
		{"fetch-server", fetchServerCmd, "mcpmux fetch-server [flags]", "serve the built-in fetch tool (URL to Markdown) on stdio", ""},
		// For a container HEALTHCHECK.
		{"healthcheck", healthcheckCmd, "mcpmux healthcheck [--timeout D] [URL]", "exit 0 if a serving mcpmux's /healthz answers 200, else 1",
			"URL defaults to $MCPMUX_HEALTHCHECK_URL, else " + defaultHealthURL + "."},
		{"version", versionCmd, "mcpmux version", "print the version and commit", ""},
		{"help", nil, "mcpmux help [COMMAND]", "print this, or a command's usage and flags", ""},
	}
}

// lookup returns the command that runs as name, or nil.
func lookup(name string) *command {
	for i := range commands {
		if c := &commands[i]; c.name == name && c.run != nil {
			return c
		}
	}
	return nil
}

// Run runs the command line args (without the program's name), writing to
// stdout and stderr, and returns the exit status: 0, 1 when the command
// failed, 2 for a mistake in the command line itself.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "-help", "--help":
			return helpCmd(args[1:], stdout, stderr)
		case "-version", "--version":
			return versionCmd(args[1:], stdout, stderr)
		}
	}
	flags, name, rest := splitCommand(args)
	if name == "" {
		return serveCmd(args, stdout, stderr)
	}
	if name == "help" {
		return helpCmd(rest, stdout, stderr)
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(stderr, "mcpmux: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	// Flags before the command are its own, as in git and kubectl
	// (mcpmux --config DIR tools): a command that lacks one says so.
	return cmd.run(append(flags, rest...), stdout, stderr)
}

// splitCommand splits a command line into the flags before its command,
// the command's name and its own arguments. name is empty when there is
// no command (serving), or when the leading flags do not parse, which
// serving then reports. The flags of serving tell which flags take a
// value, so that in --config tools, tools is the directory.
func splitCommand(args []string) (flags []string, name string, rest []string) {
	fs, _ := newServeFlags(io.Discard, io.Discard)
	if err := parseQuietly(fs, args); err != nil || fs.NArg() == 0 {
		return nil, "", nil
	}
	rest = fs.Args()
	flags = args[:len(args)-len(rest)]
	if len(flags) > 0 && flags[len(flags)-1] == "--" {
		return nil, "", nil // after --, an argument is not a command
	}
	return slices.Clone(flags), rest[0], rest[1:]
}

// helpCmd prints the usage, or a command's.
func helpCmd(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stdout)
		return 0
	case len(args) == 1 && lookup(args[0]) != nil:
		return lookup(args[0]).run([]string{"-h"}, stdout, stderr)
	}
	fmt.Fprintf(stderr, "mcpmux help: no command %q\n\n", strings.Join(args, " "))
	usage(stderr)
	return 2
}

// usage prints what mcpmux -h prints: the commands, then the flags of
// serving.
func usage(w io.Writer) {
	fmt.Fprint(w, "mcpmux: one MCP server in front of many tool servers\n\nUsage:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %s\n    \t%s\n", c.synopsis, c.summary)
	}
	fmt.Fprint(w, `
DIR holds tool/*.yaml (one tool server each) and an optional mcpmux.yaml;
it defaults to $MCPMUX_CONFIG, else ./config. "mcpmux init" writes one.
"mcpmux help COMMAND" (or "mcpmux COMMAND -h") prints a command's flags,
which may also come before it: mcpmux --config DIR tools.

Flags of serving (mcpmux [flags], mcpmux --http ADDR [flags]):
`)
	fs, _ := newServeFlags(w, w)
	fs.SetOutput(w)
	fs.PrintDefaults()
}
