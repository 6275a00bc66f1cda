package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// limits (issue 16): what a misbehaving peer costs mcpmux. A call of a
// megabyte-long tool name full of separators: mcpmux's CPU for it and
// another client's latency meanwhile. A server that floods stderr:
// mcpmux's CPU per MB it drains. Clients that open HTTP sessions and
// abandon them: what the open ones hold, and that max_sessions refuses the
// rest (a correctness figure).
func limits(ctx context.Context, e *env, o options) ([]row, error) {
	name, err := separatorName(ctx, e, o)
	if err != nil {
		return nil, err
	}
	flood, err := stderrFlood(ctx, e, o)
	if err != nil {
		return nil, err
	}
	sessions, err := abandonedSessions(ctx, e, o)
	if err != nil {
		return nil, err
	}
	return []row{name, flood, sessions}, nil
}

// separatorName calls a tool named "a" + "__"×524 287 (1 MiB) over HTTP
// from as many clients as there are cores, at once, with 12 servers
// configured, while another client calls an echo tool in a loop: mcpmux's
// CPU for those calls, and the other client's latency before and during
// them. Resolving such a name once cost a map lookup per separator, each
// hashing a long slice of the name.
func separatorName(ctx context.Context, e *env, o options) (row, error) {
	var servers []server
	for i := range 12 {
		servers = append(servers, server{name: fmt.Sprintf("s%02d", i)})
	}
	p, err := e.startMuxHTTP(e.configDir(servers...), false)
	if err != nil {
		return row{}, err
	}
	defer p.stop()
	victim, err := connectHTTP(ctx, newClient(nil), p.url, httpClient())
	if err != nil {
		return row{}, err
	}
	defer victim.Close()
	attackers := make([]*mcp.ClientSession, runtime.NumCPU())
	for i := range attackers {
		if attackers[i], err = connectHTTP(ctx, newClient(nil), p.url, httpClient()); err != nil {
			return row{}, err
		}
		defer attackers[i].Close()
	}

	// calls times echo calls of the victim until done is closed, or n
	// calls if done is nil.
	calls := func(n int, done <-chan struct{}) (samples, error) {
		var s samples
		for i := 0; done != nil || i < n; i++ {
			if done != nil {
				select {
				case <-done:
					return s, nil
				default:
				}
			}
			t := time.Now()
			if err := echo(ctx, victim, "s00__echo", fmt.Sprint("call ", i)); err != nil {
				return nil, err
			}
			s = append(s, time.Since(t))
		}
		return s, nil
	}
	n := 500
	if o.quick {
		n = 100
	}
	before, err := calls(n, nil)
	if err != nil {
		return row{}, err
	}

	name := "a" + strings.Repeat("__", 1<<19)
	done := make(chan struct{})
	answers := make([]string, len(attackers))
	errs := make([]error, len(attackers))
	var wg sync.WaitGroup
	c0, t0 := cpuTime(p.pid()), time.Now()
	for i, cs := range attackers {
		wg.Go(func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			switch {
			case err != nil:
				errs[i] = err
			case !res.IsError:
				errs[i] = fmt.Errorf("a %d-byte name answered without isError", len(name))
			default:
				answers[i] = resultText(res)
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	during, err := calls(0, done)
	<-done
	cpu, wall := cpuTime(p.pid())-c0, time.Since(t0)
	if err != nil {
		return row{}, err
	}
	if err := errors.Join(errs...); err != nil {
		return row{}, err
	}
	if len(during) == 0 {
		during = samples{wall} // the victim's one call outlasted the attack
	}
	return row{
		Figure: fmt.Sprintf("%d calls at once of a 1 MiB tool name full of separators (\"a\" + \"__\"×524 287), 12 servers: mcpmux's CPU per call; another client's echo calls before and during them", len(attackers)),
		Value:  fmt.Sprintf("%.2f CPU-s", cpu.Seconds()/float64(len(attackers))),
		Median: fmt.Sprintf("%s during vs %s before", ms(during.median()), ms(before.median())),
		P99:    fmt.Sprintf("%s during vs %s before", ms(during.p99()), ms(before.p99())),
		Note: fmt.Sprintf("the other client's mean %s during vs %s before, %d calls during them; answered in %s (%d bytes: %.40q…)",
			ms(during.mean()), ms(before.mean()), len(during), ms(wall), len(answers[0]), answers[0]),

		Command: "go run ./bench -only limits",
	}, nil
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
