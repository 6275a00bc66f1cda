// Command client-matrix runs third-party MCP clients against
// @modelcontextprotocol/server-everything directly and through mcpmux, in
// the modes of issue 36 (stdio; HTTP with the server at its own URL; HTTP
// with the server as mcpmux's child; that child per client), and prints
// the operations whose outcome differs: a table per mode and client.
//
// The clients: the Inspector CLI and the TypeScript SDK 1.x (Node, from
// e2e/node_modules, pinned in e2e/package-lock.json), the go-sdk and
// mcp-go (Go modules, pinned in this directory's go.mod). Each runs the
// same operations, each reduced to a short outcome (names, texts, error
// codes) that does not depend on timing; "direct" and "via" are compared
// outcome by outcome. See docs/clients.md.
//
// The Go clients run twice: pinned to MCP 2025-11-25, the newest version
// server-everything speaks, so that direct and via compare like with like;
// and as -latest, with their defaults, which is 2026-07-28 through mcpmux
// (tallied apart: some of what differs is the era's).
//
//	scripts/client-matrix/run [-clients inspector,ts-sdk,go-sdk,mcp-go,go-sdk-latest,mcp-go-latest] [-modes stdio,http-url,http-child,per-client] [-v] [-self]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A target is an MCP server as a client reaches it: a command over stdio
// or a Streamable HTTP URL.
type target struct {
	cmd []string
	url string
}

// A client runs the operations against a target and returns their
// outcomes by operation. A latest client speaks the newest protocol it
// has wherever it can: MCP 2026-07-28 with mcpmux, 2025-11-25 with
// server-everything, which has nothing newer; the others pin the version
// server-everything speaks (legacy), so that direct and via compare like
// with like.
type client struct {
	name   string
	run    func(ctx context.Context, t target, version string) (map[string]string, error)
	latest bool
}

// legacy is the newest protocol version server-everything speaks: the
// version the Go clients are pinned to (the Inspector CLI and the
// TypeScript SDK 1.x have nothing newer).
const legacy = "2025-11-25"

var (
	repo       string // the repository's root
	everything string // the server-everything binary
	mcpmuxBin  string
	verbose    bool
)

func main() {
	clients := flag.String("clients", "inspector,ts-sdk,go-sdk,mcp-go,go-sdk-latest,mcp-go-latest", "clients to run, comma-separated")
	modes := flag.String("modes", "stdio,http-url,http-child,per-client", "modes to run, comma-separated")
	flag.StringVar(&mcpmuxBin, "mcpmux", "", "mcpmux binary (default: built from the repository)")
	flag.BoolVar(&verbose, "v", false, "print every outcome, not only the differing ones")
	self := flag.Bool("self", false, "compare direct with direct (the server run twice, no mcpmux): what differs is timing noise")
	flag.Parse()

	wd, _ := os.Getwd()
	repo = findRepo(wd)
	everything = filepath.Join(repo, "e2e", "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(everything); err != nil {
		fail("server-everything is not installed: run `npm ci` in %s", filepath.Join(repo, "e2e"))
	}
	tmp, err := os.MkdirTemp("", "client-matrix-")
	if err != nil {
		fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	if mcpmuxBin == "" {
		mcpmuxBin = filepath.Join(tmp, "mcpmux")
		build := exec.Command("go", "build", "-o", mcpmuxBin, ".")
		build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fail("building mcpmux: %v", err)
		}
	}

	all := map[string]client{
		"inspector":     {"inspector", runInspector, false},
		"ts-sdk":        {"ts-sdk", runTSSDK, false},
		"go-sdk":        {"go-sdk", runGoSDK, false},
		"mcp-go":        {"mcp-go", runMCPGo, false},
		"go-sdk-latest": {"go-sdk-latest", runGoSDK, true},
		"mcp-go-latest": {"mcp-go-latest", runMCPGo, true},
	}
	var chosen []client
	for _, n := range strings.Split(*clients, ",") {
		c, ok := all[n]
		if !ok {
			fail("unknown client %q (inspector, ts-sdk, go-sdk, mcp-go, go-sdk-latest, mcp-go-latest)", n)
		}
		chosen = append(chosen, c)
	}

	fmt.Printf("%-11s %-13s %5s %5s  %s\n", "MODE", "CLIENT", "OPS", "DIFF", "OPERATIONS THAT DIFFER (direct → via)")
	var total, differ, latestTotal, latestDiffer int
	for _, mode := range strings.Split(*modes, ",") {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		var procs processes
		direct, via, err := setUp(ctx, &procs, tmp, mode)
		if err != nil {
			procs.stop()
			cancel()
			fail("%s: %v", mode, err)
		}
		if *self {
			if via, err = directAgain(ctx, &procs, mode, direct); err != nil {
				procs.stop()
				cancel()
				fail("%s: %v", mode, err)
			}
		}
		for _, c := range chosen {
			version := legacy
			if c.latest {
				version = ""
			}
			d, derr := c.run(ctx, direct, version)
			v, verr := c.run(ctx, via, version)
			if derr != nil || verr != nil {
				fmt.Printf("%-11s %-13s  failed: direct: %v; via: %v\n", mode, c.name, derr, verr)
				continue
			}
			ops, diffs := compare(d, v)
			if c.latest {
				latestTotal += ops
				latestDiffer += len(diffs)
			} else {
				total += ops
				differ += len(diffs)
			}
			fmt.Printf("%-11s %-13s %5d %5d  %s\n", mode, c.name, ops, len(diffs), strings.Join(diffs, "; "))
			if verbose {
				for _, op := range sortedKeys(d, v) {
					fmt.Printf("    %-40s direct %s\n    %-40s    via %s\n", op, d[op], "", v[op])
				}
			}
		}
		procs.stop()
		cancel()
	}
	fmt.Printf("\n%d operations compared, %d differ\n", total, differ)
	if latestTotal > 0 {
		era := "2026-07-28 through mcpmux, 2025-11-25 directly: what differs by era is expected, see docs/clients.md"
		if *self {
			era = "2025-11-25 both ways: server-everything has nothing newer"
		}
		fmt.Printf("latest protocol (%s): %d operations, %d differ\n", era, latestTotal, latestDiffer)
	}
}

// directAgain returns a second direct target of mode, for -self: the
// same command over stdio, another server-everything over HTTP.
func directAgain(ctx context.Context, procs *processes, mode string, direct target) (target, error) {
	if mode == "stdio" {
		return direct, nil
	}
	url, err := procs.everythingHTTP(ctx)
	return target{url: url}, err
}

// setUp starts what mode needs and returns the direct and the via target.
func setUp(ctx context.Context, procs *processes, tmp, mode string) (direct, via target, err error) {
	dir := filepath.Join(tmp, mode)
	server := fmt.Sprintf("name: x\nprefix: \"\"\ntool_command: %q\nargs: [\"stdio\"]\n", everything)
	switch mode {
	case "stdio":
		direct = target{cmd: []string{everything, "stdio"}}
		if err = writeConfig(dir, server); err != nil {
			return
		}
		via = target{cmd: []string{mcpmuxBin, "--config", dir}}
		return
	case "http-url":
		if direct.url, err = procs.everythingHTTP(ctx); err != nil {
			return
		}
		var own string
		if own, err = procs.everythingHTTP(ctx); err != nil {
			return
		}
		server = fmt.Sprintf("name: x\nprefix: \"\"\nurl: %s\n", own)
	case "http-child":
		if direct.url, err = procs.everythingHTTP(ctx); err != nil {
			return
		}
	case "per-client":
		if direct.url, err = procs.everythingHTTP(ctx); err != nil {
			return
		}
		server += "session: per-client\n"
	default:
		err = fmt.Errorf("unknown mode (stdio, http-url, http-child, per-client)")
		return
	}
	if err = writeConfig(dir, server); err != nil {
		return
	}
	via.url, err = procs.mcpmuxHTTP(ctx, dir)
	return
}

func writeConfig(dir, server string) error {
	if err := os.MkdirAll(filepath.Join(dir, "tool"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tool", "x.yaml"), []byte(server), 0o644)
}

// processes are the servers a mode started.
type processes struct{ cmds []*exec.Cmd }

func (p *processes) stop() {
	for _, c := range p.cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	p.cmds = nil
}

// start starts args and returns once a line of its output matches ready.
func (p *processes) start(ctx context.Context, env []string, ready string, args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // gone with the matrix
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmds = append(p.cmds, cmd)
	found := make(chan struct{})
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), ready) {
				once.Do(func() { close(found) })
			}
		}
	}()
	select {
	case <-found:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: no %q in its output", args[0], ready)
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("%s: no %q in its output within 2 minutes", args[0], ready)
	}
}

func (p *processes) everythingHTTP(ctx context.Context) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	if err := p.start(ctx, []string{fmt.Sprintf("PORT=%d", port)}, "listening on port", everything, "streamableHttp"); err != nil {
		return "", err
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port), nil
}

func (p *processes) mcpmuxHTTP(ctx context.Context, dir string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := p.start(ctx, nil, "servers started", mcpmuxBin, "--config", dir, "--http", addr); err != nil {
		return "", err
	}
	return "http://" + addr + "/mcp", nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// clock matches the times server-everything writes into what it makes
// (a resource "created at 12:44:38 PM").
var clock = regexp.MustCompile(`\b\d{1,2}:\d{2}:\d{2}( [AP]M)?\b`)

// compare returns how many operations ran and those whose outcome differs
// (times of day aside).
func compare(direct, via map[string]string) (int, []string) {
	var diffs []string
	keys := sortedKeys(direct, via)
	for _, op := range keys {
		if d, v := clock.ReplaceAllString(direct[op], "<time>"), clock.ReplaceAllString(via[op], "<time>"); d != v {
			diffs = append(diffs, fmt.Sprintf("%s: %s → %s", op, short(d), short(v)))
		}
	}
	return len(keys), diffs
}

func sortedKeys(ms ...map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func short(s string) string {
	if s == "" {
		s = "(none)"
	}
	if len(s) > 90 {
		return s[:87] + "..."
	}
	return s
}

func findRepo(dir string) string {
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/mcpmux/mcpmux\n") {
			return d
		}
	}
	fail("run it inside the mcpmux repository")
	return ""
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "client-matrix: "+format+"\n", args...)
	os.Exit(1)
}
