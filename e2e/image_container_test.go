package e2e

import (
	"crypto/rand"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpmux/mcpmux/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The images built from the Dockerfile, run as containers (see
// container_test.go): scripts/image-test.sh sets MCPMUX_IMAGE_SLIM and
// MCPMUX_IMAGE_FULL.

const (
	noTokenMessage = "refusing to serve on a non-loopback address without a token: set --token, MCPMUX_TOKEN, --token-file or token_file, or bind to 127.0.0.1"
	// The shipped mcpmux.yaml's answer to a fetch of a Hugging Face dataset.
	benchmarkRefusal = "You are trying to read benchmark answers"
	privateRefusal   = "does not reach loopback or private networks"
)

func TestImageContainerSlim(t *testing.T) {
	image := imageUnderTest(t, "MCPMUX_IMAGE_SLIM")
	page := imageTestPage(t)

	t.Run("contents", func(t *testing.T) { checkSlimContents(t, newContainer(t, image)) })
	t.Run("no token", func(t *testing.T) { checkNeedsToken(t, newContainer(t, image)) })

	t.Run("serves", func(t *testing.T) {
		c := newContainer(t, image)
		token := rand.Text()
		s := c.serve(t, token)
		if up, configured := s.waitServersStarted(t); up != 1 || configured != 1 {
			t.Errorf("%d of %d servers up, want the fetch server", up, configured)
		}
		c.checkRunsAs(t, c.uid(t))
		checkHealthy(t, s, "healthy: ok, 1 of 1 servers up")
		checkTokenRequired(t, s)

		cs := connectImage(t, s, token)
		if names := toolNames(t, cs); !slices.Equal(names, []string{"fetch__fetch"}) {
			t.Errorf("tools %v, want the built-in fetch tool alone", names)
		}
		// Its default config refuses loopback pages and, by the shipped
		// settings, Hugging Face datasets.
		if res := callTool(t, cs, "fetch__fetch", map[string]any{"url": page}); !res.IsError || !strings.Contains(resultText(res), privateRefusal) {
			t.Errorf("fetch of a loopback page = %q (isError %v), want the private-network refusal", resultText(res), res.IsError)
		}
		checkBenchmarkRefused(t, cs)

		s.stop(t)
		checkUnhealthy(t, s)
	})

	// The documented way to change the config: mount a directory over
	// /config. This one lets the fetch tool read loopback pages.
	t.Run("mounted config", func(t *testing.T) {
		c := newContainer(t, image)
		// The image's own config, with its fetch tool changed.
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(c.root, "config"))); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tool", "fetch.yaml"), []byte("name: fetch\ntool_command: mcpmux\nargs: [fetch-server, --allow-private-networks]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// The container's user must be able to read it, as with docker run -v.
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		token := rand.Text()
		s := c.serve(t, token, dir+":/config:ro")
		s.waitServersStarted(t)
		cs := connectImage(t, s, token)
		res := callTool(t, cs, "fetch__fetch", map[string]any{"url": page})
		if md := resultText(res); res.IsError || !strings.Contains(md, "# Image test page") || !strings.Contains(md, "served to the *container*") {
			t.Errorf("fetch of %s from the container = %q (isError %v), want the page as Markdown", page, md, res.IsError)
		}
		s.stop(t)
	})
}

func TestImageContainerFull(t *testing.T) {
	image := imageUnderTest(t, "MCPMUX_IMAGE_FULL")
	page := imageTestPage(t)

	t.Run("no token", func(t *testing.T) { checkNeedsToken(t, newContainer(t, image)) })

	t.Run("serves the shipped config", func(t *testing.T) {
		shipped, err := config.Load(filepath.Join("..", "config"), nil)
		if err != nil {
			t.Fatal(err)
		}
		c := newContainer(t, image)
		checkOwner(t, c, "config/tool/playwright.yaml", 0)
		checkOwner(t, c, "config/mcpmux.yaml", 0)
		checkOwner(t, c, "config/workspace/README.md", c.uid(t))
		token := rand.Text()
		s := c.serve(t, token)
		if up, configured := s.waitServersStarted(t); up != len(shipped.Servers) || configured != len(shipped.Servers) {
			t.Errorf("%d of %d servers up, want all %d of the shipped config", up, configured, len(shipped.Servers))
		}
		checkHealthy(t, s, fmt.Sprintf("healthy: ok, %d of %d servers up", len(shipped.Servers), len(shipped.Servers)))
		checkTokenRequired(t, s)

		cs := connectImage(t, s, token)
		names := toolNames(t, cs)
		for _, srv := range shipped.Servers {
			if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, srv.NamePrefix()+"__") }) {
				t.Errorf("no tool of server %s among %v", srv.Name, names)
			}
		}

		// A call to each server, each from inside the image.
		if res := callTool(t, cs, "everything__echo", map[string]any{"message": "from the image"}); res.IsError || !strings.Contains(resultText(res), "from the image") {
			t.Errorf("everything__echo = %q (isError %v)", resultText(res), res.IsError)
		}
		if res := callTool(t, cs, "filesystem__list_allowed_directories", map[string]any{}); res.IsError || !strings.Contains(resultText(res), "/config/workspace") {
			t.Errorf("filesystem__list_allowed_directories = %q (isError %v), want /config/workspace", resultText(res), res.IsError)
		}
		checkBenchmarkRefused(t, cs)
		res := callTool(t, cs, "playwright__browser_navigate", map[string]any{"url": page})
		if res.IsError || !strings.Contains(resultText(res), "Image test page") {
			t.Fatalf("playwright__browser_navigate to %s = %q (isError %v), want the page's title", page, resultText(res), res.IsError)
		}
		// The browser is open: it too runs as the image's user.
		procs := c.checkRunsAs(t, c.uid(t))
		if !slices.ContainsFunc(procs, func(p containerProc) bool { return strings.Contains(p.cmdline, "chromium") }) {
			t.Errorf("no chromium process in the container after navigating: %v", procs)
		}

		// docker stop: tini passes SIGTERM to mcpmux, which closes the
		// browser and every server; nothing is left behind.
		s.stop(t)
		checkUnhealthy(t, s)
	})
}

// checkOwner: root owns the config, which mcpmux only reads; the
// filesystem server's workspace is the image user's to write.
func checkOwner(t *testing.T, c *container, name string, uid int) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(c.root, name), &st); err != nil {
		t.Error(err)
	} else if int(st.Uid) != uid {
		t.Errorf("/%s is owned by %d, want %d", name, st.Uid, uid)
	}
}

// imageTestPage serves a page on loopback, which containers reach (they
// share this machine's network), and returns its URL.
func imageTestPage(t *testing.T) string {
	t.Helper()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>Image test page</title></head><body>
			<article><h1>Image test page</h1><p>This paragraph is served to the <em>container</em> from the test's own loopback server.</p></article>
			</body></html>`)
	}))
	t.Cleanup(site.Close)
	return site.URL + "/page"
}

// connectImage connects a client to the container's /mcp with the token.
func connectImage(t *testing.T, s *served, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := connectURL(t, s.url+"/mcp", http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatalf("connecting to the container's /mcp: %v", err)
	}
	return cs
}

// Started without a token, the image's own command (on 0.0.0.0:8080) stops
// at once with status 2 and says how to give one; it refuses before it
// listens.
func checkNeedsToken(t *testing.T, c *container) {
	t.Helper()
	argv := append(slices.Clone(c.spec.Entrypoint), c.spec.Cmd...)
	out, code := c.run(t, nil, argv...)
	if code != 2 || !strings.Contains(out, noTokenMessage) {
		t.Errorf("%q without a token: exit %d, want 2 and %q:\n%s", argv, code, noTokenMessage, out)
	}
}

// checkTokenRequired: /healthz answers without a token, /mcp does not.
func checkTokenRequired(t *testing.T, s *served) {
	t.Helper()
	resp, err := http.Get(s.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health struct{ Status string }
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || health.Status != "ok" {
		t.Errorf("GET /healthz without a token: %s, status %q (%v), want 200 and ok", resp.Status, health.Status, err)
	}
	resp, err = http.Post(s.url+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /mcp without a token: %s, want 401", resp.Status)
	}
}

// checkHealthy runs the image's HEALTHCHECK, which must pass with summary.
func checkHealthy(t *testing.T, s *served, summary string) {
	t.Helper()
	if out, code := s.healthcheck(t); code != 0 || !strings.Contains(out, summary) {
		t.Errorf("HEALTHCHECK: exit %d, want 0 and %q:\n%s", code, summary, out)
	}
}

// checkUnhealthy: once mcpmux is gone the HEALTHCHECK fails.
func checkUnhealthy(t *testing.T, s *served) {
	t.Helper()
	if out, code := s.healthcheck(t); code != 1 || !strings.Contains(out, "unhealthy") {
		t.Errorf("HEALTHCHECK after the stop: exit %d, want 1 and unhealthy:\n%s", code, out)
	}
}

// checkBenchmarkRefused: the shipped rewrite rules apply in the image. The
// refusal comes before any request, so no network is needed.
func checkBenchmarkRefused(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	res := callTool(t, cs, "fetch__fetch", map[string]any{"url": "https://hf.co/datasets/some/benchmark"})
	if !res.IsError || !strings.Contains(resultText(res), benchmarkRefusal) {
		t.Errorf("fetch of a Hugging Face dataset = %q (isError %v), want the shipped refusal", resultText(res), res.IsError)
	}
}

// The slim image holds the static binary, its config, CA certificates and
// passwd/group entries, and nothing else: not a shell, not a library.
func checkSlimContents(t *testing.T, c *container) {
	t.Helper()
	want := map[string]func(path string) error{
		"usr/local/bin/mcpmux":              staticBinary,
		"etc/ssl/certs/ca-certificates.crt": contains("-----BEGIN CERTIFICATE-----"),
		"etc/passwd":                        contains("nonroot:x:65532:65532:"),
		"etc/group":                         contains("nonroot:x:65532:"),
	}
	// Its config: files of the repository's config/, unchanged (which of
	// them the slim stage copies is .ci/checks' TestSlimImageConfigRuns).
	imageConfig := filepath.Join(c.root, "config")
	err := filepath.WalkDir(imageConfig, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(imageConfig, p)
		data, rerr := os.ReadFile(filepath.Join("..", "config", rel))
		want[filepath.Join("config", rel)] = func(path string) error {
			if rerr != nil {
				return fmt.Errorf("is not a file of the repository's config/: %v", rerr)
			}
			if got, err := os.ReadFile(path); err != nil || string(got) != string(data) {
				return fmt.Errorf("differs from the repository's (%v)", err)
			}
			return nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config/mcpmux.yaml", "config/tool/fetch.yaml"} {
		if want[name] == nil {
			t.Errorf("the slim image lacks /%s", name)
		}
	}

	dirs := map[string]bool{}
	for name := range want {
		for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.root, p)
		switch {
		case rel == ".":
		case d.IsDir() && dirs[rel]:
		case d.Type().IsRegular() && want[rel] != nil:
			seen[rel] = true
			if err := want[rel](p); err != nil {
				t.Errorf("/%s: %v", rel, err)
			}
		default:
			t.Errorf("the slim image holds /%s (%v), which is neither the binary, its config, CA certificates nor passwd/group", rel, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("the slim image lacks /%s", name)
		}
	}
}

// staticBinary: an ELF without an interpreter or shared libraries, stamped
// with its version and commit.
func staticBinary(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return fmt.Errorf("dynamically linked (%v)", p.Type)
		}
	}
	if out, err := exec.Command(path, "version").Output(); err != nil || !regexp.MustCompile(`^mcpmux \S+ \(commit [0-9a-f]{7,12}`).Match(out) {
		return fmt.Errorf("version: %q (%v), want a version and its commit", out, err)
	}
	return nil
}

func contains(s string) func(path string) error {
	return func(path string) error {
		data, err := os.ReadFile(path)
		if err == nil && !strings.Contains(string(data), s) {
			err = fmt.Errorf("lacks %q", s)
		}
		return err
	}
}
