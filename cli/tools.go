package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpmux/mcpmux/app"
	"github.com/mcpmux/mcpmux/config"
)

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
	in, _, code := oneShot(&cf, fs, stderr)
	if in == nil {
		return code
	}
	defer in.Close(time.Second)
	in.LogFileErrors()
	entries, ok := in.Aggregator().Tools(*profile)
	if !ok {
		fmt.Fprintf(stderr, "mcpmux tools: unknown profile %q: %s\n", *profile, profilesOf(in.Snapshot().Settings))
		return 2
	}
	for _, n := range app.NameNotes(in.Snapshot().Servers, in.Snapshot().Settings.Separator) {
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

func countServers(in *app.Instance) int {
	n := 0
	for _, st := range in.Pool().Statuses() {
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
