package checks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// markdownFiles are the README and every document under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, docs...)
}

// prose returns a Markdown text without its fenced code blocks and inline
// code, where a "](" is not a link.
func prose(text string) string {
	text = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```").ReplaceAllString(text, "")
	return regexp.MustCompile("`[^`\n]*`").ReplaceAllString(text, "")
}

// headingAnchors are the anchors GitHub gives a document's headings.
func headingAnchors(text string) map[string]bool {
	text = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```").ReplaceAllString(text, "")
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{1,6} (.+)$`).FindAllStringSubmatch(text, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		for n := 1; anchors[a]; n++ {
			a = b.String() + "-" + string(rune('0'+n))
		}
		anchors[a] = true
	}
	return anchors
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link of the README and docs/ names a file or directory
// that exists, and every #anchor a heading of its document: moving a
// section must not leave links behind.
func TestDocLinks(t *testing.T) {
	for _, doc := range markdownFiles(t) {
		for _, m := range linkRE.FindAllStringSubmatch(prose(readDoc(t, doc)), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := doc
			if path != "" {
				target = filepath.Join(filepath.Dir(doc), path)
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s: link %q: %v", doc, link, err)
					continue
				}
			}
			if anchor != "" && !headingAnchors(readDoc(t, target))[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", doc, link, target, anchor)
			}
		}
	}
}

// The fuzz targets listed in docs/security.md are the Fuzz functions of
// the code, and .ci/run fuzzes each of them.
func TestDocFuzzTargets(t *testing.T) {
	var inCode []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != "." {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`).FindAllStringSubmatch(string(src), -1) {
			inCode = append(inCode, filepath.Dir(p)+":"+m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(inCode)

	var inDocs []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(\\w+)` \\| (.*) \\|$").FindAllStringSubmatch(readDoc(t, filepath.Join("docs", "security.md")), -1) {
		for _, target := range regexp.MustCompile("`(Fuzz\\w+)`").FindAllStringSubmatch(m[2], -1) {
			inDocs = append(inDocs, m[1]+":"+target[1])
		}
	}
	slices.Sort(inDocs)
	if !slices.Equal(inCode, inDocs) {
		t.Errorf("fuzz targets in docs/security.md = %v, in the code = %v", inDocs, inCode)
	}

	ci := readDoc(t, filepath.Join(".ci", "run"))
	for _, target := range inCode {
		if !strings.Contains(ci, target) {
			t.Errorf(".ci/run does not fuzz %s", target)
		}
	}
}

// The container docs quote the refusal the binary prints when told to
// serve a non-loopback address without a token.
func TestDocQuotesTokenRefusal(t *testing.T) {
	// 192.0.2.1 (TEST-NET-1) is never reached: mcpmux refuses before it
	// listens.
	_, errOut, code := runRelease(t, []string{"MCPMUX_TOKEN="}, "--config", t.TempDir(), "--http", "192.0.2.1:8080", "--log-format", "json")
	refusal := ""
	for _, line := range strings.Split(errOut, "\n") {
		var rec struct{ Level, Msg string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Level == "ERROR" && strings.HasPrefix(rec.Msg, "refusing") {
			refusal = rec.Msg
		}
	}
	if code != 2 || refusal == "" {
		t.Fatalf("mcpmux --http 192.0.2.1:8080 without a token: exit %d, no refusal logged:\n%s", code, errOut)
	}
	ops := strings.Join(strings.Fields(readDoc(t, filepath.Join("docs", "operations.md"))), " ")
	if !strings.Contains(ops, "`"+refusal+"`") {
		t.Errorf("docs/operations.md does not quote the refusal %q", refusal)
	}
}
