package config

import (
	"fmt"
	"reflect"
	"strings"
)

// clientSpellings are keys of MCP client configs (Claude Desktop, Cursor,
// VS Code, Windsurf, Cline) and other common spellings, with the key (or
// key: value) a tool file uses instead, or why there is none.
var clientSpellings = map[string]string{
	"command":           `did you mean "tool_command"?`,
	"cmd":               `did you mean "tool_command"?`,
	"arguments":         `did you mean "args"?`,
	"environment":       `did you mean "env"?`,
	"serverUrl":         `did you mean "url"?`,
	"server_url":        `did you mean "url"?`,
	"transport":         `did you mean "type"?`,
	"disabled":          `did you mean "enabled: false"?`,
	"working_directory": `did you mean "cwd"?`,
	"workingDirectory":  `did you mean "cwd"?`,
	"envFile":           `mcpmux reads no env file: set each variable under "env", e.g. API_KEY: "${oc.env:API_KEY}"`,
	"env_file":          `mcpmux reads no env file: set each variable under "env", e.g. API_KEY: "${oc.env:API_KEY}"`,
	"autoApprove":       `mcpmux has no approvals: every listed tool may be called (hide one with tool_blacklist in mcpmux.yaml)`,
	"alwaysAllow":       `mcpmux has no approvals: every listed tool may be called (hide one with tool_blacklist in mcpmux.yaml)`,
	"mcpServers":        `this is a client's config file: "mcpmux import FILE" turns it into one tool file per server`,
	"servers":           `this is a client's config file: "mcpmux import FILE" turns it into one tool file per server`,
}

// typeSpellings are other clients' names of the transports, for an unknown
// type: value.
var typeSpellings = map[string]string{
	"local":           TransportStdio, // opencode
	"command":         TransportStdio,
	"remote":          TransportStreamable, // opencode
	"streamable":      TransportStreamable,
	"streamableHTTP":  TransportStreamable,
	"streamable_http": TransportStreamable,
	"https":           TransportStreamable,
}

// keyHint says which key was meant by an unknown key at a path (mapstructure's
// "profiles[a]" split into its keys) of a value of type t, or "".
func keyHint(t reflect.Type, at []string, key string) string {
	valid := keysAt(t, at)
	if len(valid) == 0 {
		return ""
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if hint, ok := clientSpellings[key]; ok && t == reflect.TypeFor[Server]() && len(at) == 0 {
		return hint
	}
	if best := closest(key, valid); best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return ""
}

// keysAt lists the keys a value of type t accepts at path.
func keysAt(t reflect.Type, path []string) []string {
	for {
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
			continue
		case reflect.Map, reflect.Slice:
			if len(path) == 0 {
				return nil
			}
			t, path = t.Elem(), path[1:]
			continue
		case reflect.Struct:
		default:
			return nil
		}
		var keys []string
		var next reflect.Type
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			keys = append(keys, tag)
			if len(path) > 0 && tag == path[0] {
				next = f.Type
			}
		}
		if len(path) == 0 {
			return keys
		}
		if next == nil {
			return nil
		}
		t, path = next, path[1:]
	}
}

// closest returns the key of valid that key most likely misspells: the
// same once case, '-' and '_' are ignored, or within a small edit distance
// (one edit for short keys, two from six characters on); "" if none is
// close or two are equally close.
func closest(key string, valid []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	for _, v := range valid {
		if norm(v) == norm(key) {
			return v
		}
	}
	limit := 1
	if len(key) >= 6 {
		limit = 2
	}
	best, bestDist, tie := "", limit+1, false
	for _, v := range valid {
		switch d := editDistance(norm(key), norm(v)); {
		case d < bestDist:
			best, bestDist, tie = v, d, false
		case d == bestDist:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of two short strings, counting
// a swap of two neighbouring letters as one edit.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64 // not a misspelling of a config key
	}
	// d[i][j]: distance of a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
