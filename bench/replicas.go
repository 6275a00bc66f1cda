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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/deploy/haproxy"
)

// replicas (docs/scaling.md): 30 HTTP clients calling echo through
// Debian's haproxy, running the shipped deploy/haproxy/haproxy.cfg, in
// front of one mcpmux replica, of three, and of three stateless ones; and
// 30 more on one replica without haproxy, for the cost of the extra hop. On a machine with few cores the replicas share them: the
// figures show the overhead of a balancer and more processes, not the
// gain of more machines.
func replicas(ctx context.Context, e *env, o options) (_ []row, err error) {
	var stops []func()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		return []row{{Figure: "Replicas behind haproxy", Value: "not run: haproxy is not installed (apt-get install haproxy)"}}, nil
	}
	clients, calls, rounds := 30, 120, 5
	if o.quick {
		calls, rounds = 20, 1
	}
	dir := e.configDir(server{name: "fx"})
	const cmd = "go run ./bench -only replicas"

	// Every setup runs at once, idle but for its turn; the rounds take
	// turns, so that the noise of a shared machine hits all alike.
	start := func(n int, stateless bool) ([]string, error) {
		var addrs []string
		for i := range n {
			extra := e.muxEnv(fmt.Sprintf("replicas-%v-%d", stateless, i))
			if stateless {
				extra = append(extra, "--stateless")
			}
			p, err := e.startMuxHTTP(dir, false, extra...)
			if err != nil {
				return nil, err
			}
			stops = append(stops, p.stop)
			addrs = append(addrs, strings.TrimSuffix(strings.TrimPrefix(p.url, "http://"), "/mcp"))
		}
		return addrs, nil
	}
	balance := func(addrs []string) (string, error) {
		lb, url, err := startHAProxy(bin, e.dir, addrs)
		if err != nil {
			return "", err
		}
		stops = append(stops, lb.stop)
		return url, nil
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	stateful, err := start(3, false)
	if err != nil {
		return nil, err
	}
	stateless, err := start(3, true)
	if err != nil {
		return nil, err
	}
	type setup struct {
		name     string
		url      string
		replicas int
		ss       []*mcp.ClientSession
		lat      samples
		elapsed  time.Duration
	}
	setups := []*setup{
		{name: "1 replica, no balancer", url: "http://" + stateful[0] + "/mcp", replicas: 1},
		{name: "haproxy + 1 replica", replicas: 1},
		{name: "haproxy + 3 replicas", replicas: 3},
		{name: "haproxy + 3 stateless replicas", replicas: 3},
	}
	for i, addrs := range map[int][]string{1: stateful[:1], 2: stateful, 3: stateless} {
		if setups[i].url, err = balance(addrs); err != nil {
			return nil, err
		}
	}
	for _, s := range setups {
		if s.ss, err = sessions(ctx, s.url, clients); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		defer closeAll(s.ss)
		_, _, _, _ = load(ctx, s.ss, "fx__echo", 5) // warm-up
	}
	var errs int64
	var firstErr error
	for range rounds {
		for _, s := range setups {
			lat, el, n, first := load(ctx, s.ss, "fx__echo", calls)
			s.lat, s.elapsed, errs = append(s.lat, lat...), s.elapsed+el, errs+n
			if firstErr == nil {
				firstErr = first
			}
		}
	}
	var rows []row
	total := float64(clients * calls * rounds)
	base := total / setups[1].elapsed.Seconds()
	for _, s := range setups {
		rate := total / s.elapsed.Seconds()
		note := ""
		if s.replicas == 3 {
			note = fmt.Sprintf("%.2f× haproxy + 1 replica", rate/base)
		}
		rows = append(rows, row{
			Figure:  fmt.Sprintf("Replicas, %d HTTP clients × %d calls of echo: %s", clients, calls*rounds, s.name),
			Median:  ms(s.lat.median()),
			P99:     ms(s.lat.p99()),
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
