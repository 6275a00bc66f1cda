package checks

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// There is no Docker engine where the tests run, so the Dockerfile is
// checked by BuildKit's own parser and the lint rules it applies while
// parsing (those of "docker build --check" that need no build), plus the
// rules below: the promises docs/operations.md makes about the images, and a few
// of hadolint's.

// dockerfile parses ./Dockerfile into its stages and global ARGs, failing
// the test on a parse error or a lint warning.
func dockerfile(t *testing.T) ([]instructions.Stage, map[string]string) {
	t.Helper()
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile:%d: %s", w.Location.Start.Line, w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, url, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		t.Errorf("Dockerfile:%d: %s: %s (%s)", line, rule, msg, url)
	}})
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	args := map[string]string{}
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			args[kv.Key] = kv.ValueString()
		}
	}
	return stages, args
}

func stage(t *testing.T, stages []instructions.Stage, name string) *instructions.Stage {
	t.Helper()
	for i := range stages {
		if stages[i].Name == name {
			return &stages[i]
		}
	}
	t.Fatalf("Dockerfile has no stage %q", name)
	return nil
}

// stageCommands returns the stage's commands of type C.
func stageCommands[C instructions.Command](s *instructions.Stage) []C {
	var out []C
	for _, c := range s.Commands {
		if cc, ok := c.(C); ok {
			out = append(out, cc)
		}
	}
	return out
}

func TestDockerfileStages(t *testing.T) {
	stages, args := dockerfile(t)
	if last := stages[len(stages)-1].Name; last != "full" {
		t.Errorf("the last stage (docker build's default target) is %q, want full", last)
	}

	builder := stage(t, stages, "builder")
	ranScript := false
	for _, r := range stageCommands[*instructions.RunCommand](builder) {
		ranScript = ranScript || strings.Contains(strings.Join(r.CmdLine, " "), "scripts/build.sh /out")
	}
	if !ranScript {
		t.Error("the builder stage does not run scripts/build.sh /out")
	}
	script, err := os.ReadFile(filepath.Join("scripts", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0 go build -trimpath", "-X ${stamp}.version=", "-X ${stamp}.commit=", "stamp=github.com/mcpmux/mcpmux/cli\n"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("scripts/build.sh lacks %q", want)
		}
	}

	for _, name := range []string{"slim", "full"} {
		t.Run(name, func(t *testing.T) {
			s := stage(t, stages, name)
			copied := false
			for _, c := range stageCommands[*instructions.CopyCommand](s) {
				copied = copied || (c.From == "builder" && slices.Contains(c.SourcePaths, "/out/mcpmux"))
			}
			if !copied {
				t.Error("does not copy /out/mcpmux from the builder stage")
			}

			users := stageCommands[*instructions.UserCommand](s)
			if len(users) == 0 {
				t.Error("no USER: the container would run as root")
			} else if u := users[len(users)-1].User; u == "root" || u == "0" || strings.HasPrefix(u, "0:") {
				t.Errorf("USER %s: the container must not run as root", u)
			}

			exposes := stageCommands[*instructions.ExposeCommand](s)
			if len(exposes) == 0 || !slices.Contains(exposes[len(exposes)-1].Ports, "8080") {
				t.Error("does not EXPOSE 8080")
			}

			env := map[string]string{}
			for _, e := range stageCommands[*instructions.EnvCommand](s) {
				for _, kv := range e.Env {
					env[kv.Key] = kv.Value
				}
			}
			if env["MCPMUX_CONFIG"] != "/config" {
				t.Errorf("MCPMUX_CONFIG = %q, want /config", env["MCPMUX_CONFIG"])
			}

			hcs := stageCommands[*instructions.HealthCheckCommand](s)
			if len(hcs) == 0 {
				t.Fatal("no HEALTHCHECK")
			}
			test := hcs[len(hcs)-1].Health.Test
			// Exec form: there may be no shell. No URL: the default is the
			// served port's, and MCPMUX_HEALTHCHECK_URL can change it.
			if len(test) != 3 || test[0] != "CMD" || path.Base(test[1]) != "mcpmux" || test[2] != "healthcheck" {
				t.Errorf("HEALTHCHECK %q: want [CMD mcpmux healthcheck]", test)
			}
			// buildah and podman before mid-2024 (Debian 12's, Ubuntu
			// 24.04's) fail the build on --start-interval.
			if hcs[len(hcs)-1].Health.StartInterval != 0 {
				t.Error("HEALTHCHECK --start-interval: buildah and podman of Debian 12 and Ubuntu 24.04 cannot build it")
			}
			out, errOut, _ := runRelease(t, nil, "healthcheck", "-h")
			if !strings.Contains(out+errOut, "else http://127.0.0.1:8080/healthz") {
				t.Errorf("mcpmux healthcheck does not probe the image's port 8080 by default:\n%s%s", out, errOut)
			}

			// The served command: mcpmux with --http on all interfaces, so
			// that mcpmux refuses to start without MCPMUX_TOKEN.
			eps := stageCommands[*instructions.EntrypointCommand](s)
			cmds := stageCommands[*instructions.CmdCommand](s)
			if len(eps) == 0 || len(cmds) == 0 {
				t.Fatal("needs both ENTRYPOINT (mcpmux) and CMD (its serving flags)")
			}
			ep, cmd := eps[len(eps)-1], cmds[len(cmds)-1]
			if ep.PrependShell || cmd.PrependShell {
				t.Error("ENTRYPOINT and CMD must be in exec form, so that signals reach mcpmux")
			}
			if path.Base(ep.CmdLine[len(ep.CmdLine)-1]) != "mcpmux" {
				t.Errorf("ENTRYPOINT %q does not end in mcpmux", ep.CmdLine)
			}
			if strings.Join(cmd.CmdLine, " ") != "--http 0.0.0.0:8080" {
				t.Errorf("CMD %q, want --http 0.0.0.0:8080", cmd.CmdLine)
			}
		})
	}

	full := stage(t, stages, "full")
	var installs string
	for _, r := range stageCommands[*instructions.RunCommand](full) {
		installs += strings.Join(r.CmdLine, " ")
	}
	for _, pkg := range []string{"chromium", "tini"} {
		if !regexp.MustCompile(`apt-get install[^&]*\s` + pkg + `\b`).MatchString(installs) {
			t.Errorf("the full stage does not apt-get install %s", pkg)
		}
	}
	if base := expandArgs(full.BaseName, args); !strings.HasPrefix(base, "node:") {
		t.Errorf("the full stage is based on %q, want a node image (for npx)", base)
	}
	// The shipped playwright server drives Debian's chromium.
	if pw, err := os.ReadFile(filepath.Join("config", "tool", "playwright.yaml")); err != nil || !strings.Contains(string(pw), "--executable-path=/usr/bin/chromium") {
		t.Errorf("config/tool/playwright.yaml no longer runs /usr/bin/chromium (%v)", err)
	}
}

// TestDockerfileHygiene applies rules of hadolint and of docker build
// --check that BuildKit's parser does not.
func TestDockerfileHygiene(t *testing.T) {
	stages, args := dockerfile(t)
	ignore := dockerignore(t)
	names := map[string]bool{}
	for _, s := range stages {
		names[s.Name] = true
		// DL3006, DL3007: a base image names its tag, and not latest.
		if base := expandArgs(s.BaseName, args); !names[base] {
			_, tag, ok := strings.Cut(path.Base(base), ":")
			if !ok || tag == "" || tag == "latest" {
				t.Errorf("stage %s: base image %q has no pinned tag", s.Name, base)
			}
		}
		for _, c := range s.Commands {
			switch c := c.(type) {
			case *instructions.RunCommand:
				line := strings.Join(c.CmdLine, " ")
				if !strings.Contains(line, "apt-get install") {
					continue
				}
				// DL3014, DL3015, DL3009.
				for _, want := range []string{"apt-get update", "-y", "--no-install-recommends", "rm -rf /var/lib/apt/lists/*"} {
					if !strings.Contains(line, want) {
						t.Errorf("stage %s: RUN apt-get install without %q in the same RUN", s.Name, want)
					}
				}
			case *instructions.EnvCommand:
				for _, kv := range c.Env {
					if strings.Contains(kv.Key, "TOKEN") {
						t.Errorf("stage %s: ENV %s: a token must come from docker run -e, not the image", s.Name, kv.Key)
					}
				}
			case *instructions.ArgCommand:
				for _, kv := range c.Args {
					if strings.Contains(kv.Key, "TOKEN") {
						t.Errorf("stage %s: ARG %s: build args are kept in the image history", s.Name, kv.Key)
					}
				}
			case *instructions.CopyCommand:
				if c.From != "" {
					continue
				}
				// A source that is missing, or that .dockerignore leaves out
				// of the build context, fails the build.
				for _, src := range c.SourcePaths {
					if _, err := os.Stat(src); err != nil {
						t.Errorf("stage %s: COPY %s: %v", s.Name, src, err)
					}
					if src == "." {
						continue
					}
					if ignored, _ := ignore.MatchesOrParentMatches(path.Clean(src)); ignored {
						t.Errorf("stage %s: COPY %s: .dockerignore leaves it out of the build context", s.Name, src)
					}
				}
			}
		}
	}
	// The builder's "COPY . ." must bring what go build needs.
	for _, need := range []string{"go.mod", "go.sum", "main.go", "scripts/build.sh", "config/load.go"} {
		if ignored, _ := ignore.MatchesOrParentMatches(need); ignored {
			t.Errorf(".dockerignore leaves %s out of the build context", need)
		}
	}
}

func dockerignore(t *testing.T) *patternmatcher.PatternMatcher {
	t.Helper()
	f, err := os.Open(".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return pm
}

// expandArgs replaces ${NAME} and $NAME with the global ARGs' defaults.
func expandArgs(s string, args map[string]string) string {
	return os.Expand(s, func(k string) string { return args[k] })
}
