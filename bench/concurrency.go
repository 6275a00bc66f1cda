package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// concurrency (figure 3): 64 clients, each with its own HTTP session,
// each calling echo in a bounded loop; throughput through mcpmux against
// the same load sent to the fixture directly. Rounds alternate.
func concurrency(ctx context.Context, e *env, o options) ([]row, error) {
	clients, calls, rounds := 64, 150, 3
	if o.quick {
		clients, calls, rounds = 64, 15, 1
	}
	fx, err := e.startFixtureHTTP()
	if err != nil {
		return nil, err
	}
	defer fx.stop()
	mux, err := e.startMuxHTTP(e.configDir(server{name: "fx"}), false, e.muxEnv("concurrency")...)
	if err != nil {
		return nil, err
	}
	defer mux.stop()
	direct, err := sessions(ctx, fx.url, clients)
	if err != nil {
		return nil, err
	}
	via, err := sessions(ctx, mux.url, clients)
	if err != nil {
		return nil, err
	}
	defer closeAll(direct)
	defer closeAll(via)

	var dLat, vLat samples
	var dTime, vTime time.Duration
	var dErr, vErr int64
	// CPU spent per call by each process, to say where the time goes.
	self := os.Getpid()
	child := serverPID(mux.url, "fx")
	var dCPU, vCPU [3]time.Duration // bench client, server side, fixture child of mcpmux
	var firstErr error
	_, _, _, _ = load(ctx, direct, "echo", 5) // warm-up
	_, _, _, _ = load(ctx, via, "fx__echo", 5)
	for range rounds {
		c0, c1 := cpuTime(self), cpuTime(fx.pid())
		lat, el, errs, _ := load(ctx, direct, "echo", calls)
		dLat, dTime, dErr = append(dLat, lat...), dTime+el, dErr+errs
		dCPU[0], dCPU[1] = dCPU[0]+cpuTime(self)-c0, dCPU[1]+cpuTime(fx.pid())-c1
		c0, c1, c2 := cpuTime(self), cpuTime(mux.pid()), cpuTime(child)
		lat, el, errs, first := load(ctx, via, "fx__echo", calls)
		vLat, vTime, vErr = append(vLat, lat...), vTime+el, vErr+errs
		vCPU[0], vCPU[1], vCPU[2] = vCPU[0]+cpuTime(self)-c0, vCPU[1]+cpuTime(mux.pid())-c1, vCPU[2]+cpuTime(child)-c2
		if first != nil && firstErr == nil {
			firstErr = first
		}
	}
	total := float64(clients * calls * rounds)
	dRate, vRate := total/dTime.Seconds(), total/vTime.Seconds()
	share := vRate / dRate
	per := func(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d.Microseconds())/total) }
	cpuNote := fmt.Sprintf("CPU per call: direct = client %s + fixture (HTTP) %s; via = client %s + mcpmux %s + fixture (stdio) %s",
		per(dCPU[0]), per(dCPU[1]), per(vCPU[0]), per(vCPU[1]), per(vCPU[2]))
	cmd := "go run ./bench -only concurrency"
	errNote := ""
	if firstErr != nil {
		errNote = "first: " + firstErr.Error()
	}
	return []row{
		{
			Figure: fmt.Sprintf("Concurrency, %d HTTP clients × %d calls: throughput via mcpmux / direct", clients, calls*rounds),
			Median: fmt.Sprintf("%s vs %s", ms(vLat.median()), ms(dLat.median())),
			P99:    fmt.Sprintf("%s vs %s", ms(vLat.p99()), ms(dLat.p99())),
			Value:  fmt.Sprintf("%.0f%% (%.0f vs %.0f calls/s)", 100*share, vRate, dRate),
			Ratio:  share, Target: "≥ 80 %", Met: met(share >= 0.8), Command: cmd,
			Note: cpuNote,
		},
		{
			Figure: "Concurrency: calls without a correct answer via mcpmux (direct)",
			Value:  fmt.Sprintf("%d (%d)", vErr, dErr),
			Target: "0", Met: met(vErr == 0), Command: cmd, Check: true, Note: errNote,
		},
	}, nil
}

func sessions(ctx context.Context, url string, n int) ([]*mcp.ClientSession, error) {
	out := make([]*mcp.ClientSession, n)
	for i := range out {
		cs, err := connectHTTP(ctx, newClient(nil), url, httpClient())
		if err != nil {
			closeAll(out[:i])
			return nil, err
		}
		out[i] = cs
	}
	return out, nil
}

func closeAll(s []*mcp.ClientSession) {
	for _, cs := range s {
		if cs != nil {
			_ = cs.Close()
		}
	}
}

// load runs calls echo calls on every session at once and returns each
// call's latency, the wall time, and the failures.
func load(ctx context.Context, ss []*mcp.ClientSession, tool string, calls int) (lat samples, elapsed time.Duration, errs int64, first error) {
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		nerr  atomic.Int64
		start = make(chan struct{})
	)
	for i, cs := range ss {
		wg.Go(func() {
			mine := make(samples, 0, calls)
			<-start
			for j := range calls {
				t := time.Now()
				err := echo(ctx, cs, tool, fmt.Sprintf("c%d-%d", i, j))
				mine = append(mine, time.Since(t))
				if err != nil {
					nerr.Add(1)
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	t := time.Now()
	close(start)
	wg.Wait()
	return lat, time.Since(t), nerr.Load(), first
}
