package main

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seedPattern (figure 2): the seed (MiroFlow's ToolManager) opens a new
// subprocess and session for every call — spawn, initialize, call_tool,
// close — and for a listing does the same with list_tools, one server
// after another. Both are reproduced here against the same fixture and
// compared with a persistent call and a tools/list through mcpmux.
func seedPattern(ctx context.Context, e *env, o options) ([]row, error) {
	n, servers := 60, 10
	if o.quick {
		n, servers = 15, 3
	}
	var cfg []server
	for i := range servers {
		cfg = append(cfg, server{name: fmt.Sprintf("s%d", i)})
	}
	mux, err := e.startMuxStdio(ctx, newClient(nil), e.configDir(cfg...))
	if err != nil {
		return nil, err
	}
	defer mux.stop()
	for i := range 200 {
		if err := echo(ctx, mux.cs, "s0__echo", fmt.Sprint(i)); err != nil {
			return nil, err
		}
	}

	var seedCall, seedList, viaCall, viaList samples
	for i := range n {
		t := time.Now()
		if err := seedOnce(ctx, e.fixture, func(cs *mcp.ClientSession) error { return echo(ctx, cs, "echo", fmt.Sprint("seed", i)) }); err != nil {
			return nil, err
		}
		seedCall = append(seedCall, time.Since(t))

		t = time.Now()
		for range servers {
			if err := seedOnce(ctx, e.fixture, func(cs *mcp.ClientSession) error { _, err := cs.ListTools(ctx, nil); return err }); err != nil {
				return nil, err
			}
		}
		seedList = append(seedList, time.Since(t))

		// Persistent calls through mcpmux, interleaved with the seed's.
		for j := range 20 {
			t = time.Now()
			if err := echo(ctx, mux.cs, "s0__echo", fmt.Sprint("via", i, j)); err != nil {
				return nil, err
			}
			viaCall = append(viaCall, time.Since(t))
		}
		t = time.Now()
		if got, err := countTools(ctx, mux.cs); err != nil || got != servers {
			return nil, fmt.Errorf("tools/list via mcpmux: %d tools, %v", got, err)
		}
		viaList = append(viaList, time.Since(t))
	}
	rows := []row{
		speedupRow("Seed pattern: fresh process + initialize + call, vs a persistent call via mcpmux", seedCall, viaCall),
		speedupRow(fmt.Sprintf("Seed pattern: listing %d servers one by one (process + initialize + list each), vs tools/list via mcpmux", servers), seedList, viaList),
	}
	rows[1].Target, rows[1].Met = "", nil
	if d, err := processStart(ctx, e.fixture, n); err == nil {
		rows = append(rows, row{Figure: "Seed pattern's floor: spawn and reap the Go fixture, no MCP at all", Median: ms(d.median()), P99: ms(d.p99()), Value: fmt.Sprintf("%.0f%% of a seed call", 100*float64(d.median())/float64(seedCall.median())), Command: "go run ./bench -only seed"})
	}
	return rows, nil
}

// seedOnce is one operation the seed's way: its own child and session.
func seedOnce(ctx context.Context, fixture string, op func(*mcp.ClientSession) error) error {
	p, _, err := connectStdio(ctx, newClient(nil), fixture, nil)
	if err != nil {
		return err
	}
	err = op(p.cs)
	if cerr := p.cs.Close(); err == nil && cerr != nil && !isExit(cerr) {
		err = cerr
	}
	return err
}

func isExit(err error) bool {
	_, ok := err.(*exec.ExitError)
	return ok
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
