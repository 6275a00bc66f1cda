package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docExample is a ```yaml block of the documentation whose first line
// names the file it stands for ("# mcpmux.yaml", "# tool/x.yaml").
type docExample struct {
	doc, file, text string
}

// docExamples returns the named YAML examples of a Markdown file; blocks
// may be indented (inside a list item).
func docExamples(t *testing.T, path string) []docExample {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		indent, ok := strings.CutSuffix(lines[i], "```yaml")
		if !ok || strings.TrimSpace(indent) != "" {
			continue
		}
		var block []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			block = append(block, strings.TrimPrefix(lines[i], indent))
		}
		if len(block) == 0 || !strings.HasPrefix(block[0], "# ") {
			continue
		}
		file := strings.TrimPrefix(block[0], "# ")
		if file != SettingsFile && !strings.HasPrefix(file, ToolDir+"/") {
			continue // a comment, not a file name
		}
		out = append(out, docExample{doc: path, file: file, text: strings.Join(block, "\n") + "\n"})
	}
	return out
}

// Every config example of the README and docs/ that names its file loads
// as it stands, given the environment variables it references.
func TestDocExamplesLoad(t *testing.T) {
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	// The examples reference API keys a user would set: any variable is.
	anyVar := func(string) (string, bool) { return "set", true }
	perDoc := map[string]int{}
	for _, doc := range append(docs, "../README.md") {
		for _, ex := range docExamples(t, doc) {
			perDoc[filepath.Base(doc)]++
			var ferr *FileError
			if ex.file == SettingsFile {
				_, ferr = ParseSettings(ex.file, []byte(ex.text), anyVar)
			} else {
				_, ferr = ParseServer(ex.file, []byte(ex.text), anyVar)
			}
			if ferr != nil {
				t.Errorf("%s: example does not load:\n%s\n%v", doc, ex.text, ferr)
			}
		}
	}
	// Where the examples are meant to be: a section moved elsewhere must
	// take its test along.
	for doc, min := range map[string]int{"policies.md": 6, "configuration.md": 1, "README.md": 2, "remote-servers.md": 6} {
		if perDoc[doc] < min {
			t.Errorf("%s has %d config examples that name their file, want at least %d", doc, perDoc[doc], min)
		}
	}
}
