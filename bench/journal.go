package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// journalCost (issue 19): what the call journal costs a call. The same
// echo is called through two mcpmux processes over the same fixture, one
// writing a journal (mcpmux.yaml journal: {dir: ...}) and one not, in
// alternating batches, so that noise hits both alike.
func journalCost(ctx context.Context, e *env, o options) ([]row, error) {
	rounds, batch := 40, 250
	if o.quick {
		rounds, batch = 6, 100
	}
	off := e.configDir(server{name: "fx"})
	on := e.configDir(server{name: "fx"})
	journalDir := filepath.Join(on, "journal")
	if err := os.WriteFile(filepath.Join(on, "mcpmux.yaml"), fmt.Appendf(nil, "journal: {dir: %q}\n", journalDir), 0o644); err != nil {
		return nil, err
	}
	without, err := e.startMuxStdio(ctx, newClient(nil), off, e.muxEnv("journal-off")...)
	if err != nil {
		return nil, err
	}
	defer without.stop()
	with, err := e.startMuxStdio(ctx, newClient(nil), on, e.muxEnv("journal-on")...)
	if err != nil {
		return nil, err
	}
	defer with.stop()
	cpuOff, cpuOn := cpuTime(without.pid()), cpuTime(with.pid())
	d, v, err := alternate(ctx, rounds, batch, without.cs, "fx__echo", with.cs, "fx__echo")
	if err != nil {
		return nil, err
	}
	calls := len(d) + 200 // alternate's warm-up calls count for CPU too
	cpuOff, cpuOn = cpuTime(without.pid())-cpuOff, cpuTime(with.pid())-cpuOn
	r := ratioRow("Journal: call via mcpmux with a journal / without (stdio, echo)", d, v, 1.1, "go run ./bench -only journal")
	st, err := os.Stat(filepath.Join(journalDir, "_default.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("no journal written: %w", err)
	}
	r.Note += fmt.Sprintf("; median %+d µs per call; mcpmux CPU per call %d µs with, %d µs without; %d B per line",
		(v.median() - d.median()).Microseconds(), (cpuOn / time.Duration(calls)).Microseconds(), (cpuOff / time.Duration(calls)).Microseconds(), st.Size()/int64(calls))
	rows := []row{r}

	// A result of 16 KiB: the journal encodes what the client gets once
	// more, and writes it.
	big := strings.Repeat("journal ", 2048)
	d, v = nil, nil
	for r := range rounds / 4 {
		for _, side := range []struct {
			p   *proc
			out *samples
		}{{without, &d}, {with, &v}} {
			for i := range batch / 2 {
				text := fmt.Sprintf("%d/%d %s", r, i, big)
				t := time.Now()
				if err := echo(ctx, side.p.cs, "fx__echo", text); err != nil {
					return nil, err
				}
				*side.out = append(*side.out, time.Since(t))
			}
		}
	}
	r = ratioRow("Journal: call via mcpmux with a journal / without (stdio, echo of 16 KiB)", d, v, 1.1, "go run ./bench -only journal")
	r.Note += fmt.Sprintf("; median %+d µs per call", (v.median() - d.median()).Microseconds())
	return append(rows, r), nil
}
