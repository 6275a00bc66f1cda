package main

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// latency (figure 1): the same echo tool called directly (go-sdk client →
// fixture) and through mcpmux, over stdio and over Streamable HTTP. Calls
// alternate in batches between the two, so that noise hits both alike.
func latency(ctx context.Context, e *env, o options) ([]row, error) {
	rounds, batch := 40, 250
	if o.quick {
		rounds, batch = 6, 100
	}
	var rows []row

	// stdio: client → fixture, and client → mcpmux → fixture (stdio child).
	direct, _, err := connectStdio(ctx, newClient(nil), e.fixture, nil)
	if err != nil {
		return nil, err
	}
	defer direct.stop()
	via, err := e.startMuxStdio(ctx, newClient(nil), e.configDir(server{name: "fx"}), e.muxEnv("latency-stdio")...)
	if err != nil {
		return nil, err
	}
	defer via.stop()
	d, v, err := alternate(ctx, rounds, batch, direct.cs, "echo", via.cs, "fx__echo")
	if err != nil {
		return nil, err
	}
	stdioDirect := d.median()
	rows = append(rows, ratioRow("Added latency per call, stdio: via mcpmux / direct", d, v, 2.0, "go run ./bench -only latency"))

	// The same call through mcpmux, the fixture (its stdio child) pinned
	// to each protocol era: what a 2026-07-28 connection costs per call
	// against a 2025-11-25 one.
	era, err := eraCost(ctx, e, rounds, batch)
	if err != nil {
		return nil, err
	}
	rows = append(rows, era)

	// HTTP: client → fixture -http, and client → mcpmux --http → fixture
	// (stdio child, as mcpmux is usually deployed).
	fx, err := e.startFixtureHTTP()
	if err != nil {
		return nil, err
	}
	defer fx.stop()
	mux, err := e.startMuxHTTP(e.configDir(server{name: "fx"}), false, e.muxEnv("latency-http")...)
	if err != nil {
		return nil, err
	}
	defer mux.stop()
	dcs, err := connectHTTP(ctx, newClient(nil), fx.url, httpClient())
	if err != nil {
		return nil, err
	}
	defer dcs.Close()
	vcs, err := connectHTTP(ctx, newClient(nil), mux.url, httpClient())
	if err != nil {
		return nil, err
	}
	defer vcs.Close()
	d, v, err = alternate(ctx, rounds, batch, dcs, "echo", vcs, "fx__echo")
	if err != nil {
		return nil, err
	}
	r := ratioRow("Added latency per call, Streamable HTTP: via mcpmux / direct", d, v, 1.3, "go run ./bench -only latency")
	// The HTTP path through mcpmux has a whole stdio round trip more,
	// which on its own costs what the direct stdio call above does.
	r.Note += fmt.Sprintf("; floor with the extra stdio hop ≈ 1 + direct stdio / direct HTTP = %.2f×", 1+float64(stdioDirect)/float64(d.median()))
	rows = append(rows, r)
	return rows, nil
}

// alternate times calls on a and b in alternating batches, after a warm-up.
func alternate(ctx context.Context, rounds, batch int, a *mcp.ClientSession, aTool string, b *mcp.ClientSession, bTool string) (da, db samples, err error) {
	for i := range 200 {
		if err := echo(ctx, a, aTool, fmt.Sprint("warm", i)); err != nil {
			return nil, nil, err
		}
		if err := echo(ctx, b, bTool, fmt.Sprint("warm", i)); err != nil {
			return nil, nil, err
		}
	}
	for r := range rounds {
		for _, side := range []struct {
			cs   *mcp.ClientSession
			tool string
			out  *samples
		}{{a, aTool, &da}, {b, bTool, &db}} {
			for i := range batch {
				text := fmt.Sprintf("call %d/%d", r, i)
				t := time.Now()
				if err := echo(ctx, side.cs, side.tool, text); err != nil {
					return nil, nil, err
				}
				*side.out = append(*side.out, time.Since(t))
			}
		}
	}
	return da, db, nil
}

// ratioRow reports b against a by their medians, the p99 ratio in a note.
func ratioRow(figure string, a, b samples, target float64, cmd string) row {
	r := float64(b.median()) / float64(a.median())
	return row{
		Figure:  figure,
		Median:  fmt.Sprintf("%s vs %s", ms(b.median()), ms(a.median())),
		P99:     fmt.Sprintf("%s vs %s", ms(b.p99()), ms(a.p99())),
		Value:   fmt.Sprintf("%.2f×", r),
		Ratio:   r,
		Target:  fmt.Sprintf("≤ %.1f×", target),
		Met:     met(r <= target),
		Command: cmd,
		Note:    fmt.Sprintf("%d calls each, p99 ratio %.2f×", len(a), float64(b.p99())/float64(a.p99())),
	}
}

// eraCost times the call through two mcpmux processes over stdio, whose
// fixture (a go-sdk server, its stdio child) is pinned to 2025-11-25 in
// one and to 2026-07-28 in the other, alternating; with each mcpmux's CPU
// per call.
func eraCost(ctx context.Context, e *env, rounds, batch int) (row, error) {
	var via [2]*proc
	for i, v := range []string{"2025-11-25", "2026-07-28"} {
		p, err := e.startMuxStdio(ctx, newClient(nil), e.configDir(server{name: "fx", protocol: v}), e.muxEnv("latency-era-"+v)...)
		if err != nil {
			return row{}, err
		}
		defer p.stop()
		via[i] = p
	}
	cpu0 := [2]time.Duration{cpuTime(via[0].pid()), cpuTime(via[1].pid())}
	old, cur, err := alternate(ctx, rounds, batch, via[0].cs, "fx__echo", via[1].cs, "fx__echo")
	if err != nil {
		return row{}, err
	}
	calls := time.Duration(len(old) + 200) // with the warm-up
	r := ratioRow("Per call through mcpmux over stdio, fixture speaking 2026-07-28 / 2025-11-25", old, cur, 1.1, "go run ./bench -only latency")
	r.Note += fmt.Sprintf("; mcpmux CPU per call %s (2026) vs %s (2025)", ms((cpuTime(via[1].pid())-cpu0[1])/calls), ms((cpuTime(via[0].pid())-cpu0[0])/calls))
	r.Target, r.Met = "", nil // measured, no target set
	return r, nil
}
