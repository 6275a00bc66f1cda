package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hop (issue 18): what one call through mcpmux costs against the direct
// call, side by side in one run, over Streamable HTTP with the fixture as
// a stdio child of the proxy, as a proxy is deployed: median latency and
// what the hop adds, throughput with 32 and 64 concurrent sessions, the
// proxy's CPU per call, and its memory with 20 servers × 51 tools. With
// -tbxark BINARY, TBXark/mcp-proxy (built by whoever runs the bench, from
// its own sources) is measured the same way in the same rounds.
func hop(ctx context.Context, e *env, o options) ([]row, error) {
	rounds, batch := 30, 200
	if o.quick {
		rounds, batch = 4, 50
	}
	fx, err := e.startFixtureHTTP()
	if err != nil {
		return nil, err
	}
	defer fx.stop()
	mux, err := e.startMuxHTTP(e.configDir(server{name: "fx"}), false, e.muxEnv("hop")...)
	if err != nil {
		return nil, err
	}
	defer mux.stop()
	targets := []*hopTarget{
		{name: "direct (fixture on HTTP)", url: fx.url, tool: "echo"},
		{name: "mcpmux", url: mux.url, tool: "fx__echo", pid: mux.pid()},
	}
	if e.tbxark != "" {
		tb, url, err := e.startTBXark(1, 0)
		if err != nil {
			return nil, err
		}
		defer tb.stop()
		targets = append(targets, &hopTarget{name: "TBXark/mcp-proxy", url: url + "/s000/", tool: "echo", pid: tb.pid()})
	}
	for _, t := range targets {
		if t.cs, err = connectHTTP(ctx, newClient(nil), t.url, httpClient()); err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		defer t.cs.Close()
		for i := range 200 { // warm-up
			if err := echo(ctx, t.cs, t.tool, fmt.Sprint("warm", i)); err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
		}
	}
	// Latency: rounds alternate between the targets.
	for r := range rounds {
		for _, t := range targets {
			for i := range batch {
				start := time.Now()
				if err := echo(ctx, t.cs, t.tool, fmt.Sprintf("call %d/%d", r, i)); err != nil {
					return nil, fmt.Errorf("%s: %w", t.name, err)
				}
				t.lat = append(t.lat, time.Since(start))
			}
		}
	}
	// Throughput and the proxy's CPU per call, with 32 and 64 sessions.
	loads := []int{32, 64}
	calls := 100
	if o.quick {
		calls = 10
	}
	for _, t := range targets {
		t.rate, t.cpu = map[int]float64{}, map[int]time.Duration{}
	}
	for _, n := range loads {
		for range 2 {
			for _, t := range targets {
				ss, err := sessions(ctx, t.url, n)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", t.name, err)
				}
				_, _, _, _ = load(ctx, ss, t.tool, 3) // warm-up
				c0 := cpuTime(t.pid)
				_, el, errs, first := load(ctx, ss, t.tool, calls)
				cpu := cpuTime(t.pid) - c0
				closeAll(ss)
				if errs > 0 {
					return nil, fmt.Errorf("%s: %d calls failed, first: %v", t.name, errs, first)
				}
				t.rate[n] += float64(n*calls) / el.Seconds() / 2
				t.cpu[n] += cpu / time.Duration(2*n*calls)
			}
		}
	}
	// Memory with 20 servers × 51 tools (echo and 50 more), listed once.
	var big []server
	for i := range 20 {
		big = append(big, server{name: fmt.Sprintf("s%03d", i), tools: 50})
	}
	muxBig, err := e.startMuxHTTP(e.configDir(big...), false)
	if err != nil {
		return nil, err
	}
	defer muxBig.stop()
	if targets[1].rss, err = listedRSS(ctx, muxBig.url, muxBig.pid()); err != nil {
		return nil, err
	}
	if e.tbxark != "" {
		tb, url, err := e.startTBXark(20, 50)
		if err != nil {
			return nil, err
		}
		defer tb.stop()
		if targets[2].rss, err = listedRSS(ctx, url+"/s000/", tb.pid()); err != nil {
			return nil, err
		}
	}

	direct := targets[0]
	cmd := "go run ./bench -only hop [-tbxark BINARY]"
	var rows []row
	for _, t := range targets[1:] {
		ratio := float64(t.lat.median()) / float64(direct.lat.median())
		added := t.lat.median() - direct.lat.median()
		rows = append(rows, row{
			Figure:  fmt.Sprintf("Hop over Streamable HTTP, %s (fixture as its stdio child) vs direct: median latency", t.name),
			Median:  fmt.Sprintf("%s vs %s", ms(t.lat.median()), ms(direct.lat.median())),
			P99:     fmt.Sprintf("%s vs %s", ms(t.lat.p99()), ms(direct.lat.p99())),
			Value:   fmt.Sprintf("%.2f×, adds %s", ratio, ms(added)),
			Ratio:   ratio,
			Target:  "≤ 1.4×",
			Met:     met(ratio <= 1.4),
			Command: cmd,
			Note:    fmt.Sprintf("%d rounds × %d calls each, targets alternating", rounds, batch),
		})
		for _, n := range loads {
			share := t.rate[n] / direct.rate[n]
			rows = append(rows, row{
				Figure:  fmt.Sprintf("Hop, %s: throughput with %d sessions, and its CPU per call", t.name, n),
				Value:   fmt.Sprintf("%.0f vs %.0f calls/s (%.0f%%); %s CPU/call", t.rate[n], direct.rate[n], 100*share, ms(t.cpu[n])),
				Ratio:   share,
				Target:  "≥ 95 %; ≤ 165 µs",
				Met:     met(share >= 0.95 && t.cpu[n] <= 165*time.Microsecond),
				Command: cmd,
			})
		}
		if t.rss > 0 {
			rows = append(rows, row{
				Figure:  fmt.Sprintf("Hop, %s: memory with 20 servers × 51 tools (VmRSS after a tools/list)", t.name),
				Value:   fmt.Sprintf("%.1f MB", t.rss),
				Target:  "≤ 25 MB",
				Met:     met(t.rss <= 25),
				Command: cmd,
			})
		}
	}
	return rows, nil
}

// hopTarget is one way to reach the echo tool.
type hopTarget struct {
	name, url, tool string
	pid             int // the proxy's process; 0 for the direct call
	cs              *mcp.ClientSession
	lat             samples
	rate            map[int]float64       // calls/s by sessions
	cpu             map[int]time.Duration // the proxy's CPU per call, by sessions
	rss             float64               // MB with 20 × 51 tools
}

// listedRSS lists the tools at url once and returns the resident memory of
// pid.
func listedRSS(ctx context.Context, url string, pid int) (float64, error) {
	cs, err := connectHTTP(ctx, newClient(nil), url, httpClient())
	if err != nil {
		return 0, err
	}
	defer cs.Close()
	if _, err := countTools(ctx, cs); err != nil {
		return 0, err
	}
	cur, _, err := rss(pid)
	return cur, err
}

// startTBXark starts TBXark/mcp-proxy serving n fixture servers (s000 …)
// with extra tools each over Streamable HTTP, each at /<name>/, and waits
// until they answer.
func (e *env) startTBXark(n, tools int) (*proc, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	type server struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	servers := map[string]server{}
	for i := range n {
		servers[fmt.Sprintf("s%03d", i)] = server{Command: e.fixture, Args: []string{"-tools", fmt.Sprint(tools)}}
	}
	cfg := map[string]any{
		"mcpProxy":   map[string]any{"baseURL": "http://" + addr, "addr": addr, "name": "tbxark", "version": "1", "type": "streamable-http"},
		"mcpServers": servers,
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(e.dir, fmt.Sprintf("tbxark-%d.json", n))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, "", err
	}
	cmd, logs := command(e.tbxark, nil, "--config", path)
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	p := &proc{cmd: cmd}
	url := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		if strings.Contains(logs.String(), "All clients initialized") {
			if resp, err := http.Get(url + "/s000/"); err == nil {
				resp.Body.Close()
				return p, url, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, "", fmt.Errorf("TBXark/mcp-proxy did not start: %s", tail(logs.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
