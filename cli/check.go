package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mcpmux/mcpmux/config"
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
	// Invalid files are in the report below, not in the log too.
	in, code := oneShot(&cf, fs, stderr)
	if in == nil {
		return code
	}
	defer in.close(time.Second)

	mask := logs.MaskerOf(in.log) // errors may quote a child's stderr
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SERVER\tSTATE\tTOOLS\tRESTARTS\tTRANSPORT\tDETAIL")
	failed := 0
	for _, st := range in.pool.Statuses() {
		detail := ""
		switch {
		case st.Error != "":
			detail = st.Error
		case st.Session == "per-client":
			detail = "one connection per client session"
		}
		if st.State != upstream.StateUp {
			failed++
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\n", st.Name, st.State, st.Tools, st.Restarts, st.Transport, oneLine(mask.Mask(detail)))
	}
	for _, s := range in.snap.Disabled {
		fmt.Fprintf(w, "%s\tdisabled\t-\t-\t-\tenabled: false in %s\n", s.Name, s.File)
	}
	w.Flush()
	if len(in.snap.Errors) > 0 {
		fmt.Fprintln(stdout, "\nInvalid config files (skipped):")
		for _, fe := range in.snap.Errors {
			fmt.Fprintf(stdout, "  %s\n", mask.Mask(fe.Error()))
		}
	}
	if notes := nameNotes(in.snap.Servers, in.snap.Settings.Separator); len(notes) > 0 {
		fmt.Fprintln(stdout, "\nNotes:")
		for _, n := range notes {
			fmt.Fprintf(stdout, "  %s\n", n)
		}
	}
	fmt.Fprintf(stdout, "\n%d servers, %d not up, %d invalid files\n", len(in.pool.Statuses()), failed, len(in.snap.Errors))
	if failed > 0 || len(in.snap.Errors) > 0 {
		return 1
	}
	return 0
}

// toolsCmd prints the merged catalog.
func toolsCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tools", stdout, stderr)
	var cf commonFlags
	cf.register(fs, "error")
	asJSON := fs.Bool("json", false, "print JSON: name, server, tool, description and schemas of each tool")
	profile := fs.String("profile", "", "print the tools of this profile")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	in, code := oneShot(&cf, fs, stderr)
	if in == nil {
		return code
	}
	defer in.close(time.Second)
	in.logFileErrors()
	entries, ok := in.agg.Tools(*profile)
	if !ok {
		fmt.Fprintf(stderr, "mcpmux tools: unknown profile %q: %s\n", *profile, profilesOf(in.snap.Settings))
		return 2
	}
	for _, n := range nameNotes(in.snap.Servers, in.snap.Settings.Separator) {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	if *asJSON {
		type tool struct {
			Name         string `json:"name"`
			Server       string `json:"server"`
			Tool         string `json:"tool"`
			Title        string `json:"title,omitempty"`
			Description  string `json:"description,omitempty"`
			InputSchema  any    `json:"inputSchema"`
			OutputSchema any    `json:"outputSchema,omitempty"`
		}
		out := make([]tool, 0, len(entries))
		for _, e := range entries {
			out = append(out, tool{e.Name, e.Server, e.Tool, e.Def.Title, e.Def.Description, e.Def.InputSchema, e.Def.OutputSchema})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return 1
		}
		return 0
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, e := range entries {
		fmt.Fprintf(w, "%s\t%s\n", e.Name, truncate(oneLine(e.Def.Description), 100))
	}
	w.Flush()
	fmt.Fprintf(stderr, "%d tools from %d servers\n", len(entries), countServers(in))
	return 0
}

// profilesOf names the profiles of settings, for a message about an
// unknown one.
func profilesOf(s *config.Settings) string {
	names := s.ProfileNames()
	if len(names) == 0 {
		where := "mcpmux.yaml"
		if s.File != "" {
			where = s.File
		}
		return "no profiles are defined (profiles: in " + where + ")"
	}
	return "the profiles are " + strings.Join(names, ", ")
}

// oneShot builds an instance and starts its servers, for check and tools;
// fs holds cf's flags.
func oneShot(cf *commonFlags, fs *flag.FlagSet, stderr io.Writer) (*instance, int) {
	log, err := cf.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux:", err)
		return nil, 2
	}
	in, err := newInstance(cf.configDir, "", withSessions, log)
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux:", explainConfigDir(err, fs, cf.configDir))
		return nil, 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	in.startServers(ctx)
	return in, 0
}

func countServers(in *instance) int {
	n := 0
	for _, st := range in.pool.Statuses() {
		if st.Tools > 0 {
			n++
		}
	}
	return n
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.TrimSpace(s[:n]) + "…"
}
