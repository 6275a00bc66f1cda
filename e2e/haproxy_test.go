package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/deploy/haproxy"
	"github.com/mcpmux/mcpmux/internal/testkit"
)

// Replicas behind a load balancer (docs/scaling.md): three mcpmux
// replicas on loopback behind Debian's haproxy, running the shipped
// deploy/haproxy/haproxy.cfg with its servers filled in.

// replicaEnv names each replica in its environment, which its children
// inherit: a tool server's env tool then tells which replica served a call.
const replicaEnv = "E2E_REPLICA" // not MCPMUX_: those are not passed to children

// replicasConfig has a per-client server (a browser stands for it) and a
// shared one, both echo fixtures.
func replicasConfig(t *testing.T) string {
	return writeConfig(t, map[string]string{
		"tool/browser.yaml": fixture("browser", "echo", "session: per-client"),
		"tool/shared.yaml":  fixture("shared", "echo"),
	})
}

type replica struct {
	*process
	name string
	addr string // host:port
}

// startReplicas runs n mcpmux --http replicas of one config directory.
func startReplicas(t *testing.T, dir string, n int, args ...string) []*replica {
	t.Helper()
	var out []*replica
	for i := range n {
		name := fmt.Sprintf("r%d", i+1)
		cmd := exec.Command(mcpmuxBin, append([]string{"--config", dir, "--http", "127.0.0.1:0"}, args...)...)
		cmd.Env = append(os.Environ(), replicaEnv+"="+name)
		p := runHTTP(t, "replica "+name, cmd)
		out = append(out, &replica{process: p, name: name, addr: strings.TrimPrefix(p.url, "http://")})
	}
	for _, r := range out {
		r.logs.waitFor(t, regexp.MustCompile(`servers started`))
	}
	return out
}

// startHAProxy runs haproxy with the shipped config, changed by edits, in
// front of replicas and returns the URL of /mcp through it, and its log.
func startHAProxy(t *testing.T, replicas []*replica, edits ...func(cfg string) string) (string, *logBuffer) {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not installed: apt-get install haproxy (.ci/run does)")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var addrs []string
	for _, r := range replicas {
		addrs = append(addrs, r.addr)
	}
	cfg, err := haproxy.Config(addr, addrs)
	if err != nil {
		t.Fatal(err)
	}
	for _, edit := range edits {
		cfg = edit(cfg)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", path) // -db: foreground
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logs, exited := startProcess(t, "haproxy", cmd)
	// Serving once a request through it reaches a replica.
	testkit.Eventually(t, "haproxy serves", func() bool {
		select {
		case <-exited:
			t.Fatalf("haproxy exited:\n%s", logs.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return "http://" + addr + "/mcp", logs
}

// retried counts the requests of an haproxy log that were sent again
// (the retries field of its HTTP log lines: actconn/feconn/beconn/
// srv_conn/retries, "+N" when redispatched).
func retried(log string) int {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		fields := strings.Fields(line)
		for i, f := range fields {
			if f == "----" && i+1 < len(fields) {
				if c := strings.Split(fields[i+1], "/"); len(c) == 5 && c[4] != "0" {
					n++
				}
			}
		}
	}
	return n
}

// lbClient is a client of mcpmux through the load balancer, with the
// replica and the per-client child its session landed on.
type lbClient struct {
	url     string
	cs      *mcp.ClientSession
	replica string // its replica's name
	child   string // pid of its per-client child
	errs    []error
}

// connect starts a session and learns where it landed.
func (c *lbClient) connect(ctx context.Context) error {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-lb", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.url}, legacySession)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	c.cs = cs
	if c.replica, err = c.text(ctx, "browser__env", map[string]any{"name": replicaEnv}); err != nil {
		return err
	}
	c.child, err = c.text(ctx, "browser__pid", nil)
	return err
}

func (c *lbClient) text(ctx context.Context, tool string, args any) (string, error) {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("%s: isError: %s", tool, resultText(res))
	}
	return resultText(res), nil
}

// check calls the per-client server once: it must answer from the
// session's replica and child.
func (c *lbClient) check(ctx context.Context) error {
	replica, err := c.text(ctx, "browser__env", map[string]any{"name": replicaEnv})
	if err != nil {
		return err
	}
	child, err := c.text(ctx, "browser__pid", nil)
	if err != nil {
		return err
	}
	if replica != c.replica || child != c.child {
		return fmt.Errorf("session moved: replica %s child %s, was %s child %s", replica, child, c.replica, c.child)
	}
	return nil
}

// Sessions behind HAProxy: each of 30 clients (each with its own
// per-client child) stays on one replica; one replica, stopped with
// SIGTERM while its clients' calls run, drains: /healthz answers 503, a
// new session is refused with 503, the running calls finish, it exits 0
// and its children go; its clients get 404 for their session through the
// balancer and start a new one on another replica; no other client sees
// an error.
func TestHAProxySessions(t *testing.T) {
	t.Parallel()
	// 30 sessions, 40 processes, 300 calls: minutes on a busy machine.
	ctx := longTestContext(t)
	dl, _ := ctx.Deadline()
	// The test, not the clock, ends the drained replica's running calls
	// (the release file below), and checks what the drain does meanwhile;
	// a grace period that could run out first, on a slow machine, would
	// fail them (TestFaultGracefulShutdown covers the grace running out).
	grace := time.Until(dl).Round(time.Second) + testTimeout
	replicas := startReplicas(t, replicasConfig(t), 3, "--shutdown-grace", grace.String())
	url, _ := startHAProxy(t, replicas)

	const nClients = 30
	clients := make([]*lbClient, nClients)
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = &lbClient{url: url}
		wg.Go(func() {
			if err := clients[i].connect(ctx); err != nil {
				clients[i].errs = append(clients[i].errs, err)
			}
		})
	}
	wg.Wait()
	byReplica := map[string][]*lbClient{}
	for i, c := range clients {
		if len(c.errs) > 0 {
			t.Fatalf("client %d: %v", i, c.errs)
		}
		t.Cleanup(func() { _ = c.cs.Close() })
		byReplica[c.replica] = append(byReplica[c.replica], c)
	}
	for _, r := range replicas {
		t.Logf("replica %s: %d sessions", r.name, len(byReplica[r.name]))
		if len(byReplica[r.name]) == 0 {
			t.Errorf("replica %s got no session: new sessions are not balanced", r.name)
		}
	}
	for range 3 {
		for _, c := range clients {
			wg.Go(func() {
				if err := c.check(ctx); err != nil {
					c.errs = append(c.errs, err)
				}
			})
		}
		wg.Wait()
	}
	for i, c := range clients {
		if len(c.errs) > 0 {
			t.Fatalf("client %d on %s: %v", i, c.replica, c.errs)
		}
	}

	// Drain the replica with the most sessions while each of its clients
	// has a call running; the others go on calling.
	victim := replicas[0]
	for _, r := range replicas {
		if len(byReplica[r.name]) > len(byReplica[victim.name]) {
			victim = r
		}
	}
	leaving := byReplica[victim.name]
	if len(leaving) == 0 {
		t.Fatal("no replica has a session")
	}
	release := filepath.Join(t.TempDir(), "release")
	running := make([]chan error, len(leaving))
	for i, c := range leaving {
		running[i] = make(chan error, 1)
		go func() {
			text, err := c.text(ctx, "browser__block", map[string]any{"file": release})
			if err == nil && text != "unblocked" {
				err = fmt.Errorf("block answered %q", text)
			}
			running[i] <- err
		}()
	}
	victim.logs.waitForN(t, regexp.MustCompile(regexp.QuoteMeta("block: waiting for "+release)), len(leaving))

	stay := make(chan struct{})
	var staying sync.WaitGroup
	for _, c := range clients {
		if c.replica == victim.name {
			continue
		}
		staying.Go(func() {
			for range 200 { // bounded: the drain ends well before
				select {
				case <-stay:
					return
				default:
				}
				if err := c.check(ctx); err != nil {
					c.errs = append(c.errs, err)
					return
				}
			}
		})
	}

	if err := victim.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	victim.logs.waitFor(t, regexp.MustCompile(`draining`))
	resp, err := http.Get("http://" + victim.addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz of the draining replica: %v (its listener must stay open)", err)
	}
	body := readAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"draining"`) {
		t.Errorf("/healthz of the draining replica: %d %s, want 503 draining", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("POST", victim.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":"late","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body = readAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"id":"late"`) || !strings.Contains(body, "shutting down") {
		t.Errorf("a new session on the draining replica: %d %s, want 503 with a JSON-RPC error", resp.StatusCode, body)
	}
	// New sessions through the balancer meanwhile land elsewhere: one
	// sent to the draining replica gets 503 there, and HAProxy sends it
	// on.
	for range 5 {
		late := &lbClient{url: url}
		if err := late.connect(ctx); err != nil || late.replica == victim.name {
			t.Errorf("a new session through haproxy while %s drains: on %q, %v", victim.name, late.replica, err)
		}
		if late.cs != nil {
			_ = late.cs.Close()
		}
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, ch := range running {
		if err := <-ch; err != nil {
			t.Errorf("running call %d of the drained replica: %v, want its answer", i, err)
		}
	}
	if err := victim.wait(t); err != nil {
		t.Errorf("the drained replica exited with %v, want 0", err)
	}
	for _, c := range leaving {
		var pid int
		fmt.Sscan(c.child, &pid)
		waitGone(t, pid)
	}
	close(stay)
	staying.Wait()

	// The drained replica's clients: the next call fails on their lost
	// session, and a new session lands on another replica.
	var mu sync.Mutex
	seen := map[string]int{}
	for _, c := range leaving {
		wg.Go(func() {
			err := c.check(ctx)
			mu.Lock()
			seen[fmt.Sprint(errors.Is(err, mcp.ErrSessionMissing))]++
			mu.Unlock()
			if err == nil {
				c.errs = append(c.errs, errors.New("a call of a session whose replica is gone succeeded"))
				return
			}
			if !errors.Is(err, mcp.ErrSessionMissing) && !errors.Is(err, mcp.ErrConnectionClosed) {
				c.errs = append(c.errs, fmt.Errorf("the lost session's call: %w, want session missing (404)", err))
				return
			}
			_ = c.cs.Close()
			if err := c.connect(ctx); err != nil {
				c.errs = append(c.errs, fmt.Errorf("re-initializing: %w", err))
				return
			}
			if c.replica == victim.name {
				c.errs = append(c.errs, errors.New("the new session landed on the drained replica"))
			}
			for range 3 {
				if err := c.check(ctx); err != nil {
					c.errs = append(c.errs, err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("the %d clients of the drained replica: session missing (404): %d, connection closed: %d", len(leaving), seen["true"], seen["false"])
	for i, c := range clients {
		if len(c.errs) > 0 {
			t.Errorf("client %d (now on %s): %v", i, c.replica, c.errs)
		}
	}
}

// Stateless replicas behind the same haproxy.cfg: nothing sticks, so one
// client's calls go round the replicas; the per-client server is refused
// with a file error. A replica that drains while a call of its runs
// refuses initialize with 503, which haproxy sends on to another replica,
// so that no client sees it; the call finishes, and once the replica is
// gone no call fails (haproxy retries the refused connections elsewhere).
func TestHAProxyStateless(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	replicas := startReplicas(t, replicasConfig(t), 3, "--stateless")
	for _, r := range replicas {
		r.logs.waitFor(t, regexp.MustCompile(`browser.yaml.*per-client.*needs client sessions`))
	}
	// Health checks every hour, not every 2 s: a check that lands just
	// after the drain begins takes the replica out before any new session
	// reaches it (CI, under load), and the refusal this test is about is
	// then never made. Which replica a request reaches is haproxy's
	// rotation, not the clock's.
	slowChecks := func(cfg string) string {
		out := strings.ReplaceAll(cfg, "check inter 2s", "check inter 1h")
		if out == cfg {
			t.Fatal("haproxy.cfg has no \"check inter 2s\" to stretch")
		}
		return out
	}
	url, lbLog := startHAProxy(t, replicas, slowChecks)
	connect := func(endpoint string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-lb", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, legacySession)
		if err != nil {
			t.Fatalf("connecting to %s: %v", endpoint, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	cs := connect(url)
	served := func(n int) map[string]int {
		count := map[string]int{}
		for range n {
			res := callTool(t, cs, "shared__env", map[string]any{"name": replicaEnv})
			if res.IsError {
				t.Fatalf("call: %s", resultText(res))
			}
			count[resultText(res)]++
		}
		return count
	}
	count := served(30)
	t.Logf("30 calls of one stateless client: %v", count)
	for _, r := range replicas {
		if count[r.name] == 0 {
			t.Errorf("replica %s served none of 30 calls: %v", r.name, count)
		}
	}

	victim := replicas[0]
	release := filepath.Join(t.TempDir(), "release")
	running := callAsync(connect(victim.url+"/mcp"), "shared__block", map[string]any{"file": release})
	victim.logs.waitFor(t, regexp.MustCompile(`block: waiting for`))
	if err := victim.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	victim.logs.waitFor(t, regexp.MustCompile(`draining: `))
	before := retried(lbLog.String())
	for i := range 10 {
		late := connect(url)
		if res := callTool(t, late, "shared__echo", map[string]any{"text": "late"}); res.IsError {
			t.Errorf("client %d, connected while %s drains: %s", i, victim.name, resultText(res))
		}
	}
	n := retried(lbLog.String()) - before
	t.Logf("requests haproxy sent again while %s drained: %d", victim.name, n)
	if n == 0 {
		t.Errorf("no request was sent again while %s drained: its initialize refusals did not reach haproxy's retry", victim.name)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := receive(t, running, "the draining replica's running call"); res.IsError || resultText(res) != "unblocked" {
		t.Errorf("the draining replica's running call: %q (isError %v)", resultText(res), res.IsError)
	}
	if err := victim.wait(t); err != nil {
		t.Errorf("the stopped replica exited with %v, want 0", err)
	}
	count = served(20)
	if count[victim.name] != 0 || count[replicas[1].name] == 0 || count[replicas[2].name] == 0 {
		t.Errorf("20 calls after %s stopped: %v, want the other two only", victim.name, count)
	}
}

// --stateless is a mode of the HTTP front: without --http it is refused
// before anything starts.
func TestStatelessNeedsHTTP(t *testing.T) {
	t.Parallel()
	_, stderr, code := runMcpmux(t, "--config", replicasConfig(t), "--stateless")
	if code != 2 || !strings.Contains(stderr, "--stateless applies to --http") {
		t.Errorf("mcpmux --stateless on stdio: exit %d, %q; want 2 and why", code, stderr)
	}
}
