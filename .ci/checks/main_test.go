// Package checks holds the repository checks that .ci/run runs besides the
// product's tests: the Dockerfile's lint and the promises the docs make
// about the images, the Kubernetes manifests and HAProxy configs of
// deploy/, the links and quotes of the README and docs/, and the release
// binary that scripts/build.sh makes.
//
// They are a module of their own (.ci/go.mod) so that the product's go.mod
// carries none of their dependencies (BuildKit's Dockerfile parser,
// k8s.io/api), and they test mcpmux through its release binary (the
// Kubernetes check uses its config loader too). Run them from .ci/:
//
//	go test ./checks/                                   builds the binary with scripts/build.sh
//	MCPMUX_RELEASE_BINARY=dist/mcpmux go test ./checks/   checks that one (.ci/run does)
package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

var (
	// releaseBin is the release binary under test.
	releaseBin string
	// stampedBuild is set when TestMain built releaseBin itself, with the
	// version and commit below.
	stampedBuild bool
)

const (
	testVersion = "v9.8.7-test"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if bin := os.Getenv("MCPMUX_RELEASE_BINARY"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		releaseBin = abs
	}
	// The checks read the repository's files by their paths from its root.
	if err := os.Chdir(filepath.Join("..", "..")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if releaseBin == "" {
		dir, err := os.MkdirTemp("", "mcpmux-checks-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		build := exec.Command("bash", filepath.Join("scripts", "build.sh"), dir)
		build.Env = append(os.Environ(), "VERSION="+testVersion, "COMMIT="+testCommit)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "scripts/build.sh:", err)
			return 1
		}
		releaseBin, stampedBuild = filepath.Join(dir, "mcpmux"), true
	}
	return m.Run()
}

// runRelease runs the release binary with args (and env added to the
// environment) and returns its stdout, stderr and exit code.
func runRelease(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, releaseBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("mcpmux %q: %v", args, err)
	}
	return out.String(), errb.String(), code
}
