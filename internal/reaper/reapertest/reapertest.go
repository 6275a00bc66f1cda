// Package reapertest serves the tests of packages whose code starts
// mcpmux's child reaper.
package reapertest

import (
	"os"
	"testing"

	"github.com/mcpmux/mcpmux/internal/reaper"
)

// Main is the TestMain of such a package: the reaper is started as its
// own binary with reaper.Command, which in tests is the test binary
// itself, so run so it is the reaper instead of the tests.
func Main(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == reaper.Command {
		os.Exit(reaper.Run(os.Stdin, os.Stderr))
	}
	os.Exit(m.Run())
}
