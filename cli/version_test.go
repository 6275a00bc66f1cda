package cli

import (
	"bytes"
	"regexp"
	"testing"
)

func TestVersionPrintsStampedVersionAndCommit(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v1.4.0", "0123456789abcdef0123456789abcdef01234567"
	var out, errb bytes.Buffer
	if code := Run([]string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := regexp.MustCompile(`^mcpmux v1\.4\.0 \(commit 0123456789ab, go1\.\d+[^)]*\)\n$`)
	if !want.MatchString(out.String()) {
		t.Errorf("version = %q, want %v", out.String(), want)
	}
	if code := Run([]string{"version", "extra"}, &out, &errb); code != 2 {
		t.Errorf("version extra: exit %d, want 2", code)
	}
}

func TestVersionUnstampedFallsBack(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "", ""
	// A test binary has no module version nor vcs stamp.
	if got := versionLine(); !regexp.MustCompile(`^mcpmux dev \(commit unknown, go1\.`).MatchString(got) {
		t.Errorf("unstamped version = %q", got)
	}
}

func TestPseudoVersionRev(t *testing.T) {
	for v, want := range map[string]string{
		"v0.0.0-20261203081955-9825454abcde":        "9825454abcde",
		"v0.0.0-20261203081955-9825454abcde+dirty":  "9825454abcde",
		"v1.2.4-0.20261203081955-9825454abcde":      "9825454abcde",
		"v1.3.0-rc.1.0.20261203081955-9825454abcde": "9825454abcde",
		"v1.2.3":                               "",
		"v1.2.3-rc.1":                          "",
		"(devel)":                              "",
		"v0.0.0-2026120308195-9825454abcde":    "",
		"v0.0.0-20261203081955-9825454abcdeXX": "",
	} {
		if got := pseudoVersionRev(v); got != want {
			t.Errorf("pseudoVersionRev(%q) = %q, want %q", v, got, want)
		}
	}
}
