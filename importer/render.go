package importer

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpmux/mcpmux/config"
	yaml "go.yaml.in/yaml/v3"
)

// flowWidth is the longest args list written on one line, as the shipped
// files do (args: ["-y", "pkg"]); longer lists get one item per line.
const flowWidth = 72

// Render returns the content of tool/<e.Server.Name>.yaml for e, headed by
// a comment naming source (the client config it came from) and with e's
// notes as comments beside the values they explain.
//
// Keys are written in the order of docs/configuration.md (name, enabled, type,
// tool_command, args, cwd, env, url, headers). type is written only where
// mcpmux would not infer it (sse), and enabled only when false.
func Render(e *Entry, source string) ([]byte, error) {
	s := e.Server
	doc := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, value *yaml.Node) *yaml.Node {
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
		doc.Content = append(doc.Content, k, value)
		return k
	}

	keys := map[string]*yaml.Node{}
	keys["name"] = add("name", str(s.Name))
	if !s.IsEnabled() {
		keys["enabled"] = add("enabled", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"})
	}
	if s.Type != inferredType(s) {
		keys["type"] = add("type", str(s.Type))
	}
	entries := map[string]map[string]*yaml.Node{} // field → key → key node
	if s.Command != "" {
		keys["tool_command"] = add("tool_command", str(s.Command))
	}
	if len(s.Args) > 0 {
		keys["args"] = add("args", list(s.Args))
	}
	if s.Cwd != "" {
		keys["cwd"] = add("cwd", str(s.Cwd))
	}
	if len(s.Env) > 0 {
		m, k := mapping(s.Env)
		keys["env"], entries["env"] = add("env", m), k
	}
	if s.URL != "" {
		keys["url"] = add("url", str(s.URL))
	}
	if len(s.Headers) > 0 {
		m, k := mapping(s.Headers)
		keys["headers"], entries["headers"] = add("headers", m), k
	}

	header := []string{fmt.Sprintf("imported from %s by mcpmux import", source)}
	for _, n := range e.Notes {
		switch k := entries[n.Field][n.Key]; {
		case n.Field == "" || keys[n.Field] == nil:
			header = append(header, n.String())
		case k != nil:
			k.LineComment = join(k.LineComment, n.Text, "; ")
		default:
			keys[n.Field].HeadComment = join(keys[n.Field].HeadComment, n.Text, "\n")
		}
	}
	var buf bytes.Buffer
	for _, line := range header {
		fmt.Fprintf(&buf, "# %s\n", line)
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", s.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", s.Name, err)
	}
	return buf.Bytes(), nil
}

// inferredType is the type mcpmux assumes when a file has none.
func inferredType(s *config.Server) string {
	if s.URL != "" {
		return config.TransportStreamable
	}
	return config.TransportStdio
}

// str is a string scalar; yaml.v3 quotes it where a plain scalar would read
// as something else ("1800", "true", "@scope/pkg"). Values with ${...} are
// double-quoted, as in docs/configuration.md, so they read as one string.
func str(v string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
	if strings.Contains(v, "${") {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func list(items []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode}
	width := 0
	for _, it := range items {
		width += len(it) + 4
		n.Content = append(n.Content, str(it))
	}
	if width <= flowWidth && !slices.ContainsFunc(items, func(s string) bool { return strings.ContainsAny(s, "\n\"\\") }) {
		n.Style = yaml.FlowStyle
		for _, c := range n.Content {
			c.Style = yaml.DoubleQuotedStyle
		}
	}
	return n
}

// mapping returns a block mapping of m with sorted keys, and its key nodes
// by key, to attach comments to.
func mapping(m map[string]string) (*yaml.Node, map[string]*yaml.Node) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	keys := map[string]*yaml.Node{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kn := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}
		keys[k] = kn
		n.Content = append(n.Content, kn, str(m[k]))
	}
	return n, keys
}

func join(comment, text, sep string) string {
	if comment == "" {
		return text
	}
	return comment + sep + text
}
