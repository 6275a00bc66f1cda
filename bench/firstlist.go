package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// firstList (issue 30): a proxy of 20 stdio servers × 51 tools, as
// deployed (Streamable HTTP, the fixtures its children), from its spawn
// to ready (/healthz; TBXark's "All clients initialized") and to the
// first full tools/list of a client that declares roots (the go-sdk
// client's default), then its memory: resident, anonymous and
// file-backed (/proc/PID/smaps_rollup), and how many children it runs.
// mcpmux twice: with the fixtures as they are (they speak MCP 2026-07-28,
// where what a server lists to a client is asked per request) and pinned
// to 2025-11-25 (one session per process: what such a server lists to a
// client with other capabilities needs a session of its own). With
// -tbxark BINARY, TBXark/mcp-proxy the same way, in the same rounds.
func firstList(ctx context.Context, e *env, o options) ([]row, error) {
	reps := 3
	if o.quick {
		reps = 1
	}
	const n, extra = 20, 50
	var auto, pinned []server
	for i := range n {
		auto = append(auto, server{name: fmt.Sprintf("s%03d", i), tools: extra})
		pinned = append(pinned, server{name: fmt.Sprintf("s%03d", i), tools: extra, yaml: "protocol: 2025-11-25\n"})
	}
	targets := []*startTarget{
		{name: "mcpmux", start: e.startMux(e.configDir(auto...))},
		{name: "mcpmux, servers pinned to 2025-11-25", start: e.startMux(e.configDir(pinned...))},
	}
	if e.tbxark != "" {
		targets = append(targets, &startTarget{name: "TBXark/mcp-proxy", start: func() (*proc, []string, error) {
			p, url, err := e.startTBXark(n, extra)
			if err != nil {
				return nil, nil, err
			}
			var urls []string
			for i := range n {
				urls = append(urls, fmt.Sprintf("%s/s%03d/", url, i))
			}
			return p, urls, nil
		}})
	}
	for range reps {
		for _, t := range targets { // interleaved, so that noise hits each
			if err := t.run(ctx, n*(extra+1)); err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
		}
	}
	cmd := "go run ./bench -only firstlist [-tbxark BINARY]"
	var rows []row
	for _, t := range targets {
		rows = append(rows, row{
			Figure:  fmt.Sprintf("Start-up, %s, 20 stdio servers × 51 tools: spawn → ready, → first full tools/list (client with roots)", t.name),
			Median:  fmt.Sprintf("%s, %s", ms(t.ready.median()), ms(t.list.median())),
			Value:   fmt.Sprintf("%s to the list", ms(t.list.median())),
			Command: cmd,
			Note:    fmt.Sprintf("%d starts; processes it runs after the list: %d (mcpmux's include its reaper)", len(t.list), t.children),
		}, row{
			Figure:  fmt.Sprintf("Memory, %s, 20 stdio servers × 51 tools after the first tools/list (smaps_rollup)", t.name),
			Value:   fmt.Sprintf("RSS %.1f MB: anonymous %.1f MB, file-backed %.1f MB", median(t.rss), median(t.anon), median(t.rss)-median(t.anon)),
			Command: cmd,
			Note:    fmt.Sprintf("medians of %d", len(t.rss)),
		})
	}
	return rows, nil
}

// startTarget is one proxy started again and again.
type startTarget struct {
	name        string
	start       func() (p *proc, urls []string, err error) // returns once ready
	ready, list samples
	rss, anon   []float64 // MB
	children    int
}

// run starts t once, lists want tools from its endpoints and records the
// times and memory.
func (t *startTarget) run(ctx context.Context, want int) error {
	t0 := time.Now()
	p, urls, err := t.start()
	if err != nil {
		return err
	}
	defer p.stop()
	t.ready = append(t.ready, time.Since(t0))
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		got   int
		first error
	)
	for _, u := range urls {
		wg.Go(func() {
			cs, err := connectHTTP(ctx, newClient(nil), u, httpClient())
			var k int
			if err == nil {
				k, err = countTools(ctx, cs)
				cs.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			got += k
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	if first != nil || got != want {
		return fmt.Errorf("listed %d tools of %d: %v", got, want, first)
	}
	t.list = append(t.list, time.Since(t0))
	rss, anon, err := smapsRollup(p.pid())
	if err != nil {
		return err
	}
	t.rss, t.anon = append(t.rss, rss), append(t.anon, anon)
	t.children = children(p.pid())
	return nil
}

// startMux returns a start function of mcpmux --http over dir that
// returns once /healthz says ready.
func (e *env) startMux(dir string) func() (*proc, []string, error) {
	return func() (*proc, []string, error) {
		p, err := e.startMuxHTTP(dir, false)
		if err != nil {
			return nil, nil, err
		}
		return p, []string{p.url}, nil
	}
}

// smapsRollup reads a process's resident and anonymous memory, in MB.
func smapsRollup(pid int) (rss, anon float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "Rss:":
			rss = kb / 1024
		case "Anonymous:":
			anon = kb / 1024
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("no Rss in /proc/%d/smaps_rollup", pid)
	}
	return rss, anon, nil
}

// children counts the processes whose parent is pid.
func children(pid int) int {
	entries, _ := os.ReadDir("/proc")
	want := strconv.Itoa(pid)
	n := 0
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == want {
			n++
		}
	}
	return n
}

// median is the median of xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return slices.Sorted(slices.Values(xs))[len(xs)/2]
}
