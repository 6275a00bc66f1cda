package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// limits (issue 16): what a misbehaving peer costs mcpmux. A server that
// floods stderr: mcpmux's CPU per MB it drains. Clients that open HTTP
// sessions and abandon them: what the open ones hold, and that
// max_sessions refuses the rest (a correctness figure).
func limits(ctx context.Context, e *env, o options) ([]row, error) {
	flood, err := stderrFlood(ctx, e, o)
	if err != nil {
		return nil, err
	}
	sessions, err := abandonedSessions(ctx, e, o)
	if err != nil {
		return nil, err
	}
	return []row{flood, sessions}, nil
}

// stderrFlood runs mcpmux with one server that writes stderr as fast as it
// can and measures mcpmux's CPU against the bytes it drained.
func stderrFlood(ctx context.Context, e *env, o options) (row, error) {
	window := 5 * time.Second
	if o.quick {
		window = time.Second
	}
	dir := e.configDir(server{name: "flood", env: map[string]string{"FIXTURE_STDERR_FLOOD": "1"}})
	p, err := e.startMuxStdio(ctx, newClient(nil), dir)
	if err != nil {
		return row{}, err
	}
	defer p.stop()
	written := func() (int64, error) {
		res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: "flood__stderr_bytes", Arguments: map[string]any{}})
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(resultText(res), 10, 64)
	}
	time.Sleep(window / 5) // past start-up
	b0, err := written()
	if err != nil {
		return row{}, err
	}
	c0, t0 := cpuTime(p.pid()), time.Now()
	time.Sleep(window)
	b1, err := written()
	if err != nil {
		return row{}, err
	}
	cpu, wall := cpuTime(p.pid())-c0, time.Since(t0)
	mb := float64(b1-b0) / 1e6
	perMB := float64(cpu) / float64(time.Millisecond) / mb
	return row{
		Figure:  fmt.Sprintf("A server flooding stderr (120-byte lines, as fast as the pipe takes them, %v): mcpmux's CPU per MB drained", window),
		Value:   fmt.Sprintf("%.2f CPU-ms/MB", perMB),
		Note:    fmt.Sprintf("%.0f MB/s drained, %.0f %% of a core; a server writing 10 MB/s would cost %.1f %% of a core", mb/wall.Seconds(), 100*cpu.Seconds()/wall.Seconds(), perMB*10/10),
		Command: "go run ./bench -only limits",
	}, nil
}

// abandonedSessions opens 2n HTTP sessions (initialize, initialized, then
// nothing) against max_sessions n, and reads what mcpmux holds for the n
// it kept.
func abandonedSessions(ctx context.Context, e *env, o options) (row, error) {
	n := 1000
	if o.quick {
		n = 100
	}
	dir := e.configDir(server{name: "echo"})
	if err := os.WriteFile(filepath.Join(dir, "mcpmux.yaml"), fmt.Appendf(nil, "max_sessions: %d\n", n), 0o644); err != nil {
		return row{}, err
	}
	p, err := e.startMuxHTTP(dir, false)
	if err != nil {
		return row{}, err
	}
	defer p.stop()
	base := strings.TrimSuffix(p.url, "/mcp")
	g0, err := metricValue(base, "go_goroutines")
	if err != nil {
		return row{}, err
	}
	r0, _, _ := rss(p.pid())
	hc := httpClient()
	opened, refused := 0, 0
	for range 2 * n {
		if ctx.Err() != nil {
			return row{}, ctx.Err()
		}
		status, id, err := post(hc, p.url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
		if err != nil {
			return row{}, err
		}
		switch status {
		case http.StatusOK:
			opened++
			if _, _, err := post(hc, p.url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
				return row{}, err
			}
		case http.StatusServiceUnavailable:
			refused++
		default:
			return row{}, fmt.Errorf("initialize: HTTP %d", status)
		}
	}
	g1, err := metricValue(base, "go_goroutines")
	if err != nil {
		return row{}, err
	}
	r1, _, _ := rss(p.pid())
	return row{
		Figure: fmt.Sprintf("%d HTTP sessions opened and abandoned, max_sessions %d: kept, refused (503), and what the kept ones hold", 2*n, n),
		Value:  fmt.Sprintf("%d kept, %d refused", opened, refused),
		Target: fmt.Sprintf("%d kept, %d refused", n, n),
		Met:    met(opened == n && refused == n),
		Check:  true,
		Note: fmt.Sprintf("%.1f goroutines and %.1f KB of RSS per kept session (%.0f goroutines, %.0f MB in all); session_timeout (30m) closes them",
			(g1-g0)/float64(max(opened, 1)), (r1-r0)*1024/float64(max(opened, 1)), g1, r1),
		Command: "go run ./bench -only limits",
	}, nil
}

// post sends one JSON-RPC message as a Streamable HTTP client does and
// returns the status and the session id.
func post(hc *http.Client, url, session, body string) (int, string, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", clientVersion)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), nil
}

// metricValue reads one unlabelled value from mcpmux's /metrics.
func metricValue(base, name string) (float64, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("/metrics has no %s", name)
}
