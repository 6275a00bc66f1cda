package checks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxReadmeLines keeps the README a first page: what mcpmux is, how to run
// it, add a server and connect a client; the rest belongs in docs/.
const maxReadmeLines = 300

// clientDocs are the files that hold client configs meant to be pasted.
var clientDocs = []string{"README.md", filepath.Join("docs", "clients.md")}

// docBlocks returns the fenced code blocks in language lang of the files.
func docBlocks(t *testing.T, lang string, files ...string) []string {
	t.Helper()
	re := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```$")
	var blocks []string
	for _, f := range files {
		for _, m := range re.FindAllStringSubmatch(readDoc(t, f), -1) {
			blocks = append(blocks, m[1])
		}
	}
	return blocks
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadmeIsShort(t *testing.T) {
	if n := strings.Count(readDoc(t, "README.md"), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, want at most %d: move details into docs/", n, maxReadmeLines)
	}
}

// The client configs are meant to be pasted: each JSON block must parse,
// and mcpmux import must take it without making mcpmux its own server.
func TestReadmeClientConfigs(t *testing.T) {
	blocks := docBlocks(t, "json", clientDocs...)
	configs := 0
	for _, b := range blocks {
		var v map[string]any
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Errorf("JSON block does not parse: %v\n%s", err, b)
			continue
		}
		if v["mcpServers"] == nil && v["servers"] == nil {
			continue
		}
		configs++
		file := filepath.Join(t.TempDir(), "mcp.json")
		if err := os.WriteFile(file, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		out, errOut, code := runRelease(t, nil, "import", file, "--config", dir)
		if code != 0 {
			t.Errorf("mcpmux import of a documented client config: exit %d\n%s%s\n%s", code, out, errOut, b)
			continue
		}
		written, _ := filepath.Glob(filepath.Join(dir, "tool", "*.yaml"))
		for _, f := range written {
			if strings.Contains(strings.ToLower(filepath.Base(f)), "mcpmux") {
				t.Errorf("mcpmux import made %s, a way to reach mcpmux, one of its own servers:\n%s", filepath.Base(f), out)
			}
		}
	}
	if configs < 4 {
		t.Fatalf("%v have %d client configs; want Claude Desktop, VS Code and Cursor at least", clientDocs, configs)
	}
}

// The Go client of docs/clients.md is an excerpt of examples/agent/main.go,
// which the build compiles: every code line of it must be a line of that
// file.
func TestReadmeAgentSnippet(t *testing.T) {
	src := readDoc(t, filepath.Join("examples", "agent", "main.go"))
	lines := map[string]bool{}
	for _, l := range strings.Split(src, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	blocks := docBlocks(t, "go", clientDocs...)
	if len(blocks) == 0 {
		t.Fatalf("%v have no Go client snippet", clientDocs)
	}
	for _, b := range blocks {
		for _, l := range strings.Split(b, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "//") || lines[l] {
				continue
			}
			t.Errorf("Go snippet line is not in examples/agent/main.go: %s", l)
		}
	}
}

// readmeSection returns the text of the README's "## title" section.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	text := readDoc(t, "README.md")
	start := strings.Index(text, "\n## "+title+"\n")
	if start < 0 {
		t.Fatalf("README.md has no %q section", title)
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	return section
}

// Quick start states what the two commands need, with the Go version of
// go.mod, and names every server the shipped config starts.
func TestReadmeQuickStart(t *testing.T) {
	qs := readmeSection(t, "Quick start")
	mod := readDoc(t, "go.mod")
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(mod)
	if goLine == nil {
		t.Fatal("go.mod has no go line")
	}
	for _, want := range []string{
		"Go ≥ " + goLine[1],
		"C compiler", "requires cgo",
		"Node.js ≥ 20", "npm registry",
		"chromium",
		"go run . tools", "go test -race ./...",
		"minute",
	} {
		if !strings.Contains(qs, want) {
			t.Errorf("Quick start does not say %q", want)
		}
	}
	tools, err := filepath.Glob(filepath.Join("config", "tool", "*.yaml"))
	if err != nil || len(tools) == 0 {
		t.Fatalf("no shipped tool files: %v", err)
	}
	for _, f := range tools {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if !strings.Contains(qs, "`"+name+"`") {
			t.Errorf("Quick start does not name the shipped server %q", name)
		}
	}
}

// The README's command table lists the commands of "mcpmux help", and
// only those.
func TestReadmeCommandTable(t *testing.T) {
	help, errOut, code := runRelease(t, nil, "help")
	if code != 0 {
		t.Fatalf("mcpmux help: exit %d\n%s", code, errOut)
	}
	inHelp := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+mcpmux ([a-z][a-z-]*)\b`).FindAllStringSubmatch(help, -1) {
		inHelp[m[1]] = true
	}
	if len(inHelp) < 5 {
		t.Fatalf("mcpmux help lists %d commands:\n%s", len(inHelp), help)
	}
	inTable := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `mcpmux ([a-z][a-z-]*)\\b").FindAllStringSubmatch(readmeSection(t, "Command line"), -1) {
		inTable[m[1]] = true
	}
	for name := range inHelp {
		if !inTable[name] {
			t.Errorf("README's command table lacks %q", name)
		}
	}
	for name := range inTable {
		if !inHelp[name] {
			t.Errorf("README's command table has %q, which mcpmux help does not list", name)
		}
	}
}
