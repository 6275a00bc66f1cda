package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// startup (figure 4a): time from spawning mcpmux to the first tools/list
// that holds every server's tools, for 1, 10 and 50 stdio servers.
// Servers start in parallel, so 50 should cost little more than 1.
func startup(ctx context.Context, e *env, o options) ([]row, error) {
	reps := 5
	if o.quick {
		reps = 2
	}
	sizes := []int{1, 10, 50}
	times, floor := map[int]samples{}, map[int]samples{}
	dirs := map[int]string{}
	for _, n := range sizes {
		var cfg []server
		for i := range n {
			cfg = append(cfg, server{name: fmt.Sprintf("s%02d", i)})
		}
		dirs[n] = e.configDir(cfg...)
	}
	for range reps {
		for _, n := range sizes { // interleaved, so noise hits every size
			t := time.Now()
			p, err := e.startMuxStdio(ctx, newClient(nil), dirs[n])
			if err != nil {
				return nil, err
			}
			got, err := countTools(ctx, p.cs)
			d := time.Since(t)
			p.stop()
			if err != nil || got != n {
				return nil, fmt.Errorf("start-up with %d servers: listed %d tools, %v", n, got, err)
			}
			times[n] = append(times[n], d)
			d, err = parallelStart(ctx, e.fixture, n)
			if err != nil {
				return nil, err
			}
			floor[n] = append(floor[n], d)
		}
	}
	var rows []row
	base := times[1].median()
	fbase := floor[1].median()
	for _, n := range sizes {
		r := float64(times[n].median()) / float64(base)
		rw := row{
			Figure:  fmt.Sprintf("Start-up, %d stdio server(s): spawn mcpmux → tools/list with every tool", n),
			Median:  ms(times[n].median()),
			P99:     ms(times[n].p99()),
			Value:   fmt.Sprintf("%.2f× one server; %.2f× the floor", r, float64(times[n].median())/float64(floor[n].median())),
			Ratio:   r,
			Command: "go run ./bench -only startup",
			Note: fmt.Sprintf("%d starts; floor: the bench itself starting, initializing and listing %d fixtures in parallel, no mcpmux: %s = %.2f× its 1",
				len(times[n]), n, ms(floor[n].median()), float64(floor[n].median())/float64(fbase)),
		}
		if n == 50 {
			rw.Target, rw.Met = "≤ 1.5×", met(r <= 1.5)
		}
		rows = append(rows, rw)
	}
	return rows, nil
}

// parallelStart is the floor of a parallel start: n fixtures spawned,
// initialized and listed at once by the bench's own go-sdk clients.
func parallelStart(ctx context.Context, fixture string, n int) (time.Duration, error) {
	start := time.Now()
	errs := make(chan error, n)
	procs := make(chan *proc, n)
	for range n {
		go func() {
			p, _, err := connectStdio(ctx, newClient(nil), fixture, nil)
			if err == nil {
				_, err = p.cs.ListTools(ctx, nil)
				procs <- p
			}
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	d := time.Since(start)
	close(procs)
	for p := range procs {
		p.stop()
	}
	return d, first
}

// catalog (figure 4b): tools/list latency and mcpmux's memory with 100
// servers × 50 tools, against one fixture listing the same 5000 tools
// itself (the SDK's own cost for that list). Two ways: at the server
// (plain HTTP requests, answers read as bytes) and with a go-sdk client
// (which spends most of the time decoding 5000 definitions).
func catalog(ctx context.Context, e *env, o options) ([]row, error) {
	servers, perServer, reps := 100, 50, 30
	if o.quick {
		reps = 6
	}
	var cfg []server
	for i := range servers {
		cfg = append(cfg, server{name: fmt.Sprintf("s%03d", i), tools: perServer - 1})
	}
	mux, err := e.startMuxHTTP(e.configDir(cfg...), false, e.muxEnv("catalog")...)
	if err != nil {
		return nil, err
	}
	defer mux.stop()
	want := servers * perServer
	fx, err := e.startFixtureHTTP("-tools", strconv.Itoa(want-1))
	if err != nil {
		return nil, err
	}
	defer fx.stop()
	viaCS, err := connectHTTP(ctx, newClient(nil), mux.url, httpClient())
	if err != nil {
		return nil, err
	}
	defer viaCS.Close()
	dirCS, err := connectHTTP(ctx, newClient(nil), fx.url, httpClient())
	if err != nil {
		return nil, err
	}
	defer dirCS.Close()
	viaRaw, err := newRawLister(ctx, mux.url)
	if err != nil {
		return nil, err
	}
	dirRaw, err := newRawLister(ctx, fx.url)
	if err != nil {
		return nil, err
	}

	var via, dir, viaSDK, dirSDK, viaPage, dirPage samples
	var size int
	for i := range reps + 3 {
		d, n, err := viaRaw.list(ctx)
		if err != nil {
			return nil, fmt.Errorf("tools/list via mcpmux: %w", err)
		}
		size = n
		d2, _, err := dirRaw.list(ctx)
		if err != nil {
			return nil, fmt.Errorf("tools/list direct: %w", err)
		}
		var d3, d4 time.Duration
		if i%3 == 0 { // the client-side figure costs far more: fewer of it
			t := time.Now()
			if n, err := countTools(ctx, viaCS); err != nil || n != want {
				return nil, fmt.Errorf("tools/list via mcpmux: %d tools, want %d: %v", n, want, err)
			}
			d3 = time.Since(t)
			t = time.Now()
			if n, err := countTools(ctx, dirCS); err != nil || n != want {
				return nil, fmt.Errorf("tools/list direct: %d tools: %v", n, err)
			}
			d4 = time.Since(t)
		}
		p1, err := viaRaw.page(ctx)
		if err != nil {
			return nil, err
		}
		p2, err := dirRaw.page(ctx)
		if err != nil {
			return nil, err
		}
		if i >= 3 { // warm-up
			via, dir = append(via, d), append(dir, d2)
			viaPage, dirPage = append(viaPage, p1), append(dirPage, p2)
			if d3 > 0 {
				viaSDK, dirSDK = append(viaSDK, d3), append(dirSDK, d4)
			}
		}
	}
	cur, peak, err := rss(mux.pid())
	if err != nil {
		return nil, err
	}
	// The same servers with one tool each: what the connections cost
	// without the catalog.
	var small []server
	for i := range servers {
		small = append(small, server{name: fmt.Sprintf("s%03d", i)})
	}
	bare, err := e.startMuxHTTP(e.configDir(small...), false)
	if err != nil {
		return nil, err
	}
	defer bare.stop()
	bareCS, err := connectHTTP(ctx, newClient(nil), bare.url, httpClient())
	if err != nil {
		return nil, err
	}
	defer bareCS.Close()
	if _, err := countTools(ctx, bareCS); err != nil {
		return nil, err
	}
	bareCur, _, err := rss(bare.pid())
	if err != nil {
		return nil, err
	}
	cmd := "go run ./bench -only catalog"
	return []row{
		{
			Figure: fmt.Sprintf("tools/list at the server, %d servers × %d tools: one request (first page, 1000 tools: the SDK's page size), via mcpmux", servers, perServer),
			Median: ms(viaPage.median()), P99: ms(viaPage.p99()),
			Value: ms(viaPage.median()), Target: "≤ 5 ms", Met: met(viaPage.median() <= 5*time.Millisecond), Command: cmd,
			Note: fmt.Sprintf("one go-sdk server listing %d tools itself: %s", want, ms(dirPage.median())),
		},
		{
			Figure: fmt.Sprintf("tools/list at the server, all %d pages (%.1f MB of JSON), via mcpmux", (want+999)/1000, float64(size)/1e6),
			Median: ms(via.median()), P99: ms(via.p99()),
			Value: ms(via.median()), Command: cmd,
			Note: fmt.Sprintf("one go-sdk server listing %d tools itself: %s", want, ms(dir.median())),
		},
		{
			Figure: "tools/list with a go-sdk client (decoding included), same catalog, via mcpmux vs direct",
			Median: fmt.Sprintf("%s vs %s", ms(viaSDK.median()), ms(dirSDK.median())),
			P99:    fmt.Sprintf("%s vs %s", ms(viaSDK.p99()), ms(dirSDK.p99())),
			Value:  fmt.Sprintf("%.2f×", float64(viaSDK.median())/float64(dirSDK.median())), Command: cmd,
		},
		{
			Figure: fmt.Sprintf("mcpmux memory with %d servers × %d tools (VmRSS, peak VmHWM)", servers, perServer),
			Value:  fmt.Sprintf("%.1f MB (peak %.1f MB)", cur, peak),
			Target: "≤ 40 MB", Met: met(cur <= 40), Command: cmd,
			Note: fmt.Sprintf("the same %d servers with 1 tool each: %.1f MB", servers, bareCur),
		},
	}, nil
}

// lookup (figure 4c): the Go benchmarks of the call path and of name
// resolution in aggregator/, over catalogs of 10 to 5000 tools. Flat
// ns/op means lookups do not depend on the catalog's size.
func lookup(ctx context.Context, e *env, o options) ([]row, error) {
	bt := "1s"
	if o.quick {
		bt = "200x"
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^(BenchmarkCall|BenchmarkResolve)$", "-benchtime", bt, "-benchmem", "./aggregator/")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go test -bench: %w\n%s", err, out)
	}
	type res struct{ ns, allocs float64 }
	got := map[string]map[int]res{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name, rest, _ := strings.Cut(f[0], "/tools=")
		size, _ := strconv.Atoi(strings.Split(rest, "-")[0])
		var r res
		for i := 1; i+1 < len(f); i++ {
			switch f[i+1] {
			case "ns/op":
				r.ns, _ = strconv.ParseFloat(f[i], 64)
			case "allocs/op":
				r.allocs, _ = strconv.ParseFloat(f[i], 64)
			}
		}
		if got[name] == nil {
			got[name] = map[int]res{}
		}
		got[name][size] = r
	}
	var rows []row
	for _, name := range []string{"BenchmarkCall", "BenchmarkResolve"} {
		m := got[name]
		small, big := m[10], m[5000]
		if small.ns == 0 || big.ns == 0 {
			return rows, fmt.Errorf("%s: no result for 10 or 5000 tools in:\n%s", name, out)
		}
		r := big.ns / small.ns
		rows = append(rows, row{
			Figure: fmt.Sprintf("%s (aggregator/, in-memory), 5000 vs 10 tools", name),
			Median: fmt.Sprintf("%s vs %s/op", nsStr(big.ns), nsStr(small.ns)),
			Value:  fmt.Sprintf("%.2f×", r), Ratio: r,
			Target: "flat (≤ 1.3×)", Met: met(r <= 1.3),
			Command: "go test -run '^$' -bench '^(BenchmarkCall|BenchmarkResolve)$' -benchmem ./aggregator/",
			Note:    fmt.Sprintf("1000 tools: %s/op; %.0f allocs/op", nsStr(m[1000].ns), big.allocs),
		})
	}
	return rows, nil
}

func nsStr(ns float64) string { return ms(time.Duration(ns)) }
