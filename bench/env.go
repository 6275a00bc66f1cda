package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientVersion is the protocol every benchmark client speaks, direct and
// via mcpmux alike: mcpmux serves the stateful versions only, and the same
// handshake both ways keeps the comparison fair.
const clientVersion = "2025-11-25"

// env is one benchmark run's binaries and scratch space.
type env struct {
	dir     string // temp dir, removed at the end
	mcpmux  string // built mcpmux binary
	fixture string // built fixture binary
	n       int    // config dirs made so far
	profile string // if set, mcpmux processes write CPU and heap profiles here
	// extraMuxEnv is more environment for mcpmux processes (-mux-env).
	extraMuxEnv []string
	// tbxark is a TBXark/mcp-proxy binary to measure beside mcpmux in the
	// hop section (-tbxark); "" leaves it out.
	tbxark string
}

// muxEnv is the environment of an mcpmux process: with -profile, its CPU
// and heap profiles go to the profile dir under tag.
func (e *env) muxEnv(tag string) []string {
	if e.profile == "" {
		return nil
	}
	return []string{
		"MCPMUX_CPUPROFILE=" + filepath.Join(e.profile, tag+".cpu.pprof"),
		"MCPMUX_MEMPROFILE=" + filepath.Join(e.profile, tag+".heap.pprof"),
	}
}

// build compiles mcpmux (unless prebuilt names a binary to use instead)
// and the fixture into a temp dir.
func build(prebuilt string) (*env, error) {
	dir, err := os.MkdirTemp("", "mcpmux-bench-")
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir, mcpmux: filepath.Join(dir, "mcpmux"), fixture: filepath.Join(dir, "fixture")}
	pkgs := map[string]string{e.mcpmux: ".", e.fixture: "./bench/fixture"}
	if prebuilt != "" {
		if e.mcpmux, err = filepath.Abs(prebuilt); err != nil {
			return nil, err
		}
		pkgs = map[string]string{e.fixture: "./bench/fixture"}
	}
	for out, pkg := range pkgs {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go build %s: %w", pkg, err)
		}
	}
	return e, nil
}

func (e *env) close() { _ = os.RemoveAll(e.dir) }

// server is one tool file of a config dir.
type server struct {
	name  string
	tools int               // extra tools of the fixture
	env   map[string]string // more environment
	cmd   string            // command instead of the fixture
	args  []string
	// protocol pins the server's protocol (config key protocol:); ""
	// leaves the default, auto.
	protocol string
	yaml     string // more lines of the tool file
}

// configDir writes a fresh config dir with one tool file per server.
func (e *env) configDir(servers ...server) string {
	e.n++
	dir := filepath.Join(e.dir, fmt.Sprintf("config%d", e.n))
	if err := os.MkdirAll(filepath.Join(dir, "tool"), 0o755); err != nil {
		panic(err)
	}
	for _, s := range servers {
		e.writeTool(dir, s)
	}
	return dir
}

// toolYAML is the tool file of s.
func (e *env) toolYAML(s server) []byte {
	var b bytes.Buffer
	cmd := e.fixture
	if s.cmd != "" {
		cmd = s.cmd
	}
	fmt.Fprintf(&b, "name: %s\ntool_command: %s\n", s.name, cmd)
	if len(s.args) > 0 {
		fmt.Fprintf(&b, "args: [%s]\n", strings.Join(quoteAll(s.args), ", "))
	}
	if s.protocol != "" {
		fmt.Fprintf(&b, "protocol: %q\n", s.protocol)
	}
	if s.tools > 0 || len(s.env) > 0 {
		b.WriteString("env:\n")
		if s.tools > 0 {
			fmt.Fprintf(&b, "  FIXTURE_TOOLS: %q\n", fmt.Sprint(s.tools))
		}
		for k, v := range s.env {
			fmt.Fprintf(&b, "  %s: %q\n", k, v)
		}
	}
	b.WriteString(s.yaml)
	return b.Bytes()
}

// writeTool saves s's tool file the way editors do: write a temp file,
// then rename it over the old one.
func (e *env) writeTool(dir string, s server) {
	path := filepath.Join(dir, "tool", s.name+".yaml")
	tmp := filepath.Join(dir, "."+s.name+".tmp")
	if err := os.WriteFile(tmp, e.toolYAML(s), 0o644); err != nil {
		panic(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		panic(err)
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func removeTool(dir, name string) {
	if err := os.Remove(filepath.Join(dir, "tool", name+".yaml")); err != nil {
		panic(err)
	}
}

// proc is a running mcpmux or fixture with a client session to it.
type proc struct {
	cmd *exec.Cmd
	cs  *mcp.ClientSession // stdio session; nil for HTTP
	url string             // MCP endpoint for HTTP
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop ends the session and the process group.
func (p *proc) stop() {
	if p.cs != nil {
		_ = p.cs.Close()
	}
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 {
		s.b.Reset()
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func command(path string, extraEnv []string, args ...string) (*exec.Cmd, *syncBuffer) {
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), extraEnv...)
	buf := &syncBuffer{}
	cmd.Stderr = buf
	return cmd, buf
}

// newClient returns a go-sdk client; onListChanged may be nil.
func newClient(onListChanged func()) *mcp.Client {
	opts := &mcp.ClientOptions{}
	if onListChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { onListChanged() }
	}
	return mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, opts)
}

// connectStdio starts path with args as a stdio MCP server and connects.
func connectStdio(ctx context.Context, c *mcp.Client, path string, extraEnv []string, args ...string) (*proc, *syncBuffer, error) {
	cmd, stderr := command(path, extraEnv, args...)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: clientVersion})
	if err != nil {
		return nil, stderr, fmt.Errorf("connecting to %s: %w; stderr: %s", filepath.Base(path), err, tail(stderr.String()))
	}
	return &proc{cmd: cmd, cs: cs}, stderr, nil
}

// startMuxStdio runs mcpmux on stdio over a config dir.
func (e *env) startMuxStdio(ctx context.Context, c *mcp.Client, dir string, extraEnv ...string) (*proc, error) {
	p, _, err := connectStdio(ctx, c, e.mcpmux, slices.Concat(e.extraMuxEnv, extraEnv), "--config", dir, "--log-level", "error", "--no-watch")
	return p, err
}

// startMuxHTTP runs mcpmux --http on a free loopback port and waits for
// /healthz to report it ready.
func (e *env) startMuxHTTP(dir string, watch bool, extraEnv ...string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"--http", addr, "--config", dir, "--log-level", "error"}
	if !watch {
		args = append(args, "--no-watch")
	}
	cmd, stderr := command(e.mcpmux, slices.Concat(e.extraMuxEnv, extraEnv), args...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, url: "http://" + addr + "/mcp"}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ready(addr) {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("mcpmux --http not ready within 60s; stderr: %s", tail(stderr.String()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startFixtureHTTP runs the fixture on Streamable HTTP.
func (e *env) startFixtureHTTP(args ...string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd, stderr := command(e.fixture, nil, append([]string{"-http", addr}, args...)...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, url: "http://" + addr + "/"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("fixture -http not up; stderr: %s", tail(stderr.String()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// connectHTTP opens a client session to a Streamable HTTP endpoint.
func connectHTTP(ctx context.Context, c *mcp.Client, url string, hc *http.Client) (*mcp.ClientSession, error) {
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: clientVersion})
}

// httpClient is one client's own HTTP client with enough idle connections
// that concurrent requests of a session do not reconnect.
func httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}
}

func ready(addr string) bool {
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var h struct {
		Ready bool `json:"ready"`
	}
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&h) == nil && h.Ready
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// echo calls an echo tool and checks the answer.
func echo(ctx context.Context, cs *mcp.ClientSession, tool, text string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("isError: %s", resultText(res))
	}
	if got := resultText(res); got != text {
		return fmt.Errorf("wrong answer %q, want %q", got, text)
	}
	return nil
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// countTools lists every page of a session's tools.
func countTools(ctx context.Context, cs *mcp.ClientSession) (int, error) {
	n := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// rss reads VmRSS and VmHWM of a process, in MB.
func rss(pid int) (cur, peak float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kb); err == nil {
			cur = kb / 1024
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %f kB", &kb); err == nil {
			peak = kb / 1024
		}
	}
	if cur == 0 {
		return 0, 0, errors.New("no VmRSS in /proc status")
	}
	return cur, peak, nil
}

// cpuTime is the user+system CPU time a process has used so far.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}

func tail(s string) string {
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return strings.TrimSpace(s)
}
