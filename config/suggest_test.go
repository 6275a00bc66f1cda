package config

import (
	"strings"
	"testing"
)

// An unknown key names the key that was meant: a close misspelling, or
// how MCP clients' configs spell it (a file pasted from Claude Desktop or
// VS Code).
func TestUnknownKeysSuggestTheKeyMeant(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       string
	}{
		{"misspelt", "tool_comand: x\n", `unknown field "tool_comand" at top level: did you mean "tool_command"?`},
		{"camel case", "toolCommand: x\n", `did you mean "tool_command"?`},
		{"swapped letters", "tool_command: x\nagrs: [a]\n", `unknown field "agrs" at top level: did you mean "args"?`},
		{"claude desktop", "command: npx\nargs: [a]\n", `unknown field "command" at top level: did you mean "tool_command"?`},
		{"cline", "tool_command: x\ndisabled: true\n", `did you mean "enabled: false"?`},
		{"windsurf", "serverUrl: https://x/mcp\n", `did you mean "url"?`},
		{"env file", "tool_command: x\nenvFile: .env\n", `mcpmux reads no env file`},
		{"whole client config", "mcpServers:\n  a: {command: x}\n", `"mcpmux import FILE"`},
		{"nested", "tool_command: x\ntool_timeouts: {a: 1s}\nsesion: per-client\n", `did you mean "session"?`},
		{"several", "command: x\nheaderz: {}\n", `unknown fields at top level: "command" (did you mean "tool_command"?), "headerz" (did you mean "headers"?)`},
		{"nothing close", "tool_command: x\nflavour: vanilla\n", `unknown field "flavour" at top level`},
		{"opencode type", "type: local\ntool_command: x\n", `unknown type "local" (stdio, http, sse): did you mean "stdio"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ferr := ParseServer("tool/x.yaml", []byte(tc.yaml), env(nil))
			if ferr == nil || !strings.Contains(ferr.Error(), tc.want) {
				t.Errorf("error = %v, want %q", ferr, tc.want)
			}
			if tc.name == "nothing close" && strings.Contains(ferr.Error(), "did you mean") {
				t.Errorf("error = %v, suggests a key far from the one written", ferr)
			}
		})
	}
	// In mcpmux.yaml too, at any depth.
	for yaml, want := range map[string]string{
		"timout: 10s\n": `unknown field "timout" at top level: did you mean "timeout"?`,
		"profiles:\n  a:\n    tool_blacklst: []\n":                   `unknown field "tool_blacklst" at profiles[a]: did you mean "tool_blacklist"?`,
		"rewrite:\n  - name: r\n    tools: [x]\n    mesage: no\n":    `did you mean "message"?`,
		"rewrite:\n  - name: r\n    fallback: {tool: x, argz: {}}\n": `did you mean "args"?`,
		"command: x\n": `unknown field "command" at top level`,
	} {
		_, ferr := ParseSettings("mcpmux.yaml", []byte(yaml), env(nil))
		if ferr == nil || !strings.Contains(ferr.Error(), want) {
			t.Errorf("%q: error = %v, want %q", yaml, ferr, want)
		}
	}
}

func TestClosest(t *testing.T) {
	valid := []string{"name", "tool_command", "args", "env", "url", "headers", "timeout", "tool_timeouts", "session"}
	for key, want := range map[string]string{
		"nmae":         "name",
		"Name":         "name",
		"tool-command": "tool_command",
		"timeouts":     "timeout", // one edit from timeout, many from tool_timeouts
		"urls":         "url",
		"en":           "env",
		"xyz":          "",
		"ar":           "", // two edits from args, and short
		"headerss":     "headers",
	} {
		if got := closest(key, valid); got != want {
			t.Errorf("closest(%q) = %q, want %q", key, got, want)
		}
	}
}

// A YAML syntax error points at the line to edit, not the one before it
// (yaml.v3 prints some of its lines 0-based).
func TestYAMLSyntaxErrorLines(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		line int
	}{
		{"name: a\ntool_command: x\nargs: [\"a\", \"b\"\n", 3},          // a list never closed
		{"name: a\ntool_command: x\nargs: [\"a\", \"b\"\nenv: {}\n", 3}, // ... and more keys after it
		{"name: a\ntool_command: x\nenv:\n  A: b\n B: c\n", 5},          // a key indented less than its siblings
		{"name: a\ntool_command: x\nenv:\n  A: b\n   B: c\n", 5},        // ... or more
		{"name: a\ntool_command: x\n- a\n", 3},                          // a list item in a mapping
		{"name: a\ntool_command: x\nenv:\n  A: \"b\n", 4},               // a quote never closed
		{"name: a\ntool_command: x\n\targs: []\n", 3},                   // a tab
		{"env: {A: b\n", 1},                    // a mapping never closed, on line 1
		{"name: a\nargs:\n  - b\n  c: d\n", 3}, // a key among list items
	} {
		_, ferr := ParseServer("tool/x.yaml", []byte(tc.yaml), env(nil))
		if ferr == nil || !strings.Contains(ferr.Error(), "invalid YAML") {
			t.Errorf("%q: error = %v, want invalid YAML", tc.yaml, ferr)
			continue
		}
		if ferr.Line != tc.line {
			t.Errorf("%q: line %d, want %d (%v)", tc.yaml, ferr.Line, tc.line, ferr)
		}
	}
}
