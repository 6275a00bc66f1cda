package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

// Containers of the built images, run with buildah as root.
// scripts/image-test.sh builds the images and points buildah at their
// storage (CONTAINERS_STORAGE_CONF). A container runs with chroot
// isolation: it has no namespaces of its own, so it shares this machine's
// network (tests reach it on loopback, and it reaches their pages) and its
// process table (tests see its processes in /proc and tell them apart by
// their root directory).

// imageUnderTest returns the image the environment variable names, or
// skips the test.
func imageUnderTest(t *testing.T, env string) string {
	t.Helper()
	image := os.Getenv(env)
	if image == "" {
		t.Skipf("%s is not set: scripts/image-test.sh builds the images and runs this test", env)
	}
	return image
}

// imageSpec is what docker run takes from an image's config.
type imageSpec struct {
	User        string
	Entrypoint  []string
	Cmd         []string
	Healthcheck *struct{ Test []string }
}

// container is a buildah working container of an image.
type container struct {
	name     string
	root     string // its root file system, mounted
	spec     imageSpec
	dev, ino uint64 // of root: a process with this root directory runs in the container
	// user, if set, is the "uid:gid" processes run as instead of the
	// image's USER (a pod's runAsUser and runAsGroup).
	user string
}

// newContainer creates a container of image, removed when the test ends
// with anything still running in it.
func newContainer(t *testing.T, image string) *container {
	t.Helper()
	c := &container{name: strings.TrimSpace(buildah(t, "from", "--pull=never", image))}
	t.Cleanup(func() {
		c.kill()
		if out, err := exec.Command("buildah", "rm", c.name).CombinedOutput(); err != nil {
			t.Errorf("buildah rm %s: %v\n%s", c.name, err, out)
		}
	})
	c.root = strings.TrimSpace(buildah(t, "mount", c.name))
	var st syscall.Stat_t
	if err := syscall.Stat(c.root, &st); err != nil {
		t.Fatal(err)
	}
	c.dev, c.ino = uint64(st.Dev), uint64(st.Ino)
	var inspect struct {
		Docker struct {
			Config imageSpec `json:"config"`
		}
	}
	if err := json.Unmarshal([]byte(buildah(t, "inspect", "--type", "image", image)), &inspect); err != nil {
		t.Fatalf("buildah inspect %s: %v", image, err)
	}
	c.spec = inspect.Docker.Config
	return c
}

// buildah runs a buildah command and returns its output.
func buildah(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(testContext(t), "buildah", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("buildah %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// command runs argv in the container as docker run runs a process there:
// as the image's user, in its working directory, with its environment
// plus env. volumes are bind mounts, "HOST:CONTAINER[:ro]".
func (c *container) command(ctx context.Context, env, volumes []string, argv ...string) *exec.Cmd {
	// Without a PID namespace the full image's tini is not PID 1; as a
	// subreaper it still inherits the orphans it would reap there.
	args := []string{"run", "--isolation", "chroot", "--env", "TINI_SUBREAPER=1"}
	if c.user != "" {
		args = append(args, "--user", c.user)
	}
	for _, kv := range env {
		args = append(args, "--env", kv)
	}
	for _, v := range volumes {
		args = append(args, "--volume", v)
	}
	args = append(append(args, c.name, "--"), argv...)
	return exec.CommandContext(ctx, "buildah", args...)
}

// run runs argv in the container to its end: its output and exit code.
func (c *container) run(t *testing.T, env []string, argv ...string) (string, int) {
	t.Helper()
	return c.runWith(t, env, nil, argv...)
}

// runWith is run with volumes mounted.
func (c *container) runWith(t *testing.T, env, volumes []string, argv ...string) (string, int) {
	t.Helper()
	out, err := c.command(testContext(t), env, volumes, argv...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("buildah run %q: %v\n%s", argv, err, out)
	}
	return string(out), 0
}

// uid is the user the container runs as: its user, else the image's USER,
// looked up in its /etc/passwd when it is a name.
func (c *container) uid(t *testing.T) int {
	t.Helper()
	user, _, _ := strings.Cut(cmp.Or(c.user, c.spec.User), ":")
	if user == "" {
		t.Fatal("the image has no USER: it runs as root")
	}
	if n, err := strconv.Atoi(user); err == nil {
		return n
	}
	passwd, err := os.ReadFile(filepath.Join(c.root, "etc", "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(passwd)) {
		if f := strings.Split(line, ":"); len(f) > 2 && f[0] == user {
			if n, err := strconv.Atoi(f[2]); err == nil {
				return n
			}
		}
	}
	t.Fatalf("USER %s is not in the image's /etc/passwd", user)
	return 0
}

// containerProc is a process running in a container.
type containerProc struct {
	pid, ppid int
	uids      []int // real, effective, saved and filesystem user ids
	cmdline   string
}

// processes returns the processes running in the container: those whose
// root directory is its root file system.
func (c *container) processes() []containerProc {
	entries, _ := os.ReadDir("/proc")
	var out []containerProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d/root/", pid), &st) != nil || uint64(st.Dev) != c.dev || uint64(st.Ino) != c.ino {
			continue
		}
		p, ok := readProc(pid)
		uids := procUIDs(pid)
		if !ok || len(uids) == 0 { // gone meanwhile
			continue
		}
		out = append(out, containerProc{pid: pid, ppid: p.ppid, uids: uids, cmdline: cmdline(pid)})
	}
	return out
}

// procUIDs reads the Uid line of /proc/PID/status.
func procUIDs(pid int) []int {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var uids []int
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			for _, f := range strings.Fields(rest) {
				n, _ := strconv.Atoi(f)
				uids = append(uids, n)
			}
		}
	}
	return uids
}

// kill ends whatever still runs in the container.
func (c *container) kill() {
	for _, p := range c.processes() {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// checkRunsAs fails the test unless every process in the container runs
// as uid, and uid is not root.
func (c *container) checkRunsAs(t *testing.T, uid int) []containerProc {
	t.Helper()
	if uid == 0 {
		t.Errorf("the image runs as root")
	}
	procs := c.processes()
	if len(procs) == 0 {
		t.Fatal("no process runs in the container")
	}
	for _, p := range procs {
		if slices.ContainsFunc(p.uids, func(u int) bool { return u != uid }) {
			t.Errorf("process %d (%s) runs as user %v, want %d", p.pid, p.cmdline, p.uids, uid)
		}
	}
	return procs
}

// served is the image's server, running in a container.
type served struct {
	c      *container
	cmd    *exec.Cmd
	logs   *logBuffer
	exited chan struct{}
	err    error  // exit status, after exited is closed
	url    string // http://127.0.0.1:PORT, where it listens
}

// Log lines of mcpmux, in its text format or in JSON (--log-format json).
var (
	servingRE        = regexp.MustCompile(`"?msg"?[=:]"serving MCP over Streamable HTTP"[ ,]"?url"?[=:]"?http://[^\s"]*:(\d+)/mcp`)
	serversStartedRE = regexp.MustCompile(`"?msg"?[=:]"servers started"[ ,]"?up"?[=:](\d+)[ ,]"?configured"?[=:](\d+)`)
)

// serve runs the image's command as "docker run -e MCPMUX_TOKEN=... IMAGE"
// does (see start).
func (c *container) serve(t *testing.T, token string, volumes ...string) *served {
	t.Helper()
	return c.start(t, c.spec.Cmd, []string{"MCPMUX_TOKEN=" + token}, volumes)
}

// start runs the image's entrypoint with args in the container, with the
// port of their --http address replaced by 0 (8080 may be taken on this
// shared network), and returns once mcpmux listens.
func (c *container) start(t *testing.T, args, env, volumes []string) *served {
	t.Helper()
	cmd := slices.Clone(args)
	i := slices.Index(cmd, "--http")
	if i < 0 || i+1 == len(cmd) {
		t.Fatalf("the arguments %q have no --http ADDR", args)
	}
	host, _, err := net.SplitHostPort(cmd[i+1])
	if err != nil {
		t.Fatalf("the arguments %q: %v", args, err)
	}
	cmd[i+1] = net.JoinHostPort(host, "0")

	s := &served{c: c, logs: newLogBuffer(), exited: make(chan struct{})}
	s.cmd = c.command(context.Background(), env, volumes, append(slices.Clone(c.spec.Entrypoint), cmd...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container log:\n%s", s.logs.String())
		}
		c.kill()
		select {
		case <-s.exited:
		case <-time.After(testTimeout):
			t.Errorf("buildah run %s did not end", c.name)
		}
	})
	s.url = "http://127.0.0.1:" + s.logs.waitFor(t, servingRE)
	return s
}

// waitServersStarted waits until mcpmux has started every server and
// returns how many are up and how many are configured.
func (s *served) waitServersStarted(t *testing.T) (up, configured int) {
	t.Helper()
	m := s.logs.waitForN(t, serversStartedRE, 1)
	up, _ = strconv.Atoi(m[1])
	configured, _ = strconv.Atoi(m[2])
	return up, configured
}

// healthcheck runs the image's HEALTHCHECK command in the container, as
// Docker does, pointed at the port served: its output and exit code.
func (s *served) healthcheck(t *testing.T) (string, int) {
	t.Helper()
	hc := s.c.spec.Healthcheck
	if hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" {
		t.Fatalf("HEALTHCHECK %v: want CMD and a command", hc)
	}
	return s.c.run(t, []string{"MCPMUX_HEALTHCHECK_URL=" + s.url + "/healthz"}, hc.Test[1:]...)
}

// stop stops the container as docker stop does, with SIGTERM to its first
// process, and fails the test unless mcpmux exits cleanly and leaves no
// process behind in the container.
func (s *served) stop(t *testing.T) {
	t.Helper()
	procs := s.c.processes()
	// buildah-chroot-exec starts the container's first process and waits.
	var first []int
	for _, p := range procs {
		if i := slices.IndexFunc(procs, func(q containerProc) bool { return q.pid == p.ppid }); i >= 0 && strings.HasPrefix(procs[i].cmdline, "buildah-chroot-exec ") {
			first = append(first, p.pid)
		}
	}
	if len(first) != 1 {
		t.Fatalf("cannot tell the container's first process among %v", procs)
	}
	if err := syscall.Kill(first[0], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(testTimeout):
		t.Fatal("the container did not stop on SIGTERM")
	}
	if s.err != nil {
		t.Errorf("the container exited with %v on SIGTERM, want 0", s.err)
	}
	testkit.Await(t, "no process is left in the container after it stopped", s.c.processes, func(left []containerProc) bool { return len(left) == 0 })
}
