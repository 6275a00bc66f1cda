package config

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// lineOfKey returns the line of a top-level key in a YAML document, or 0.
func lineOfKey(data []byte, key string) int { return lineOfPath(data, []string{key}) }

// lineOfPath returns the line of the node at path (map keys and list
// indexes) in a YAML document. When the full path does not exist it returns
// the line of the deepest node that does, so that an error still points
// near its cause; 0 if the document does not parse.
func lineOfPath(data []byte, path []string) int {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return 0
	}
	n := doc.Content[0]
	line := n.Line
	for _, p := range path {
		next := child(n, p)
		if next == nil {
			return line
		}
		n = next
		line = n.Line
	}
	return line
}

// child returns the value under key p of a mapping, carrying the key's
// line, or element p of a sequence.
func child(n *yaml.Node, p string) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				// A block value starts on the line after its key; errors
				// read better pointing at the key.
				v := *n.Content[i+1]
				v.Line = n.Content[i].Line
				return &v
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(p); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	case yaml.AliasNode:
		if n.Alias != nil {
			return child(n.Alias, p)
		}
	}
	return nil
}

// parserProblems are the problems yaml.v3's parser reports, as opposed to
// its scanner. For these yaml.v3 (v3.0.x) prints a 0-based line — one line
// early — and none at all for line 1: the line of the construct being
// parsed (the "[" of a list that is never closed, the mapping a wrongly
// indented key ends), or, when that starts on the first line, of where the
// problem was found.
var parserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found undefined tag handle",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

// tabProblem is yaml.v3's complaint about a tab in a line's indentation.
const tabProblem = "found a tab character that violates indentation"

// tabIndentedLine returns the first line from line on whose indentation
// holds a tab, or line.
func tabIndentedLine(data []byte, line int) int {
	for i, l := range bytes.Split(data, []byte("\n")) {
		indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
		if i+1 >= line && bytes.IndexByte(indent, '\t') >= 0 {
			return i + 1
		}
	}
	return line
}

var syntaxErrorRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// fixSyntaxLine corrects the line of a yaml.v3 syntax error in data to the
// line the user must edit (see parserProblems); other errors are returned
// as they are. A line past the document's last is its last: a problem
// found at the end belongs to what is not finished there.
func fixSyntaxLine(data []byte, err error) error {
	m := syntaxErrorRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	line, _ := strconv.Atoi(m[1])
	switch {
	case m[2] == tabProblem:
		// yaml.v3 names the line of the value the tab's line continues;
		// the tab is on a later one.
		line = tabIndentedLine(data, line)
	case slices.Contains(parserProblems, m[2]):
		line++
	default:
		return err
	}
	if last := bytes.Count(bytes.TrimRight(data, " \t\r\n"), []byte("\n")) + 1; line > last {
		line = last
	}
	return fmt.Errorf("yaml: line %d: %s", line, m[2])
}
