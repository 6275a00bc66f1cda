// Command bench is mcpmux's benchmark suite (issue 7). It builds mcpmux
// and a minimal fixture tool server, runs them as real processes on
// loopback, and prints each figure with its median, p99, the ratio it is
// judged by, the target and whether it was met. Every figure is a ratio
// inside one run, or an absolute bound, so a noisy machine moves both
// sides alike.
//
//	go run ./bench              full run (a few minutes)
//	go run ./bench -quick       smoke run (CI), well under a minute
//	go run ./bench -only latency,reload -json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// options shape a run; quick shrinks every loop.
type options struct {
	quick bool
}

// section is one group of figures.
type section struct {
	name string
	run  func(context.Context, *env, options) ([]row, error)
}

var sections = []section{
	{"latency", latency},
	{"hop", hop},
	{"seed", seedPattern},
	{"concurrency", concurrency},
	{"startup", startup},
	{"firstlist", firstList},
	{"catalog", catalog},
	{"lookup", lookup},
	{"reload", reload},
	{"limits", limits},
	{"replicas", replicas},
	{"journal", journalCost},
	{"toolsearch", toolSearch},
}

func main() {
	quick := flag.Bool("quick", false, "smoke run: few iterations, small sizes")
	asJSON := flag.Bool("json", false, "print the results as JSON instead of a Markdown table")
	profile := flag.String("profile", "", "write CPU and heap profiles of the mcpmux processes into `DIR`")
	muxEnv := flag.String("mux-env", "", "extra environment of the mcpmux processes, as space-separated `KEY=VALUE` (e.g. GOGC=400), for experiments")
	prebuilt := flag.String("mcpmux", "", "use this mcpmux `binary` instead of building the working tree (to compare versions)")
	only := flag.String("only", "", "comma-separated `sections` to run: "+names())
	tbxark := flag.String("tbxark", "", "hop and firstlist sections: also measure this TBXark/mcp-proxy `binary`, built from its own sources")
	flag.Parse()
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}
	for s := range want {
		if !slices.ContainsFunc(sections, func(x section) bool { return x.name == s }) {
			fmt.Fprintf(os.Stderr, "bench: unknown section %q (have %s)\n", s, names())
			os.Exit(2)
		}
	}

	start := time.Now()
	e, err := build(*prebuilt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer e.close()
	e.extraMuxEnv = strings.Fields(*muxEnv)
	e.tbxark = *tbxark
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		e.profile = *profile
	}
	opts := options{quick: *quick}
	// Interrupted, the running section fails and the temp dir is removed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rows []row
	failed := false
	for _, s := range sections {
		if len(want) > 0 && !want[s.name] || ctx.Err() != nil {
			continue
		}
		t := time.Now()
		fmt.Fprintf(os.Stderr, "== %s\n", s.name)
		r, err := s.run(ctx, e, opts)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", s.name, err)
			failed = true
		}
		fmt.Fprintf(os.Stderr, "   %s done in %v\n", s.name, time.Since(t).Round(time.Millisecond))
		rows = append(rows, r...)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"machine": machine(), "quick": *quick, "rows": rows})
	} else {
		fmt.Printf("Machine: %s. Run: %s, %s, took %v.\n\n", machine(), time.Now().UTC().Format("2006-01-02 15:04 UTC"), mode(*quick), time.Since(start).Round(time.Second))
		printTable(rows)
	}
	// Timings are reported, not asserted (a smoke run must not flake on a
	// slow machine); a broken run or a missed correctness figure fails.
	for _, r := range rows {
		if r.Check && r.Met != nil && !*r.Met {
			fmt.Fprintf(os.Stderr, "bench: correctness figure missed: %s: %s %s\n", r.Figure, r.Value, r.Note)
			failed = true
		}
	}
	if failed {
		e.close() // os.Exit skips the deferred one
		os.Exit(1)
	}
}

func names() string {
	var n []string
	for _, s := range sections {
		n = append(n, s.name)
	}
	return strings.Join(n, ", ")
}

func mode(quick bool) string {
	if quick {
		return "quick (smoke) mode"
	}
	return "full mode"
}

func printTable(rows []row) {
	fmt.Println("| Figure | Median | p99 | Value | Target | Met |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range rows {
		m := ""
		if r.Met != nil {
			m = "no"
			if *r.Met {
				m = "yes"
			}
		}
		fig := r.Figure
		if r.Note != "" {
			fig += " (" + r.Note + ")"
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", fig, r.Median, r.P99, r.Value, r.Target, m)
	}
}

// machine describes where the figures were taken.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %f kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.1f GB RAM", kb/1024/1024)
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = ", load " + strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("%d cores (%s)%s, %s %s/%s%s", runtime.NumCPU(), cpu, mem, runtime.Version(), runtime.GOOS, runtime.GOARCH, load)
}
