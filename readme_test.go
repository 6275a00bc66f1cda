package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpmux/mcpmux/importer"
)

// readmeBlocks returns the fenced code blocks of README.md in language lang.
func readmeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```$")
	var blocks []string
	for _, m := range re.FindAllStringSubmatch(string(readme), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// The README's client configs are meant to be pasted: each JSON block must
// parse, and an mcpmux import of it must not make mcpmux its own server.
func TestReadmeClientConfigs(t *testing.T) {
	blocks := readmeBlocks(t, "json")
	if len(blocks) < 3 {
		t.Fatalf("README.md has %d JSON blocks; want the client configs", len(blocks))
	}
	for _, b := range blocks {
		var v map[string]any
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Errorf("README JSON block does not parse: %v\n%s", err, b)
			continue
		}
		if v["mcpServers"] == nil && v["servers"] == nil {
			continue
		}
		res, err := importer.Parse([]byte(b), nil)
		if err != nil {
			t.Errorf("mcpmux import of a README config: %v\n%s", err, b)
			continue
		}
		for _, e := range res.Entries {
			if strings.Contains(strings.ToLower(e.Source), "mcpmux") {
				t.Errorf("mcpmux import would make %q, a way to reach mcpmux, one of its own servers", e.Source)
			}
		}
	}
}

// The README's Go client is an excerpt of examples/agent/main.go, which the
// build compiles: every code line of it must be a line of that file.
func TestReadmeAgentSnippet(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("examples", "agent", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(src), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	blocks := readmeBlocks(t, "go")
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go client snippet")
	}
	for _, b := range blocks {
		for _, l := range strings.Split(b, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "//") || lines[l] {
				continue
			}
			t.Errorf("README Go snippet line is not in examples/agent/main.go: %s", l)
		}
	}
}
