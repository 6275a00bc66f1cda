// Package importer converts the MCP server lists of client configs — Claude
// Desktop's claude_desktop_config.json, Cursor's .cursor/mcp.json (both
// {"mcpServers": {...}}) and VS Code's .vscode/mcp.json ({"servers": {...}})
// — into mcpmux tool server files.
//
// It is pure: [Parse] turns the bytes of a client config into servers and
// notes, [Render] turns one server into the bytes of a tool/<name>.yaml.
// Reading and writing files is the caller's job.
//
// Values are kept as the client config has them, secrets included (it is
// the user's own file), but nothing this package reports — errors and notes
// — contains a value: only names of servers, fields, keys and variables.
package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpmux/mcpmux/config"
)

// Format is the shape of a client config.
type Format string

// The formats Parse understands.
const (
	// FormatMCPServers is {"mcpServers": {...}}: Claude Desktop, Claude
	// Code, Cursor, Windsurf.
	FormatMCPServers Format = "mcpServers"
	// FormatVSCode is {"servers": {...}, "inputs": [...]}: VS Code's
	// mcp.json, or its settings.json with the same under "mcp".
	FormatVSCode Format = "servers"
)

// Describe names the clients that write f.
func (f Format) Describe() string {
	if f == FormatVSCode {
		return "VS Code"
	}
	return "Claude Desktop / Cursor"
}

// Options control Parse. The zero value is valid.
type Options struct {
	// WorkspaceFolder replaces ${workspaceFolder} (VS Code, Cursor): the
	// directory holding the .vscode or .cursor directory of the file. Empty
	// means unknown; such references then become ${oc.env:WORKSPACE_FOLDER}.
	WorkspaceFolder string
}

// Result is what Parse found in a client config.
type Result struct {
	Format Format
	// Entries are the servers to write, sorted by name; their names are
	// valid mcpmux server names and unique, ignoring case (so that their
	// files do not collide on a case-insensitive file system).
	Entries []*Entry
	// Invalid are the servers that cannot be imported, sorted by source name.
	Invalid []*EntryError
	// Ignored are servers left out on purpose (mcpmux itself).
	Ignored []*EntryError
	// Warnings concern the file as a whole.
	Warnings []string
}

// Entry is one server to write.
type Entry struct {
	// Source is the server's name in the client config.
	Source string
	// Server holds the values to write. Type is "stdio", "http" or "sse";
	// strings are in mcpmux's ${...} syntax.
	Server *config.Server
	// Notes explain what had to change; Render writes them as comments.
	Notes []Note
}

// Note says why a value differs from the client config. Field is a key of
// the tool file ("" for the server as a whole), Key a key inside it (an env
// variable or header name) or "".
type Note struct {
	Field, Key, Text string
}

func (n Note) String() string {
	switch {
	case n.Field == "":
		return n.Text
	case n.Key == "":
		return n.Field + ": " + n.Text
	}
	return n.Field + "." + n.Key + ": " + n.Text
}

// EntryError is a server of the client config that was not imported.
type EntryError struct {
	Source string // its name in the client config
	Err    error
}

func (e *EntryError) Error() string { return fmt.Sprintf("server %q: %v", e.Source, e.Err) }
func (e *EntryError) Unwrap() error { return e.Err }

// Parse reads a client config. It fails only if the file as a whole is
// unusable (not JSON, no server list); problems with one server are
// reported in Result.Invalid.
func Parse(data []byte, opts *Options) (*Result, error) {
	if opts == nil {
		opts = &Options{}
	}
	clean := stripJSONC(data)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(clean, &top); err != nil {
		return nil, jsonError(clean, err)
	}
	res := &Result{}
	servers, err := findServers(top, res)
	if err != nil {
		return nil, err
	}
	t := &translator{inputs: map[string]input{}, workspace: opts.WorkspaceFolder}
	if raw, ok := top["inputs"]; ok && res.Format == FormatVSCode {
		var inputs []input
		if err := json.Unmarshal(raw, &inputs); err != nil {
			res.Warnings = append(res.Warnings, `"inputs" is not a list of inputs; their descriptions are left out of the notes`)
		}
		for _, in := range inputs {
			t.inputs[in.ID] = in
		}
	}

	taken := map[string]bool{} // lower-cased names already used
	for _, source := range slices.Sorted(maps.Keys(servers)) {
		e, err := convert(source, servers[source], t)
		switch {
		case errors.Is(err, errSelf):
			res.Ignored = append(res.Ignored, &EntryError{source, err})
			continue
		case err != nil:
			res.Invalid = append(res.Invalid, &EntryError{source, err})
			continue
		}
		name := uniqueName(SanitizeName(source), taken)
		if name != source {
			e.Notes = append([]Note{{"name", "", fmt.Sprintf("renamed from %q: mcpmux names use letters, digits, '_', '.', '-', unique ignoring case", source)}}, e.Notes...)
		}
		e.Server.Name = name
		res.Entries = append(res.Entries, e)
	}
	slices.SortFunc(res.Entries, func(a, b *Entry) int { return strings.Compare(a.Server.Name, b.Server.Name) })
	return res, nil
}

// findServers returns the server list of a client config and sets the
// format it was found in.
func findServers(top map[string]json.RawMessage, res *Result) (map[string]json.RawMessage, error) {
	raw, key := top["mcpServers"], "mcpServers"
	res.Format = FormatMCPServers
	if raw == nil {
		raw, key = top["servers"], "servers"
		res.Format = FormatVSCode
	}
	if raw == nil { // VS Code's settings.json: {"mcp": {"servers": ...}}
		var mcp struct {
			Servers json.RawMessage `json:"servers"`
		}
		if json.Unmarshal(top["mcp"], &mcp) == nil && mcp.Servers != nil {
			raw, key = mcp.Servers, "mcp.servers"
		}
	}
	if raw == nil {
		return nil, errors.New(`no server list found: expected "mcpServers" (Claude Desktop, Cursor) or "servers" (VS Code) at the top level`)
	}
	if top["mcpServers"] != nil && top["servers"] != nil {
		return nil, errors.New(`both "mcpServers" and "servers" are present: cannot tell which client wrote the file`)
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(raw, &servers); err != nil || servers == nil {
		return nil, fmt.Errorf("%q is not an object mapping server names to servers", key)
	}
	return servers, nil
}

// errSelf marks an entry that starts mcpmux: importing it would make
// mcpmux start itself, recursively.
var errSelf = errors.New("it runs mcpmux itself")

// errSelfNamed marks an entry named mcpmux that runs something else: the
// way the client configs of docs/clients.md reach mcpmux over HTTP or in a
// container. Importing it would make mcpmux (or its container) a tool
// server of itself, and its tools would take mcpmux's own namespace.
var errSelfNamed = fmt.Errorf("%w: it is named mcpmux, which is how a client reaches mcpmux (over HTTP or in a container); rename it in the client config to import it anyway", errSelf)

// known are the fields of a server entry that are imported; other fields
// (autoApprove, envFile, ...) are reported in a note.
var known = []string{"type", "command", "args", "env", "url", "serverUrl", "headers", "cwd", "disabled"}

// convert turns one server entry into an Entry; the caller sets its name.
func convert(source string, raw json.RawMessage, t *translator) (*Entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, errors.New("not a JSON object")
	}
	e := &Entry{Source: source, Server: &config.Server{}}
	s := e.Server
	var err error
	get := func(field string, fn func(any) error) {
		if v, ok := m[field]; ok && v != nil && err == nil {
			if ferr := fn(v); ferr != nil {
				err = fmt.Errorf("%s: %w", field, ferr)
			}
		}
	}
	typ := ""
	get("type", func(v any) error { return asString(v, &typ) })
	get("command", func(v any) error { return asString(v, &s.Command) })
	get("args", func(v any) error { return asStrings(v, &s.Args) })
	get("env", func(v any) error { return asStringMap(v, &s.Env, "env", &e.Notes) })
	get("url", func(v any) error { return asString(v, &s.URL) })
	get("serverUrl", func(v any) error { return asString(v, &s.URL) }) // Windsurf
	get("headers", func(v any) error { return asStringMap(v, &s.Headers, "headers", &e.Notes) })
	get("cwd", func(v any) error { return asString(v, &s.Cwd) })
	get("disabled", func(v any) error {
		b, ok := v.(bool)
		if !ok {
			return errors.New("want true or false")
		}
		if b {
			s.Enabled = new(false)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.Type, err = transport(typ, s); err != nil {
		return nil, err
	}
	if filepath.Base(s.Command) == "mcpmux" {
		return nil, errSelf
	}
	if strings.EqualFold(source, "mcpmux") {
		return nil, errSelfNamed
	}

	var ignored []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(known, k) {
			ignored = append(ignored, k)
		}
	}
	if len(ignored) > 0 {
		e.Notes = append(e.Notes, Note{"", "", "not imported (mcpmux has no such field): " + strings.Join(ignored, ", ")})
	}

	translateAll(e, t)
	if s.Cwd != "" && !filepath.IsAbs(s.Cwd) && !strings.HasPrefix(s.Cwd, "${") {
		if t.workspace != "" {
			s.Cwd = filepath.Join(t.workspace, s.Cwd)
		} else {
			e.Notes = append(e.Notes, Note{"cwd", "", "a relative cwd is taken relative to the mcpmux config directory"})
		}
	}
	return e, nil
}

// transport maps a client's type to mcpmux's and checks that the entry has
// what that type needs.
func transport(typ string, s *config.Server) (string, error) {
	switch typ {
	case "":
		if s.URL != "" {
			typ = config.TransportStreamable
		} else {
			typ = config.TransportStdio
		}
	case "stdio":
		typ = config.TransportStdio
	case "http", "streamable-http", "streamable_http", "streamableHttp":
		typ = config.TransportStreamable
	case "sse":
		typ = config.TransportSSE
	default:
		return "", fmt.Errorf("type %q is not supported (stdio, http, streamable-http, sse)", typ)
	}
	switch {
	case s.Command != "" && s.URL != "":
		return "", errors.New("has both a command and a url")
	case typ == config.TransportStdio && s.Command == "":
		return "", errors.New("has no command (nor a url)")
	case typ != config.TransportStdio && s.URL == "":
		return "", fmt.Errorf("type %q needs a url", typ)
	case typ != config.TransportStdio && !strings.Contains(s.URL, "${"):
		// The message leaves the URL out: it may carry a token.
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", errors.New("url is not an http(s) URL")
		}
	}
	return typ, nil
}

// translateAll rewrites the variable references of every string of e.
func translateAll(e *Entry, t *translator) {
	s := e.Server
	s.Command = t.translate(s.Command, "tool_command", "", &e.Notes)
	for i, a := range s.Args {
		s.Args[i] = t.translate(a, "args", "", &e.Notes)
	}
	for k, v := range s.Env {
		s.Env[k] = t.translate(v, "env", k, &e.Notes)
	}
	s.URL = t.translate(s.URL, "url", "", &e.Notes)
	for k, v := range s.Headers {
		s.Headers[k] = t.translate(v, "headers", k, &e.Notes)
	}
	s.Cwd = t.translate(s.Cwd, "cwd", "", &e.Notes)
	slices.SortStableFunc(e.Notes, func(a, b Note) int {
		return strings.Compare(a.Field+"\x00"+a.Key, b.Field+"\x00"+b.Key)
	})
}

func asString(v any, out *string) error {
	s, ok := v.(string)
	if !ok {
		return errors.New("want a string")
	}
	*out = s
	return nil
}

func asStrings(v any, out *[]string) error {
	list, ok := v.([]any)
	if !ok {
		return errors.New("want a list of strings")
	}
	for i, x := range list {
		s, ok := scalar(x)
		if !ok {
			return fmt.Errorf("item %d is not a string", i)
		}
		*out = append(*out, s)
	}
	return nil
}

// asStringMap reads env or headers. Numbers and booleans become strings, as
// clients pass them on; null (VS Code: "remove from the environment") has
// no equivalent and is left out with a note.
func asStringMap(v any, out *map[string]string, field string, notes *[]Note) error {
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("want an object of strings")
	}
	*out = make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] == nil {
			*notes = append(*notes, Note{field, k, "null (unset) has no equivalent in mcpmux and is left out"})
			continue
		}
		s, ok := scalar(m[k])
		if !ok {
			return fmt.Errorf("%s is not a string", k)
		}
		(*out)[k] = s
	}
	return nil
}

func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// jsonError describes a JSON decoding error with the line and column of the
// user's file. Go's messages quote at most one character of the input, so
// no value leaks into the error.
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		if strings.TrimSpace(string(data)) == "" {
			return errors.New("invalid JSON: the file is empty")
		}
		line, col := position(data, syn.Offset)
		return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, syn)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Errorf("not a client config: the top level is a JSON %s, want an object", typ.Value)
	}
	return fmt.Errorf("invalid JSON: %v", err)
}

// position turns a byte offset just past an error into a 1-based line and
// column.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:max(offset-1, 0)]
	line = bytes.Count(before, []byte("\n")) + 1
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// SanitizeName turns a client's server name into a valid mcpmux server
// name: runs of characters other than letters, digits, '_', '.' and '-'
// become '-', leading and trailing punctuation is dropped, and the result is
// at most 64 bytes (exposed tool names must fit in 64 anyway).
func SanitizeName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r == '_' || r == '.' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !ok {
			dash = true
			continue
		}
		if dash && b.Len() > 0 {
			b.WriteByte('-')
		}
		dash = false
		b.WriteRune(r)
	}
	name := strings.TrimLeft(b.String(), "_.-")
	if len(name) > 64 {
		name = name[:64]
	}
	name = strings.TrimRight(name, ".-")
	if name == "" {
		return "server"
	}
	return name
}

// uniqueName returns name, or name-2, name-3, ... if that is taken
// (ignoring case), and marks the result taken.
func uniqueName(name string, taken map[string]bool) string {
	candidate := name
	for i := 2; taken[strings.ToLower(candidate)]; i++ {
		candidate = fmt.Sprintf("%s-%d", name, i)
	}
	taken[strings.ToLower(candidate)] = true
	return candidate
}
