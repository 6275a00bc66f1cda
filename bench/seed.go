package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seedTarget is a tool server the seed pattern is measured against.
type seedTarget struct {
	label   string
	cmd     string
	args    []string
	tool    string              // the echo tool's name on the server
	argsFor func(string) any    // its arguments for a text
	want    func(string) string // the text it answers with
	check   func(got, want string) bool
}

// seedPattern (figure 2): the seed (MiroFlow's ToolManager) opens a new
// subprocess and session for every call — spawn, initialize, call_tool,
// close — and for a listing does the same with list_tools, one server
// after another. Both are reproduced here against the same server and
// compared with a persistent call and a tools/list through mcpmux. The
// Go fixture starts in a few ms, far faster than the seed's Python
// servers; @modelcontextprotocol/server-everything (Node.js, from e2e/,
// after npm ci) shows the pattern with a real server's start-up.
func seedPattern(ctx context.Context, e *env, o options) ([]row, error) {
	n, servers := 60, 10
	if o.quick {
		n, servers = 15, 3
	}
	echoArgs := func(s string) any { return map[string]any{"text": s} }
	same := func(s string) string { return s }
	targets := []seedTarget{{label: "Go fixture", cmd: e.fixture, tool: "echo", argsFor: echoArgs, want: same, check: func(g, w string) bool { return g == w }}}
	if everything, err := filepath.Abs("e2e/node_modules/.bin/mcp-server-everything"); err == nil {
		if _, err := os.Stat(everything); err == nil {
			targets = append(targets, seedTarget{label: "server-everything (Node.js)", cmd: everything, args: []string{"stdio"}, tool: "echo",
				argsFor: func(s string) any { return map[string]any{"message": s} }, want: same, check: strings.Contains})
		} else {
			fmt.Fprintln(os.Stderr, "   (no e2e/node_modules: run cd e2e && npm ci for the Node.js seed figure)")
		}
	}
	var rows []row
	for ti, t := range targets {
		reps, nservers := n, servers
		if ti > 0 { // a Node.js start costs ~0.4 s: fewer
			reps, nservers = max(3, n/4), min(3, servers)
		}
		r, err := seedAgainst(ctx, e, t, reps, nservers)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", t.label, err)
		}
		rows = append(rows, r...)
	}
	if d, err := processStart(ctx, e.fixture, n); err == nil {
		rows = append(rows, row{Figure: "Seed pattern's floor: spawn and reap the Go fixture, no MCP at all", Median: ms(d.median()), P99: ms(d.p99()), Value: "", Command: "go run ./bench -only seed"})
	}
	return rows, nil
}

func seedAgainst(ctx context.Context, e *env, t seedTarget, n, servers int) ([]row, error) {
	var cfg []server
	for i := range servers {
		cfg = append(cfg, server{name: fmt.Sprintf("s%d", i), cmd: t.cmd, args: t.args})
	}
	mux, err := e.startMuxStdio(ctx, newClient(nil), e.configDir(cfg...))
	if err != nil {
		return nil, err
	}
	defer mux.stop()
	call := func(cs *mcp.ClientSession, tool, text string) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: t.argsFor(text)})
		if err != nil {
			return err
		}
		if got := resultText(res); res.IsError || !t.check(got, t.want(text)) {
			return fmt.Errorf("%s answered %q (isError %v), want %q", tool, got, res.IsError, t.want(text))
		}
		return nil
	}
	for i := range 100 {
		if err := call(mux.cs, "s0__"+t.tool, fmt.Sprint("warm", i)); err != nil {
			return nil, err
		}
	}
	listed, err := countTools(ctx, mux.cs)
	if err != nil {
		return nil, err
	}

	var seedCall, seedList, viaCall, viaList samples
	var closing sync.WaitGroup
	defer closing.Wait()
	for i := range n {
		d, err := seedOnce(ctx, t, &closing, func(cs *mcp.ClientSession) error { return call(cs, t.tool, fmt.Sprint("seed", i)) })
		if err != nil {
			return nil, err
		}
		seedCall = append(seedCall, d)

		var list time.Duration
		for range servers {
			d, err := seedOnce(ctx, t, &closing, func(cs *mcp.ClientSession) error { _, err := cs.ListTools(ctx, nil); return err })
			if err != nil {
				return nil, err
			}
			list += d
		}
		seedList = append(seedList, list)

		// Persistent calls through mcpmux, interleaved with the seed's.
		for j := range 20 {
			start := time.Now()
			if err := call(mux.cs, "s0__"+t.tool, fmt.Sprint("via", i, j)); err != nil {
				return nil, err
			}
			viaCall = append(viaCall, time.Since(start))
		}
		start := time.Now()
		if got, err := countTools(ctx, mux.cs); err != nil || got != listed {
			return nil, fmt.Errorf("tools/list via mcpmux: %d tools, want %d: %v", got, listed, err)
		}
		viaList = append(viaList, time.Since(start))
	}
	rows := []row{
		speedupRow(fmt.Sprintf("Seed pattern, %s: fresh process + initialize + call, vs a persistent call via mcpmux", t.label), seedCall, viaCall),
		speedupRow(fmt.Sprintf("Seed pattern, %s: listing %d servers one by one (process + initialize + list each), vs tools/list via mcpmux", t.label, servers), seedList, viaList),
	}
	rows[1].Target, rows[1].Met = "", nil
	rows[0].Note = fmt.Sprintf("%d seed calls, %d via mcpmux", len(seedCall), len(viaCall))
	return rows, nil
}

// seedOnce is one operation the seed's way: its own child and session.
// The time taken ends with the answer: closing the session (which the
// seed waits for too, up to its SDK's termination timeout) runs in the
// background, so that the figure errs on the seed's side.
func seedOnce(ctx context.Context, t seedTarget, closing *sync.WaitGroup, op func(*mcp.ClientSession) error) (time.Duration, error) {
	start := time.Now()
	p, _, err := connectStdio(ctx, newClient(nil), t.cmd, nil, t.args...)
	if err != nil {
		return 0, err
	}
	err = op(p.cs)
	d := time.Since(start)
	closing.Go(p.stop)
	return d, err
}

// processStart times starting the fixture and closing its stdin until it
// exits: the part of a seed call no MCP implementation can avoid.
func processStart(ctx context.Context, fixture string, n int) (samples, error) {
	var out samples
	for range n {
		t := time.Now()
		cmd := exec.CommandContext(ctx, fixture)
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		_ = in.Close()
		_ = cmd.Wait()
		out = append(out, time.Since(t))
	}
	return out, nil
}

// speedupRow reports how many times faster b is than a, by medians.
func speedupRow(figure string, a, b samples) row {
	r := float64(a.median()) / float64(b.median())
	return row{
		Figure:  figure,
		Median:  fmt.Sprintf("%s vs %s", ms(a.median()), ms(b.median())),
		P99:     fmt.Sprintf("%s vs %s", ms(a.p99()), ms(b.p99())),
		Value:   fmt.Sprintf("%.0f× faster", r),
		Ratio:   r,
		Target:  "≥ 100×",
		Met:     met(r >= 100),
		Command: "go run ./bench -only seed",
	}
}
