package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/mcpmux/mcpmux/aggregator"
	"github.com/mcpmux/mcpmux/app"
	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/upstream"
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
	// Bounded: each probe is a session of its own (a process, for a
	// child), minutes in all on a busy machine; one that fails marks its
	// tools as needing "a capability".
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	needs := clientNeeds(ctx, in.Pool(), entries)
	if *asJSON {
		type tool struct {
			Name         string `json:"name"`
			Server       string `json:"server"`
			Tool         string `json:"tool"`
			Title        string `json:"title,omitempty"`
			Description  string `json:"description,omitempty"`
			InputSchema  any    `json:"inputSchema"`
			OutputSchema any    `json:"outputSchema,omitempty"`
			// ClientNeeds: the client capabilities without which the
			// server does not list the tool (see clientNeeds).
			ClientNeeds []string `json:"clientNeeds,omitempty"`
		}
		out := make([]tool, 0, len(entries))
		for _, e := range entries {
			out = append(out, tool{e.Name, e.Server, e.Tool, e.Def.Title, e.Def.Description, e.Def.InputSchema, e.Def.OutputSchema, needs[e.Name]})
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
		desc := truncate(oneLine(e.Def.Description), 100)
		if n := needs[e.Name]; n != nil {
			desc = "[client needs " + strings.Join(n, ", ") + "] " + desc
		}
		fmt.Fprintf(w, "%s\t%s\n", e.Name, desc)
	}
	w.Flush()
	fmt.Fprintf(stderr, "%d tools from %d servers\n", len(entries), countServers(in))
	if len(needs) > 0 {
		fmt.Fprintf(stderr, "%d of them for every client; the %d marked [client needs ...] only for a client that declares those capabilities (their servers list them to no other)\n", len(entries)-len(needs), len(needs))
	}
	return 0
}

// needFeatures are the client capabilities a server may list tools for,
// one at a time: the go-sdk's names, as a client declares them.
var needFeatures = []struct {
	name string
	f    upstream.ClientFeatures
}{
	{"roots", upstream.ClientFeatures{Roots: true}},
	{"sampling", upstream.ClientFeatures{Sampling: true, SamplingTools: true}},
	{"elicitation (form)", upstream.ClientFeatures{FormElicitation: true}},
	{"elicitation (url)", upstream.ClientFeatures{URLElicitation: true}},
	{"tasks (sampling)", upstream.ClientFeatures{Sampling: true, SamplingTools: true, SamplingTasks: true}},
	{"tasks (elicitation)", upstream.ClientFeatures{FormElicitation: true, URLElicitation: true, ElicitationTasks: true}},
}

// clientNeeds names, for each tool of entries that a client without
// capabilities is not listed (as mcpmux lists each client what its server
// would list it), the capabilities that get it listed: the one that does
// alone (the first of needFeatures), else "several capabilities" ("a
// capability" when a probe failed). It asks each server what it lists to such
// clients, as a serving mcpmux does: the servers at once, and at most
// probeParallel probes at a time (each may be a process).
func clientNeeds(ctx context.Context, pool *upstream.Pool, entries []*aggregator.Entry) map[string][]string {
	byServer := map[string][]*aggregator.Entry{}
	for _, e := range entries {
		if pool.Get(e.Server) != nil {
			byServer[e.Server] = append(byServer[e.Server], e)
		}
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		out  = map[string][]string{}
		slot = make(chan struct{}, probeParallel)
	)
	toolsFor := func(srv *upstream.Server, f upstream.ClientFeatures) (map[string]bool, error) {
		slot <- struct{}{}
		defer func() { <-slot }()
		return srv.ToolsFor(ctx, f)
	}
	for server, es := range byServer {
		srv := pool.Get(server)
		wg.Go(func() {
			needs := serverNeeds(es, func(f upstream.ClientFeatures) (map[string]bool, error) { return toolsFor(srv, f) })
			mu.Lock()
			defer mu.Unlock()
			maps.Copy(out, needs)
		})
	}
	wg.Wait()
	return out
}

// probeParallel bounds the probes `tools` runs at once.
const probeParallel = 4

// serverNeeds is clientNeeds for the entries es of one server, whose
// tools for a client with features f are toolsFor(f).
func serverNeeds(es []*aggregator.Entry, toolsFor func(upstream.ClientFeatures) (map[string]bool, error)) map[string][]string {
	out := map[string][]string{}
	none, err := toolsFor(upstream.ClientFeatures{})
	if err != nil || none == nil {
		return out // lists all to every client, or cannot tell
	}
	var hidden []*aggregator.Entry
	for _, e := range es {
		if !none[e.Tool] {
			hidden = append(hidden, e)
		}
	}
	if len(hidden) == 0 {
		return out
	}
	listed := make([]map[string]bool, len(needFeatures))
	failed := make([]bool, len(needFeatures))
	var wg sync.WaitGroup
	for i, nf := range needFeatures {
		wg.Go(func() {
			l, err := toolsFor(nf.f)
			listed[i], failed[i] = l, err != nil
		})
	}
	wg.Wait()
	unprobed := false
	for i, nf := range needFeatures {
		if failed[i] {
			unprobed = true
			continue
		}
		for _, e := range hidden {
			if out[e.Name] == nil && (listed[i] == nil || listed[i][e.Tool]) {
				out[e.Name] = []string{nf.name}
			}
		}
	}
	for _, e := range hidden {
		switch {
		case out[e.Name] != nil:
		case unprobed: // a probe failed: which one it needs is unknown
			out[e.Name] = []string{"a capability"}
		default:
			out[e.Name] = []string{"several capabilities"}
		}
	}
	return out
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
