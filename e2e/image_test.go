package e2e

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/config"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// imageConfig lays out in a temporary directory what the Dockerfile's
// stage copies from the repository into /config, following COPY's rules
// (a directory source copies its contents), and returns that directory:
// the config a container of that image starts with.
func imageConfig(t *testing.T, stage string) string {
	t.Helper()
	root := t.TempDir()
	for _, c := range dockerfileStage(t, stage).Commands {
		cp, ok := c.(*instructions.CopyCommand)
		if !ok || cp.From != "" || !strings.HasPrefix(cp.DestPath, "/config/") {
			continue
		}
		dest := filepath.Join(root, strings.TrimPrefix(cp.DestPath, "/config/"))
		for _, src := range cp.SourcePaths {
			src = filepath.Join("..", src)
			info, err := os.Stat(src)
			if err != nil {
				t.Fatalf("COPY %s: %v", src, err)
			}
			if info.IsDir() {
				copyTree(t, src, dest)
				continue
			}
			to := dest
			if strings.HasSuffix(cp.DestPath, "/") {
				to = filepath.Join(dest, filepath.Base(src))
			}
			copyFile(t, src, to)
		}
	}
	return root
}

func copyTree(t *testing.T, src, dest string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		copyFile(t, p, filepath.Join(dest, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dest string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The slim image has no Node.js: its default config must run on the
// binary alone. mcpmux check starts every server of it.
func TestSlimImageConfigRuns(t *testing.T) {
	dir := imageConfig(t, "slim")
	out, errOut, code := runMcpmux(t, "check", "--config", dir)
	if code != 0 || !strings.Contains(out, "1 servers, 0 not up, 0 invalid files") {
		t.Fatalf("check of the slim image's config = %d\n%s\n%s", code, out, errOut)
	}
	if !regexpMatch(`(?m)^fetch\s+up\s+1\s+0\s+stdio`, out) {
		t.Errorf("the slim image's config does not serve the fetch tool:\n%s", out)
	}
}

// The full image's config is the shipped one: every file valid, every
// server there, and the files they name (cwd, playwright.json, the
// filesystem server's workspace) copied too. Starting its npx servers is
// the image build's own "mcpmux check".
func TestFullImageConfigIsTheShippedOne(t *testing.T) {
	dir := imageConfig(t, "full")
	snap, err := config.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) > 0 {
		t.Errorf("invalid files in the full image's config: %v", snap.Errors)
	}
	shipped, err := config.Load(filepath.Join("..", "config"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, s := range snap.Servers {
		got = append(got, s.Name)
	}
	for _, s := range shipped.Servers {
		want = append(want, s.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("full image serves %v, the shipped config %v", got, want)
	}
	for _, s := range snap.Servers {
		if s.Command != "npx" && s.Command != "mcpmux" {
			t.Errorf("server %s runs %q, which the full image does not have", s.Name, s.Command)
		}
	}
	// The image caches the npx packages its RUN finds with grep: each npx
	// server must name its package pinned to a version that grep finds.
	pinned := npxPinPattern(t)
	for _, s := range snap.Servers {
		if s.Command != "npx" {
			continue
		}
		i := slices.IndexFunc(s.Args, func(a string) bool { return !strings.HasPrefix(a, "-") })
		if i < 0 || !pinned.MatchString(s.Args[i]) {
			t.Errorf("server %s: npx args %q name no package@version that the image's npx cache step (%v) finds", s.Name, s.Args, pinned)
		}
	}
	for _, name := range []string{"playwright.json", "workspace"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the full image's config lacks %s: %v", name, err)
		}
	}
}

// Both images apply the shipped settings: mcpmux.yaml holds the rewrite
// rules, among them the refusal of Hugging Face dataset URLs that
// evaluations in CI rely on.
func TestImagesShipTheSettings(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "config", "mcpmux.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"slim", "full"} {
		dir := imageConfig(t, stage)
		got, err := os.ReadFile(filepath.Join(dir, "mcpmux.yaml"))
		if err != nil || string(got) != string(want) {
			t.Errorf("the %s image's /config/mcpmux.yaml is not the shipped one (%v)", stage, err)
			continue
		}
		snap, err := config.Load(dir, nil)
		if err != nil {
			t.Errorf("the %s image's config: %v", stage, err)
		} else if len(snap.Errors) > 0 || len(snap.Settings.Rewrite) == 0 {
			t.Errorf("the %s image's config: %v, %d rewrite rules", stage, snap.Errors, len(snap.Settings.Rewrite))
		}
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// imageCommand is the ENTRYPOINT and CMD of a Dockerfile stage.
func imageCommand(t *testing.T, stage string) []string {
	t.Helper()
	var entrypoint, cmd []string
	for _, c := range dockerfileStage(t, stage).Commands {
		switch c := c.(type) {
		case *instructions.EntrypointCommand:
			entrypoint = c.CmdLine
		case *instructions.CmdCommand:
			cmd = c.CmdLine
		}
	}
	return append(entrypoint, cmd...)
}

// dockerfileStage parses the repository's Dockerfile and returns its stage
// of that name.
func dockerfileStage(t *testing.T, name string) instructions.Stage {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(stages, func(s instructions.Stage) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("Dockerfile has no stage %q", name)
	}
	return stages[i]
}

// A container started without MCPMUX_TOKEN must stop at once and say why,
// not serve its tools to the network unauthenticated. The image's own
// command is run, mcpmux standing in for the image's binary; it refuses
// before it listens.
func TestImageCommandNeedsToken(t *testing.T) {
	for _, stage := range []string{"slim", "full"} {
		t.Run(stage, func(t *testing.T) {
			argv := imageCommand(t, stage)
			i := slices.IndexFunc(argv, func(a string) bool { return filepath.Base(a) == "mcpmux" })
			if i < 0 {
				t.Fatalf("the %s image's command %q does not run mcpmux", stage, argv)
			}
			cmd := exec.CommandContext(testContext(t), mcpmuxBin, argv[i+1:]...)
			env := []string{"MCPMUX_CONFIG=" + imageConfig(t, "slim")}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "MCPMUX_") {
					env = append(env, kv)
				}
			}
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "MCPMUX_TOKEN") {
				t.Errorf("%q without MCPMUX_TOKEN: %v\n%s", argv, err, out)
			}
		})
	}
}

// npxPinPattern is the pattern of the full image's npx cache step (grep -Eho
// '...'), anchored.
func npxPinPattern(t *testing.T) *regexp.Regexp {
	t.Helper()
	df, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`grep -Eho '([^']+)' /config/tool/`).FindSubmatch(df)
	if m == nil {
		t.Fatal("the Dockerfile has no npx cache step (grep -Eho '...' /config/tool/*.yaml)")
	}
	return regexp.MustCompile("^(?:" + string(m[1]) + ")$")
}
