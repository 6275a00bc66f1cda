package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpmux/mcpmux/deploy/haproxy"
)

// replicas (docs/scaling.md): 30 HTTP clients calling echo through
// Debian's haproxy, running the shipped deploy/haproxy/haproxy.cfg, in
// front of one mcpmux replica, then three, then three stateless ones; and
// the same clients on one replica without haproxy, for the cost of the
// extra hop. On a machine with few cores the replicas share them: the
// figures show the overhead of a balancer and more processes, not the
// gain of more machines.
func replicas(ctx context.Context, e *env, o options) ([]row, error) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		return []row{{Figure: "Replicas behind haproxy", Value: "not run: haproxy is not installed (apt-get install haproxy)"}}, nil
	}
	clients, calls, rounds := 30, 200, 3
	if o.quick {
		calls, rounds = 20, 1
	}
	dir := e.configDir(server{name: "fx"})
	const cmd = "go run ./bench -only replicas"

	type setup struct {
		name      string
		replicas  int
		stateless bool
		balancer  bool
	}
	setups := []setup{
		{"1 replica, no balancer", 1, false, false},
		{"haproxy + 1 replica", 1, false, true},
		{"haproxy + 3 replicas", 3, false, true},
		{"haproxy + 3 stateless replicas", 3, true, true},
	}
	rates := map[string]float64{}
	var rows []row
	var errs int64
	var firstErr error
	for _, s := range setups {
		rate, lat, n, first, err := func() (float64, samples, int64, error, error) {
			var addrs []string
			for i := range s.replicas {
				var extra []string
				if s.stateless {
					extra = append(extra, "--stateless")
				}
				p, err := e.startMuxHTTP(dir, false, append(e.muxEnv(fmt.Sprintf("replicas-%d-%d", s.replicas, i)), extra...)...)
				if err != nil {
					return 0, nil, 0, nil, err
				}
				defer p.stop()
				addrs = append(addrs, strings.TrimSuffix(strings.TrimPrefix(p.url, "http://"), "/mcp"))
			}
			url := "http://" + addrs[0] + "/mcp"
			if s.balancer {
				lb, lbURL, err := startHAProxy(bin, e.dir, addrs)
				if err != nil {
					return 0, nil, 0, nil, err
				}
				defer lb.stop()
				url = lbURL
			}
			ss, err := sessions(ctx, url, clients)
			if err != nil {
				return 0, nil, 0, nil, err
			}
			defer closeAll(ss)
			_, _, _, _ = load(ctx, ss, "fx__echo", 5) // warm-up
			var all samples
			var elapsed time.Duration
			var nerr int64
			var first error
			for range rounds {
				lat, el, n, f := load(ctx, ss, "fx__echo", calls)
				all, elapsed, nerr = append(all, lat...), elapsed+el, nerr+n
				if first == nil {
					first = f
				}
			}
			return float64(clients*calls*rounds) / elapsed.Seconds(), all, nerr, first, nil
		}()
		if err != nil {
			return rows, fmt.Errorf("%s: %w", s.name, err)
		}
		rates[s.name] = rate
		errs += n
		if firstErr == nil {
			firstErr = first
		}
		note := ""
		if base := rates[setups[1].name]; s.replicas == 3 && base > 0 {
			note = fmt.Sprintf("%.2f× haproxy + 1 replica", rate/base)
		}
		rows = append(rows, row{
			Figure:  fmt.Sprintf("Replicas, %d HTTP clients × %d calls of echo: %s", clients, calls*rounds, s.name),
			Median:  ms(lat.median()),
			P99:     ms(lat.p99()),
			Value:   fmt.Sprintf("%.0f calls/s", rate),
			Command: cmd,
			Note:    note,
		})
	}
	errNote := ""
	if firstErr != nil {
		errNote = "first: " + firstErr.Error()
	}
	rows = append(rows, row{
		Figure: "Replicas: calls without a correct answer",
		Value:  fmt.Sprint(errs), Target: "0", Met: met(errs == 0), Command: cmd, Check: true, Note: errNote,
	})
	return rows, nil
}

// startHAProxy runs haproxy with the shipped config in front of addrs and
// returns it with the URL of /mcp through it, once it serves.
func startHAProxy(bin, tmp string, addrs []string) (*proc, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	cfg, err := haproxy.Config(addr, addrs)
	if err != nil {
		return nil, "", err
	}
	// Access logs of every call would cost the balancer more than the
	// calls: the figures are about forwarding.
	cfg = strings.Replace(cfg, "    option httplog\n", "    option dontlog-normal\n    option httplog\n", 1)
	path := filepath.Join(tmp, "haproxy-"+strings.ReplaceAll(addr, ":", "-")+".cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, "", err
	}
	cmd, stderr := command(bin, nil, "-db", "-f", path)
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	p := &proc{cmd: cmd}
	for deadline := time.Now().Add(20 * time.Second); !ready(addr); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			p.stop()
			return nil, "", errors.New("haproxy not serving within 20s: " + tail(stderr.String()))
		}
	}
	return p, "http://" + addr + "/mcp", nil
}
