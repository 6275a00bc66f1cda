package config

import (
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
