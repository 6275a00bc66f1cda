package config

import (
	"os"
	"strings"
	"testing"
)

// The config examples of the README's "Call policies" section load: each
// ```yaml block whose first line names its file ("# mcpmux.yaml",
// "# tool/x.yaml").
func TestReadmeCallPolicyExamplesLoad(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n## Call policies\n")
	if start < 0 {
		t.Fatal("README has no Call policies section")
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	n := 0
	lines := strings.Split(section, "\n")
	for i := 0; i < len(lines); i++ {
		indent, ok := strings.CutSuffix(lines[i], "```yaml")
		if !ok || strings.TrimSpace(indent) != "" {
			continue
		}
		var block []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			block = append(block, strings.TrimPrefix(lines[i], indent))
		}
		doc := strings.Join(block, "\n") + "\n"
		file := strings.TrimPrefix(block[0], "# ")
		switch {
		case file == SettingsFile:
			if _, ferr := ParseSettings(file, []byte(doc), env(nil)); ferr != nil {
				t.Errorf("README example:\n%s\n%v", doc, ferr)
			}
		case strings.HasPrefix(file, ToolDir+"/"):
			if _, ferr := ParseServer(file, []byte(doc), env(nil)); ferr != nil {
				t.Errorf("README example:\n%s\n%v", doc, ferr)
			}
		default:
			t.Errorf("README example does not name its file on its first line:\n%s", doc)
		}
		n++
	}
	if n < 5 {
		t.Errorf("found %d examples in Call policies, want at least 5", n)
	}
}
