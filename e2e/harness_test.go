package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// testTimeout bounds every wait in these tests; nothing should come near it.
const testTimeout = 60 * time.Second

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// longTestContext bounds a test whose work grows with the machine's speed
// and load (tens of processes, hundreds of calls) by the test binary's own
// deadline (go test -timeout), less a minute so that the test fails with
// its own diagnostics rather than the binary's panic; testTimeout bounds
// one wait, not such a test.
func longTestContext(t *testing.T) context.Context {
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * testTimeout)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-testTimeout))
	t.Cleanup(cancel)
	return ctx
}

// writeConfig creates a config directory: keys are paths inside it
// ("mcpmux.yaml", "tool/x.yaml"). (A name of its own for the many tests
// that use it.)
var writeConfig = testkit.WriteDir

// fixture returns the YAML of a tool server running a fixture mode, plus
// extra lines.
func fixture(name, mode string, extra ...string) string {
	return fmt.Sprintf("name: %s\ntool_command: %q\nenv:\n  %s: %s\n%s\n", name, fixtureBin, fixtureEnv, mode, strings.Join(extra, "\n"))
}

// npmServer returns the YAML of a tool server run from e2e/node_modules.
func npmServer(t *testing.T, name, bin string, args ...string) string {
	t.Helper()
	path := filepath.Join(nodeBin, bin)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not installed: run `npm ci` in e2e/ (.ci/run does)", path)
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	return fmt.Sprintf("name: %s\ntool_command: %q\nargs: [%s]\n", name, path, strings.Join(quoted, ", "))
}

// logBuffer collects a process's stderr and lets tests wait for a line.
type logBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	wake chan struct{}
}

func newLogBuffer() *logBuffer { return &logBuffer{wake: make(chan struct{})} }

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.wake)
	l.wake = make(chan struct{})
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor waits until the log matches re and returns the first submatch
// (or the match).
func (l *logBuffer) waitFor(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	m := l.waitForN(t, re, 1)
	return m[len(m)-1]
}

// waitForN waits until re matches n times and returns the nth match's
// submatches.
func (l *logBuffer) waitForN(t *testing.T, re *regexp.Regexp, n int) []string {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		l.mu.Lock()
		ms := re.FindAllStringSubmatch(l.buf.String(), n)
		wake := l.wake
		l.mu.Unlock()
		if len(ms) >= n {
			return ms[n-1]
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("timed out waiting for log %q (x%d); log so far:\n%s", re, n, l.String())
		}
	}
}

// process is a running mcpmux.
type process struct {
	cmd    *exec.Cmd
	logs   *logBuffer
	url    string // HTTP mode: base URL of /mcp
	exited chan struct{}
	err    error // exit status, after exited is closed
}

func (p *process) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(testTimeout):
		t.Fatalf("mcpmux did not exit; log:\n%s", p.logs.String())
		return nil
	}
}

// dumpLogsOnFailure shows mcpmux's log when a test fails.
func (p *process) dumpLogsOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcpmux log:\n%s", p.logs.String())
		}
	})
}

// startProcess starts cmd, a program a test runs beside mcpmux (haproxy,
// Jaeger), with its output in logs; exited is closed when it exits. It is
// stopped when the test ends (SIGTERM, killed after testTimeout), and its
// log, under name, shown if the test failed.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) (logs *logBuffer, exited <-chan struct{}) {
	t.Helper()
	logs = newLogBuffer()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(testTimeout):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, logs.String())
		}
	})
	return logs, done
}

// freePort returns a loopback port free a moment ago, for a program that
// must be told its port.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startStdio runs mcpmux over stdio with a go-sdk client connected to it.
func startStdio(t *testing.T, dir string, args ...string) (*mcp.ClientSession, *process) {
	t.Helper()
	return startStdioWith(t, dir, nil, args...)
}

func startStdioWith(t *testing.T, dir string, opts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *process) {
	t.Helper()
	return startStdioSession(t, dir, opts, legacySession, args...)
}

// startStdioSession is startStdioWith with the client's session options
// (its protocol version).
func startStdioSession(t *testing.T, dir string, opts *mcp.ClientOptions, sessOpts *mcp.ClientSessionOptions, args ...string) (*mcp.ClientSession, *process) {
	t.Helper()
	// Own pipes instead of mcp.CommandTransport, so that the test, not the
	// transport, waits for the process and sees how it exited.
	p, stdin, stdout := startStdioPipes(t, dir, args...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).Connect(testContext(t), &mcp.IOTransport{Reader: stdout, Writer: stdin}, sessOpts)
	if err != nil {
		t.Fatalf("connecting to mcpmux over stdio: %v\nlog:\n%s", err, p.logs.String())
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, p
}

// startStdioPipes runs mcpmux on stdio with args and returns it with the
// pipes of its stdin and stdout, for a client of the test's own. When the
// test ends its stdin is closed, and it is killed if it has not exited
// within testTimeout.
func startStdioPipes(t *testing.T, dir string, args ...string) (*process, io.WriteCloser, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(mcpmuxBin, append([]string{"--config", dir, "--log-level", "debug"}, args...)...)
	p := &process{cmd: cmd, logs: newLogBuffer(), exited: make(chan struct{})}
	cmd.Stderr = p.logs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.dumpLogsOnFailure(t)
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(testTimeout):
			_ = cmd.Process.Kill()
		}
	})
	return p, stdin, stdout
}

// legacySession pins a go-sdk client to 2025-11-25, the protocol of
// sessions that most tests are about: a v1.8.0 client would otherwise
// negotiate 2026-07-28 with mcpmux (see sessionless_test.go for those).
var legacySession = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

var urlRE = regexp.MustCompile(`url=(http://[^ ]+)/mcp`)

// startHTTP runs mcpmux --http on a free loopback port and returns once it
// listens.
func startHTTP(t *testing.T, dir string, args ...string) *process {
	t.Helper()
	return runHTTP(t, "mcpmux", exec.Command(mcpmuxBin, append([]string{"--config", dir, "--http", "127.0.0.1:0", "--log-level", "debug"}, args...)...))
}

// runHTTP starts cmd, an mcpmux --http on port 0, and returns once it
// listens. It is stopped when the test ends, or with the test binary should
// a panic skip the cleanups; its log, under name, is shown if the test
// fails.
func runHTTP(t *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	p := &process{cmd: cmd, logs: newLogBuffer(), exited: make(chan struct{})}
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.logs.String())
		}
	})
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(testTimeout):
			_ = cmd.Process.Kill()
		}
	})
	p.url = p.logs.waitFor(t, urlRE)
	return p
}

// connectHTTP connects a client to path (e.g. "/mcp") of an HTTP mcpmux.
func connectHTTP(t *testing.T, p *process, path string, header http.Header) (*mcp.ClientSession, error) {
	t.Helper()
	return connectURL(t, p.url+path, header)
}

// connectURL connects a client to a Streamable HTTP endpoint, sending
// header with every request.
func connectURL(t *testing.T, endpoint string, header http.Header) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: testkit.HeaderTransport{Header: header}}
	transport := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(testContext(t), transport, legacySession)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(testContext(t), nil) {
		if err != nil {
			t.Fatalf("listing tools: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(testContext(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v (mcpmux must always answer with a result)", name, err)
	}
	return res
}

// resultText is the text items of a result, one a line.
var resultText = testkit.Text

// runMcpmux runs a one-shot command (check, tools, version) and returns
// its stdout, stderr and exit code.
func runMcpmux(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runMcpmuxIn(t, testContext(t), args...)
}

// runMcpmuxIn is runMcpmux bounded by ctx: longTestContext for a command
// whose work grows with the machine's load (tools probing a server).
func runMcpmuxIn(t *testing.T, ctx context.Context, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, mcpmuxBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running mcpmux %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// alive reports whether a process exists (and is not a zombie).
func alive(pid int) bool {
	_, ok := readProc(pid)
	return ok
}

// waitGone polls until pid no longer runs.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("process %d has ended", pid), func() bool { return !alive(pid) })
}

var _ io.Writer = (*logBuffer)(nil)

// readAll reads an HTTP response body.
func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(bufio.NewReader(r))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// setenv sets an environment variable for the mcpmux processes the test
// starts, until it ends. Unlike t.Setenv it allows t.Parallel: each such
// variable is named for the one test that sets it, so no other test sees
// it change.
func setenv(t *testing.T, key, value string) {
	t.Helper()
	if err := os.Setenv(key, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Unsetenv(key) })
}
