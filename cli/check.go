package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mcpmux/mcpmux/app"
	"github.com/mcpmux/mcpmux/internal/logs"
	"github.com/mcpmux/mcpmux/upstream"
)

// checkCmd connects to every server once and reports what it found.
func checkCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check", stdout, stderr)
	var cf commonFlags
	cf.register(fs, "error")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	// Invalid files are in the report below, not in the log too. The log
	// ends where the report begins: what a server that failed does next
	// (its retries) would come after the table, which is the last word.
	logOut := &gate{w: stderr}
	in, mask, code := oneShot(&cf, fs, logOut)
	if in == nil {
		return code
	}
	defer in.Close(time.Second)
	logOut.close()

	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SERVER\tSTATE\tTOOLS\tRESTARTS\tTRANSPORT\tPROTOCOL\tDETAIL")
	// TOOLS counts what a client can call: not the blacklisted ones, which
	// DETAIL counts.
	callable := map[string]int{}
	entries, _ := in.Aggregator().Tools("")
	for _, e := range entries {
		callable[e.Server]++
	}
	failed := 0
	for _, st := range in.Pool().Statuses() {
		var details []string
		if st.Error != "" {
			details = append(details, st.Error)
		}
		if st.Session == "per-client" {
			details = append(details, "one connection per client session")
		}
		if n := st.Tools - callable[st.Name]; n > 0 && st.State == upstream.StateUp {
			details = append(details, fmt.Sprintf("%d more blacklisted (tool_blacklist)", n))
		}
		detail := strings.Join(details, "; ")
		if st.State != upstream.StateUp {
			failed++
		}
		protocol := st.Protocol
		if protocol == "" {
			protocol = "-" // never connected
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", st.Name, st.State, callable[st.Name], st.Restarts, st.Transport, protocol, oneLine(mask.Mask(detail)))
	}
	for _, s := range in.Snapshot().Disabled {
		fmt.Fprintf(w, "%s\tdisabled\t-\t-\t-\t-\tenabled: false in %s\n", s.Name, s.File)
	}
	w.Flush()
	if len(in.Snapshot().Errors) > 0 {
		fmt.Fprintln(stdout, "\nInvalid config files (skipped):")
		for _, fe := range in.Snapshot().Errors {
			fmt.Fprintf(stdout, "  %s\n", mask.Mask(fe.Error()))
		}
	}
	if notes := app.NameNotes(in.Snapshot().Servers, in.Snapshot().Settings.Separator); len(notes) > 0 {
		fmt.Fprintln(stdout, "\nNotes:")
		for _, n := range notes {
			fmt.Fprintf(stdout, "  %s\n", n)
		}
	}
	fmt.Fprintf(stdout, "\n%d servers, %d not up, %d invalid files\n", len(in.Pool().Statuses()), failed, len(in.Snapshot().Errors))
	if failed > 0 || len(in.Snapshot().Errors) > 0 {
		return 1
	}
	return 0
}

// oneShot builds an instance and starts its servers, for check and tools;
// fs holds cf's flags. The masker is the instance's logger's: errors may
// quote a child's stderr.
func oneShot(cf *commonFlags, fs *flag.FlagSet, stderr io.Writer) (*app.Instance, *logs.Masker, int) {
	log, mask, err := cf.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux:", err)
		return nil, nil, 2
	}
	in, err := app.New(&app.Options{Dir: cf.configDir, Mode: app.WithSessions, Log: log, Mask: mask, Version: buildVersion()})
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux:", explainConfigDir(err, fs, cf.configDir))
		return nil, nil, 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	in.Start(ctx)
	return in, mask, 0
}

// gate passes writes on to w until it is closed, and drops them after.
type gate struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (g *gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return len(p), nil
	}
	return g.w.Write(p)
}

func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
