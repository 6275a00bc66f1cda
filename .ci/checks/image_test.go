package checks

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

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	yaml "go.yaml.in/yaml/v3"
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
	out, errOut, code := runRelease(t, nil, "check", "--config", dir)
	if code != 0 || !strings.Contains(out, "1 servers, 0 not up, 0 invalid files") {
		t.Fatalf("check of the slim image's config = %d\n%s\n%s", code, out, errOut)
	}
	if !regexpMatch(`(?m)^fetch\s+up\s+1\s+0\s+stdio`, out) {
		t.Errorf("the slim image's config does not serve the fetch tool:\n%s", out)
	}
}

// The full image's config is the shipped one: every file of config/ but
// the loader's Go sources and test data, unchanged (the product's tests
// load and check those files). Starting its npx servers is the image
// build's own "mcpmux check".
func TestFullImageConfigIsTheShippedOne(t *testing.T) {
	image := treeFiles(t, imageConfig(t, "full"))
	shipped := treeFiles(t, "config")
	for rel := range shipped {
		if strings.HasSuffix(rel, ".go") || strings.HasPrefix(rel, "testdata/") {
			delete(shipped, rel)
		}
	}
	for rel, data := range shipped {
		if got, ok := image[rel]; !ok {
			t.Errorf("the full image's config lacks %s", rel)
		} else if got != data {
			t.Errorf("the full image's %s differs from config/%s", rel, rel)
		}
	}
	for rel := range image {
		if _, ok := shipped[rel]; !ok {
			t.Errorf("the full image's config has %s, which config/ does not", rel)
		}
	}

	// The image has Node.js and mcpmux, nothing else to run a server with;
	// it caches the npx packages its RUN finds with grep: each npx server
	// must name its package pinned to a version that grep finds.
	pinned := npxPinPattern(t)
	for rel, data := range image {
		if !strings.HasPrefix(rel, "tool/") {
			continue
		}
		var srv struct {
			Command string   `yaml:"tool_command"`
			Args    []string `yaml:"args"`
			URL     string   `yaml:"url"`
		}
		if err := yaml.Unmarshal([]byte(data), &srv); err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		switch srv.Command {
		case "mcpmux":
		case "npx":
			i := slices.IndexFunc(srv.Args, func(a string) bool { return !strings.HasPrefix(a, "-") })
			if i < 0 || !pinned.MatchString(srv.Args[i]) {
				t.Errorf("%s: npx args %q name no package@version that the image's npx cache step (%v) finds", rel, srv.Args, pinned)
			}
		default:
			if srv.URL == "" {
				t.Errorf("%s runs %q, which the full image does not have", rel, srv.Command)
			}
		}
	}
}

// treeFiles returns the files under dir by their slash-separated paths
// relative to it, with their contents.
func treeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Both images apply the shipped settings: mcpmux.yaml holds the rewrite
// rules, among them the refusal of Hugging Face dataset URLs that
// evaluations in CI rely on.
func TestImagesShipTheSettings(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("config", "mcpmux.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"slim", "full"} {
		got, err := os.ReadFile(filepath.Join(imageConfig(t, stage), "mcpmux.yaml"))
		if err != nil || string(got) != string(want) {
			t.Errorf("the %s image's /config/mcpmux.yaml is not the shipped one (%v)", stage, err)
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

// dockerfileStage returns the Dockerfile's stage of that name.
func dockerfileStage(t *testing.T, name string) instructions.Stage {
	t.Helper()
	stages, _ := dockerfile(t)
	return *stage(t, stages, name)
}

// A container started without MCPMUX_TOKEN must stop at once and say why,
// not serve its tools to the network unauthenticated. The image's own
// command is run, the release binary standing in for the image's; it
// refuses before it listens.
func TestImageCommandNeedsToken(t *testing.T) {
	for _, stage := range []string{"slim", "full"} {
		t.Run(stage, func(t *testing.T) {
			argv := imageCommand(t, stage)
			i := slices.IndexFunc(argv, func(a string) bool { return filepath.Base(a) == "mcpmux" })
			if i < 0 {
				t.Fatalf("the %s image's command %q does not run mcpmux", stage, argv)
			}
			cmd := exec.Command(releaseBin, argv[i+1:]...)
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
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`grep -Eho '([^']+)' /config/tool/`).FindSubmatch(df)
	if m == nil {
		t.Fatal("the Dockerfile has no npx cache step (grep -Eho '...' /config/tool/*.yaml)")
	}
	return regexp.MustCompile("^(?:" + string(m[1]) + ")$")
}
