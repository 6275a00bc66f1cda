// Package e2e tests the built mcpmux binary from the outside, as a user
// would: config files on disk, real child processes, real MCP clients over
// stdio and Streamable HTTP.
package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var (
	// mcpmuxBin is the binary under test, built by TestMain.
	mcpmuxBin string
	// fixtureBin is this test binary, which serves as fixture servers.
	fixtureBin string
	// nodeBin holds the npm servers pinned in package.json.
	nodeBin string
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fixtureEnv); mode != "" {
		os.Exit(runFixture(mode))
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		// The quick subset (README): these tests build mcpmux, install npm
		// servers and run real processes, minutes on a small machine.
		fmt.Println("e2e: skipped with -short: the end-to-end tests need the built binary and the npm servers")
		return 0
	}
	tmp, err := os.MkdirTemp("", "mcpmux-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	mcpmuxBin = filepath.Join(tmp, "mcpmux")
	args := []string{"build", "-o", mcpmuxBin}
	if raceEnabled {
		args = append(args, "-race")
		// A race-enabled binary sleeps a second before it exits 0, for
		// other threads to finish their reports; every mcpmux and fixture
		// these tests stop would. Races are still reported (exit 66).
		if err := os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	build := exec.Command("go", append(args, "..")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building mcpmux:", err)
		return 1
	}
	if fixtureBin, err = os.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	nodeBin, _ = filepath.Abs(filepath.Join("node_modules", ".bin"))
	if err := installNpmServers(); err != nil {
		fmt.Fprintln(os.Stderr, "installing the npm servers of the e2e tests:", err)
		return 1
	}
	return m.Run()
}

// installNpmServers runs `npm ci` when node_modules does not match
// package-lock.json, so that `go test ./...` works on a fresh clone. npm
// records the installed lockfile in node_modules/.package-lock.json.
func installNpmServers() error {
	want, err := os.ReadFile("package-lock.json")
	if err != nil {
		return err
	}
	if have, err := os.ReadFile(filepath.Join("node_modules", ".package-lock.json")); err == nil && sameLock(have, want) {
		return nil
	}
	fmt.Fprintln(os.Stderr, "e2e: installing pinned npm servers (npm ci)...")
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// sameLock compares the packages of two lockfiles; the hidden one npm
// writes lacks the root entry, so compare package by package. An optional
// package npm did not install (a native build for another platform) is
// no difference: counting it one ran npm ci on every run.
func sameLock(installed, lock []byte) bool {
	type pkg struct {
		Version  string
		Optional bool
	}
	var a, b struct {
		Packages map[string]pkg `json:"packages"`
	}
	if json.Unmarshal(installed, &a) != nil || json.Unmarshal(lock, &b) != nil {
		return false
	}
	for path, p := range b.Packages {
		if path == "" {
			continue
		}
		have, ok := a.Packages[path]
		if !ok && p.Optional {
			continue
		}
		if have.Version != p.Version {
			return false
		}
	}
	return true
}
