package cli

import (
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"strings"
)

// version and commit are stamped by the release build (scripts/build.sh):
//
//	-ldflags "-X github.com/mcpmux/mcpmux/cli.version=v1.2.3 -X github.com/mcpmux/mcpmux/cli.commit=<full sha>"
//
// Unstamped builds fall back to what the Go toolchain recorded.
var version, commit string

// buildVersion is the stamped version; else the module version the go
// command recorded (the tag or pseudo-version of go install ...@latest, or
// of a build in a git checkout); else "dev".
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// buildCommit is the stamped commit; else the vcs.revision the go command
// recorded in a git checkout ("+dirty" if it had local changes); else the
// revision a pseudo-version names (go install ...@<branch or sha>); else
// "unknown" (go install ...@<tag>: the tag names the commit).
func buildCommit() string {
	if commit != "" {
		return shortCommit(commit)
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		rev = pseudoVersionRev(bi.Main.Version)
	}
	if rev == "" {
		return "unknown"
	}
	rev = shortCommit(rev)
	if modified {
		rev += "+dirty"
	}
	return rev
}

// pseudoVersionRE matches a Go pseudo-version (v0.0.0-20261203081955-9825454abcde,
// v1.2.4-0.2026..., v1.2.3-pre.0.2026...), capturing its revision.
var pseudoVersionRE = regexp.MustCompile(`^v\d+\.\d+\.\d+-(?:.*\.)?(?:0\.)?\d{14}-([0-9a-f]{12})(?:\+.*)?$`)

// pseudoVersionRev is the commit a pseudo-version was made from, or "".
func pseudoVersionRev(v string) string {
	if m := pseudoVersionRE.FindStringSubmatch(v); m != nil {
		return m[1]
	}
	return ""
}

// shortCommit keeps 12 hex digits of a commit, as Go's pseudo-versions do.
func shortCommit(c string) string {
	head, tail, _ := strings.Cut(c, "+")
	if len(head) > 12 {
		head = head[:12]
	}
	if tail != "" {
		return head + "+" + tail
	}
	return head
}

// versionLine is what "mcpmux version" prints.
func versionLine() string {
	goVersion := "unknown Go"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
	}
	return fmt.Sprintf("mcpmux %s (commit %s, %s)", buildVersion(), buildCommit(), goVersion)
}

func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", stdout, stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fmt.Fprintln(stdout, versionLine())
	return 0
}
