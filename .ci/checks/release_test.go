package checks

import (
	"debug/elf"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseBinary checks what scripts/build.sh makes (the Dockerfile's
// builder step): a static binary whose "version" names its version and
// commit.
func TestReleaseBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("checks a Linux ELF binary")
	}
	bin := releaseBin
	want := regexp.MustCompile(`^mcpmux \S+ \(commit [0-9a-f]{7,12}(\+dirty)?, go1\.[^)]*\)\n$`)
	if stampedBuild {
		want = regexp.MustCompile(`^mcpmux ` + regexp.QuoteMeta(testVersion) + ` \(commit ` + testCommit[:12] + `, go1\.[^)]*\)\n$`)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is dynamically linked (%v): build with CGO_ENABLED=0", bin, p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", bin, libs)
	}

	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	if !want.Match(out) {
		t.Errorf("%s version = %q, want %v", bin, out, want)
	}
}

// TestInstallPath keeps the README's go install line right: the main
// package is the module's root.
func TestInstallPath(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(mod), "\n")
	module := strings.TrimSpace(strings.TrimPrefix(first, "module"))
	// go install <module>@<version> refuses a go.mod with replace or
	// exclude directives.
	for _, l := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "replace" || f[0] == "exclude") {
			t.Errorf("go.mod has %q: go install %s@latest would refuse it", l, module)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if line := "go install " + module + "@latest"; !strings.Contains(string(readme), line) {
		t.Errorf("README.md lacks %q", line)
	}
}
