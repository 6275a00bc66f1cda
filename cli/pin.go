package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpmux/mcpmux/config"
	"github.com/mcpmux/mcpmux/journal"
	"github.com/mcpmux/mcpmux/journal/pin"
	"github.com/mcpmux/mcpmux/journal/replay"
)

// pinCmd writes a manifest of tool definitions for mcpmux.yaml's pin:
// `mcpmux pin write FILE`, from the running servers or a journal.
func pinCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("pin", stdout, stderr)
	var cf commonFlags
	cf.register(fs, "error")
	from := fs.String("from", "", "take the definitions from the catalogs of a journal `DIR` instead of starting the servers")
	pos, code, ok := parseWithPositionals(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 2 || pos[0] != "write" {
		return flagError(fs, fmt.Errorf("usage: mcpmux pin write FILE [--from JOURNAL_DIR] [--config DIR]"))
	}
	file := pos[1]
	var servers []journal.Server
	if *from != "" {
		rp := replay.Open(replay.Options{Dir: *from})
		if err := rp.Err(); err != nil {
			fmt.Fprintln(stderr, "mcpmux pin:", err)
			return 1
		}
		servers = rp.Catalog()
	} else {
		in, _, code := oneShot(&cf, fs, stderr)
		if in == nil {
			return code
		}
		defer in.Close(time.Second)
		in.LogFileErrors()
		prefixes := map[string]string{}
		for _, s := range in.Snapshot().Servers {
			prefixes[s.Name] = s.NamePrefix()
		}
		entries, _ := in.Aggregator().Tools("")
		index := map[string]int{}
		for _, e := range entries {
			if e.Server == "mcpmux" {
				continue // meta tools: mcpmux's own
			}
			i, ok := index[e.Server]
			if !ok {
				i = len(servers)
				index[e.Server] = i
				servers = append(servers, journal.Server{Name: e.Server, Prefix: prefixes[e.Server]})
			}
			def := *e.Def
			def.Name = e.Tool
			servers[i].Tools = append(servers[i].Tools, &def)
		}
	}
	if len(servers) == 0 {
		fmt.Fprintln(stderr, "mcpmux pin: no tools to pin")
		return 1
	}
	if err := pin.WriteManifest(file, servers); err != nil {
		fmt.Fprintln(stderr, "mcpmux pin:", err)
		return 1
	}
	n := 0
	for _, s := range servers {
		n += len(s.Tools)
	}
	fmt.Fprintf(stdout, "pinned %d tools of %d servers in %s; use it with pin: {from: %s} in mcpmux.yaml\n", n, len(servers), file, file)
	return 0
}

// approveCmd trusts the changed definitions of a server's tools that
// tool_pinning quarantined.
func approveCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("approve", stdout, stderr)
	var dir string
	registerConfigDir(fs, &dir)
	pos, code, ok := parseWithPositionals(fs, args)
	if !ok {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		return flagError(fs, fmt.Errorf("usage: mcpmux approve SERVER [TOOL] [--config DIR]"))
	}
	server, tool := pos[0], ""
	if len(pos) == 2 {
		tool = pos[1]
	}
	path := filepath.Join(dir, config.ToolPinningStateFile)
	st, err := pin.ReadState(path)
	if err != nil {
		fmt.Fprintln(stderr, "mcpmux approve:", err)
		return 1
	}
	done := st.Approve(server, tool)
	if len(done) == 0 {
		what := "no tool of server " + server
		if tool != "" {
			what = "tool " + tool + " of server " + server + " is not"
		}
		fmt.Fprintf(stderr, "mcpmux approve: %s quarantined (in %s)\n", what, path)
		return 1
	}
	if err := st.Write(path); err != nil {
		fmt.Fprintln(stderr, "mcpmux approve:", err)
		return 1
	}
	fmt.Fprintf(stdout, "approved %s of server %s; a running mcpmux applies it at the next call of the tool or reload (SIGHUP)\n", strings.Join(done, ", "), server)
	return 0
}
