package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpmux/mcpmux/internal/logs"
)

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
	if c := lookup(fs.Name()); c != nil {
		fmt.Fprintf(w, "usage: %s\n\n%s.\n", c.synopsis, upperFirst(c.summary))
		if c.details != "" {
			fmt.Fprintf(w, "%s\n", c.details)
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
// stdio protocol. It masks the secrets of the config with mask, which
// app.New and reloads feed, and which whatever else shows a secret's
// neighbourhood (errors quoting a child's stderr, /healthz, the journal)
// is given too.
func (c *commonFlags) logger(stderr io.Writer) (log *slog.Logger, mask *logs.Masker, err error) {
	log, err = c.plainLogger(stderr)
	if err != nil {
		return nil, nil, err
	}
	mask = &logs.Masker{}
	return logs.Masked(log, mask), mask, nil
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

// parseWithPositionals parses flags that may come before or after the
// positional arguments (mcpmux import FILE --force), which flag.Parse alone
// does not allow.
func parseWithPositionals(flags *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	for {
		if err := parseQuietly(flags, args); err != nil {
			return nil, flagError(flags, err), false
		}
		if flags.NArg() == 0 {
			return positional, 0, true
		}
		positional = append(positional, flags.Arg(0))
		args = flags.Args()[1:]
	}
}
