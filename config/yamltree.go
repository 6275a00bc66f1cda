package config

import (
	"errors"
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// yamlParser is the koanf.Parser of config files: YAML, read in time
// linear in the document.
//
// koanf's own YAML parser is yaml.v3's Unmarshal into a map, which checks
// every key of a mapping against every other key for duplicates: a 1 MiB
// tool file of 88 000 env entries took 37 CPU-s to load, and a reload
// waits for it. This one lets yaml.v3 parse into its node tree (linear)
// and builds the map itself, finding duplicates with a map. The values
// are what yaml.v3 gives an `any`: the same tags, merge keys (<<) and
// aliases, with alias expansion bounded against "billion laughs".
type yamlParser struct{}

// Unmarshal parses a YAML document whose top level is a mapping (or
// empty).
func (yamlParser) Unmarshal(data []byte) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fixSyntaxLine(data, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return map[string]any{}, nil
	}
	b := &treeBuilder{budget: maxYAMLValues(len(data))}
	top := doc.Content[0]
	if top.Kind == yaml.AliasNode && top.Alias != nil {
		top = top.Alias
	}
	switch {
	case top.Kind == yaml.MappingNode:
		// koanf asks for a map[string]any: yaml.v3 writes its keys as
		// they are written, whatever they look like (00 stays "00").
		return b.mapping(top, true)
	case top.Kind == yaml.ScalarNode && top.ShortTag() == "!!null":
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("yaml: line %d: the file must be a mapping of keys to values, not %s", top.Line, kindName(top))
}

// Marshal is not needed: mcpmux never writes config through koanf.
func (yamlParser) Marshal(map[string]any) ([]byte, error) {
	return nil, errors.New("writing YAML is not supported")
}

// maxYAMLValues bounds the values a document of n bytes may expand to
// through aliases: far more than any real config (every value takes at
// least a byte when written out), far less than an alias bomb.
func maxYAMLValues(n int) int { return 16*n + 1024 }

// maxYAMLDepth bounds the nesting of values, aliases expanded, as yaml.v3
// bounds the nesting it parses.
const maxYAMLDepth = 10000

// treeBuilder turns yaml.v3 nodes into maps, slices and scalars.
type treeBuilder struct {
	budget int                 // values left to build
	depth  int                 // nesting of the value being built
	active map[*yaml.Node]bool // alias targets being expanded, against cycles
}

// enter accounts for building the value at n: one more value of the
// budget, one level deeper. An alias is followed to its anchor, unless that
// is being built already (an alias inside its own anchor). leave undoes
// what enter did, once the value is built.
func (b *treeBuilder) enter(n *yaml.Node) (target *yaml.Node, leave func(), err error) {
	if b.budget--; b.budget < 0 {
		return nil, nil, fmt.Errorf("yaml: line %d: aliases expand to too many values: not a config file", n.Line)
	}
	if b.depth >= maxYAMLDepth {
		return nil, nil, fmt.Errorf("yaml: line %d: values nested more than %d deep", n.Line, maxYAMLDepth)
	}
	b.depth++
	if n.Kind != yaml.AliasNode {
		return n, func() { b.depth-- }, nil
	}
	anchor := n.Alias
	switch {
	case anchor == nil:
		err = fmt.Errorf("yaml: line %d: unknown alias", n.Line)
	case b.active[anchor]:
		err = fmt.Errorf("yaml: line %d: alias *%s refers to a value that contains it", n.Line, n.Value)
	}
	if err != nil {
		b.depth--
		return nil, nil, err
	}
	if b.active == nil {
		b.active = map[*yaml.Node]bool{}
	}
	b.active[anchor] = true
	return anchor, func() { delete(b.active, anchor); b.depth-- }, nil
}

func (b *treeBuilder) value(n *yaml.Node) (any, error) {
	n, leave, err := b.enter(n)
	if err != nil {
		return nil, err
	}
	defer leave()
	switch n.Kind {
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		return v, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := b.value(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return b.mapping(n, isStringMap(n))
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return b.value(n.Content[0])
	}
	return nil, fmt.Errorf("yaml: line %d: unexpected node", n.Line)
}

// mapping builds a map. With stringKeys (the document's top level, and a
// mapping whose keys are all strings) keys are decoded as strings, as
// yaml.v3 decodes into a map[string]any; otherwise as values, which koanf
// then turns into strings (a key 1 is "1"). A key written twice is an
// error, as in yaml.v3; merge keys (<<: *defaults, or a list of them) add
// the keys the mapping does not set itself, earlier sources winning over
// later ones.
func (b *treeBuilder) mapping(n *yaml.Node, stringKeys bool) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	seen := make(map[string]int, len(n.Content)/2) // raw key → its line
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if line, dup := seen[kn.Value]; dup && kn.Kind == yaml.ScalarNode {
			return nil, fmt.Errorf("yaml: unmarshal errors:\n  line %d: mapping key %q already defined at line %d", kn.Line, kn.Value, line)
		}
		seen[kn.Value] = kn.Line
		if kn.Kind == yaml.ScalarNode && kn.ShortTag() == "!!merge" {
			merges = append(merges, vn)
			continue
		}
		key, ok, err := b.key(kn, stringKeys)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		v, err := b.value(vn)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	for _, m := range merges {
		if err := b.merge(out, m, stringKeys); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// key decodes a mapping key; ok is false for a null key of a string map,
// which yaml.v3 leaves out with its value.
func (b *treeBuilder) key(kn *yaml.Node, asString bool) (key string, ok bool, err error) {
	target := kn
	if target.Kind == yaml.AliasNode && target.Alias != nil {
		target = target.Alias
	}
	if target.Kind != yaml.ScalarNode {
		return "", false, fmt.Errorf("yaml: line %d: a key must be a scalar, not %s", kn.Line, kindName(target))
	}
	if asString {
		if target.ShortTag() == "!!null" {
			return "", false, nil
		}
		var s string
		if err := kn.Decode(&s); err != nil {
			return "", false, err
		}
		return s, true, nil
	}
	k, err := b.value(kn)
	if err != nil {
		return "", false, err
	}
	if s, ok := k.(string); ok {
		return s, true, nil
	}
	return fmt.Sprint(k), true, nil
}

// merge adds the keys of the mapping (or of each mapping of the sequence)
// at n that out does not have yet; their keys are decoded like out's.
func (b *treeBuilder) merge(out map[string]any, n *yaml.Node, stringKeys bool) error {
	src, leave, err := b.enter(n)
	if err != nil {
		return err
	}
	defer leave()
	sources := []*yaml.Node{src}
	if src.Kind == yaml.SequenceNode {
		sources = src.Content
	}
	for _, s := range sources {
		if err := b.mergeOne(out, s, stringKeys); err != nil {
			return err
		}
	}
	return nil
}

// mergeOne adds the keys of one merge source, a mapping, that out lacks.
func (b *treeBuilder) mergeOne(out map[string]any, n *yaml.Node, stringKeys bool) error {
	src, leave, err := b.enter(n)
	if err != nil {
		return err
	}
	defer leave()
	if src.Kind != yaml.MappingNode {
		return fmt.Errorf("yaml: line %d: map merge requires a map or a sequence of maps as the value", n.Line)
	}
	m, err := b.mapping(src, stringKeys)
	if err != nil {
		return err
	}
	for k, v := range m {
		if _, set := out[k]; !set {
			out[k] = v
		}
	}
	return nil
}

// isStringMap reports a mapping yaml.v3 decodes into a map[string]any:
// every key a string (or a merge key).
func isStringMap(n *yaml.Node) bool {
	for i := 0; i < len(n.Content); i += 2 {
		if t := n.Content[i].ShortTag(); t != "!!str" && t != "!!merge" {
			return false
		}
	}
	return true
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "that"
}
