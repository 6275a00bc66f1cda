package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml "go.yaml.in/yaml/v3"

	"github.com/mcpmux/mcpmux/rewrite"
)

// The JSON Schemas in schema/ describe the files this package reads, for
// editors. These tests keep them from drifting: every koanf field has a
// documented property of a fitting type and every property is a field, and
// a real validator agrees with the loader on the shipped files and on
// examples of good and bad files.

const schemaLine = "# yaml-language-server: $schema=../schema/tool.schema.json"

func readSchema(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("schema", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return doc
}

// compileSchema compiles schema/file; the compiler also checks it against
// the draft 2020-12 meta-schema.
func compileSchema(t *testing.T, file string) *jsonschema.Schema {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("schema", file))
	if err != nil {
		t.Fatal(err)
	}
	sch, err := jsonschema.NewCompiler().Compile(path)
	if err != nil {
		t.Fatalf("compiling %s: %v", file, err)
	}
	return sch
}

// yamlInstance decodes YAML as the JSON value a schema validates.
func yamlInstance(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("YAML: %v\n%s", err, data)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// koanfFields maps the koanf keys of struct type typ to their field types.
func koanfFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range typ.Fields() {
		if tag := f.Tag.Get("koanf"); tag != "" && tag != "-" {
			out[tag] = f.Type
		}
	}
	return out
}

func sub(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m, _ = m[p].(map[string]any)
	}
	return m
}

func TestSchemaMatchesStructs(t *testing.T) {
	tool, settings := readSchema(t, "tool.schema.json"), readSchema(t, "mcpmux.schema.json")
	for _, c := range []struct {
		typ    reflect.Type
		root   map[string]any // the schema document, for $ref
		object map[string]any // the schema of the struct
	}{
		{reflect.TypeFor[Server](), tool, tool},
		{reflect.TypeFor[Auth](), tool, sub(tool, "$defs", "auth")},
		{reflect.TypeFor[Settings](), settings, settings},
		{reflect.TypeFor[Profile](), settings, sub(settings, "$defs", "profile")},
		{reflect.TypeFor[Rule](), settings, sub(settings, "$defs", "rule")},
		{reflect.TypeFor[Fallback](), settings, sub(settings, "$defs", "fallback")},
		{reflect.TypeFor[Journal](), settings, sub(settings, "properties", "journal")},
		{reflect.TypeFor[Replay](), settings, sub(settings, "properties", "replay")},
	} {
		name := c.typ.Name()
		if c.object == nil {
			t.Errorf("%s: no schema", name)
			continue
		}
		if c.object["additionalProperties"] != false {
			t.Errorf("%s: schema must set additionalProperties: false, as the loader rejects unknown keys", name)
		}
		props := sub(c.object, "properties")
		fields := koanfFields(c.typ)
		for _, key := range slices.Sorted(maps.Keys(fields)) {
			prop, ok := props[key].(map[string]any)
			if !ok {
				t.Errorf("%s field %q is missing from the schema", name, key)
				continue
			}
			if d, _ := prop["description"].(string); strings.TrimSpace(d) == "" {
				t.Errorf("%s.%s: schema property has no description", name, key)
			}
			if err := accepts(c.root, prop, fields[key]); err != nil {
				t.Errorf("%s.%s: %v", name, key, err)
			}
		}
		for key := range props {
			if _, ok := fields[key]; !ok {
				t.Errorf("schema property %q of %s is no koanf field of config.%s", key, name, name)
			}
		}
	}
	if !reflect.DeepEqual(sub(tool, "$defs", "duration"), sub(settings, "$defs", "duration")) {
		t.Error("the duration definitions of the two schemas differ")
	}
}

// The schema's lists of names are the lists the loader checks against:
// the kinds of rewrite rules (package rewrite's kinds table) and the meta
// tools (MetaToolNames, which package aggregator checks against its
// metaTable).
func TestSchemaEnumsMatchTheirTables(t *testing.T) {
	settings := readSchema(t, "mcpmux.schema.json")
	for _, c := range []struct {
		where string
		enum  []any
		want  []string
	}{
		{"$defs.rule.properties.kind.enum", sub(settings, "$defs", "rule", "properties", "kind")["enum"].([]any), rewrite.KindNames()},
		{"properties.meta_tools.items.enum", sub(settings, "properties", "meta_tools", "items")["enum"].([]any), MetaToolNames},
	} {
		var got []string
		for _, v := range c.enum {
			got = append(got, v.(string))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("schema/mcpmux.schema.json %s is %q, want %q", c.where, got, c.want)
		}
	}
}

// accepts checks that a schema property's type fits the Go type of its
// field: durations use $defs/duration, the rest the matching JSON type.
func accepts(root, prop map[string]any, typ reflect.Type) error {
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	ref, _ := prop["$ref"].(string)
	if typ == durationType {
		if ref != "#/$defs/duration" {
			return fmt.Errorf("a duration field must use $ref #/$defs/duration")
		}
		return nil
	}
	if typ == sizeType {
		if ref != "#/$defs/size" {
			return fmt.Errorf("a size field must use $ref #/$defs/size")
		}
		return nil
	}
	if ref != "" {
		prop = sub(root, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
	}
	var types []string
	switch v := prop["type"].(type) {
	case string:
		types = []string{v}
	case []any:
		for _, x := range v {
			types = append(types, x.(string))
		}
	}
	want := map[reflect.Kind]string{reflect.Bool: "boolean", reflect.Int: "integer", reflect.String: "string", reflect.Slice: "array", reflect.Map: "object", reflect.Struct: "object"}[typ.Kind()]
	if !slices.Contains(types, want) {
		return fmt.Errorf("schema type %v does not allow %s for Go type %v", types, want, typ)
	}
	if typ.Kind() == reflect.Map && typ.Elem() == durationType {
		if ap, _ := prop["additionalProperties"].(map[string]any); ap["$ref"] != "#/$defs/duration" {
			return fmt.Errorf("values must use $ref #/$defs/duration")
		}
	}
	return nil
}

func TestShippedToolFilesMatchTheSchema(t *testing.T) {
	sch := compileSchema(t, "tool.schema.json")
	files, err := filepath.Glob(filepath.Join(ToolDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped tool files: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if first != schemaLine {
			t.Errorf("%s: first line is %q, want %q for editors", f, first, schemaLine)
		}
		ref := strings.TrimPrefix(schemaLine, "# yaml-language-server: $schema=")
		if _, err := os.Stat(filepath.Join(filepath.Dir(f), ref)); err != nil {
			t.Errorf("%s: its $schema path does not resolve: %v", f, err)
		}
		if err := sch.Validate(yamlInstance(t, data)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if _, ferr := ParseServer(f, data, env(nil)); ferr != nil {
			t.Errorf("%s: %v", f, ferr)
		}
	}
	for name, doc := range miroflowShaped {
		if err := sch.Validate(yamlInstance(t, []byte(doc))); err != nil {
			t.Errorf("MiroFlow-shaped %s: %v", name, err)
		}
	}
}

// schemaExample is a file on which the schema and the loader must agree,
// unless loaderOnly says the loader deliberately accepts more.
type schemaExample struct {
	doc        string
	valid      bool
	loaderOnly bool // the loader accepts it, the schema flags it as a likely mistake
}

var toolExamples = []schemaExample{
	{doc: "tool_command: npx\nargs: [\"-y\", \"@modelcontextprotocol/server-everything\"]\n", valid: true},
	{doc: `name: tool-code
type: stdio
tool_command: python
args: ["-m", "src.tool.mcp_servers.python_server", 3, true]
env: {E2B_API_KEY: "${oc.env:E2B_API_KEY,}", DEFAULT_TIMEOUT: 1800, DEBUG: false}
enabled: false
prefix: ""
cwd: workspace
timeout: 90s
tool_timeouts: {run_python_code: 30m, quick: 5, half: 0.5}
session: per-client
idle_timeout: 600
connect_timeout: "1.5"
max_concurrency: 4
`, valid: true},
	{doc: "url: https://docs.example.com/mcp\nheaders: {Authorization: \"Bearer ${env:TOKEN}\"}\ntimeout: 1h30m\n", valid: true},
	{doc: "type: sse\nurl: http://127.0.0.1:3001/sse\n", valid: true},
	{doc: "type: streamable-http\nurl: \"${oc.env:DOCS_URL,https://docs.example.com/mcp}\"\n", valid: true},
	{doc: "tool_command: x\ntimeout: \"${oc.env:TIMEOUT,15m}\"\n", valid: true},
	{doc: "tool_command: x\nenv:\nargs:\nheaders:\ntool_timeouts:\n", valid: true}, // empty collections, as MiroFlow writes them

	{doc: "tool_comand: typo\n"},
	{doc: "tool_command: x\ntool_comand: typo\n"},
	{doc: "env: {A: b}\n"},
	{doc: "tool_command: x\nurl: https://h/mcp\n"},
	{doc: "type: sse\ntool_command: x\n"},
	{doc: "type: stdio\nurl: https://h/mcp\n"},
	{doc: "type: websocket\nurl: https://h/mcp\n"},
	{doc: "url: ftp://h/x\n"},
	{doc: "name: -bad\ntool_command: x\n"},
	{doc: "tool_command: x\nprefix: a b\n"},
	{doc: "tool_command: x\nargs: [{nested: map}]\n"},
	{doc: "tool_command: x\nenv: [A=b]\n"},
	{doc: "tool_command: x\nenabled: \"false\"\n"},
	{doc: "tool_command: x\nsession: sometimes\n"},
	{doc: "tool_command: x\ntimeout: forever\n"},
	{doc: "tool_command: x\ntimeout: -5s\n"},
	{doc: "tool_command: x\ntimeout: -5\n"},
	{doc: "tool_command: x\ntool_timeouts: {a: soon}\n"},
	{doc: "tool_command: x\nidle_timeout: [1]\n"},
	{doc: "tool_command: x\nmax_concurrency: -1\n"},
	{doc: "tool_command: x\nmax_concurrency: many\n"},

	{doc: "url: https://mcp.linear.app/mcp\nauth: oauth\n", valid: true},
	{doc: "url: https://h/mcp\nauth: {type: oauth, client_id: a, client_secret: \"${env:TOKEN}\", scopes: [read, \"write:all\"], redirect_port: 8765, client_metadata_url: https://m.example/client.json}\n", valid: true},
	{doc: "url: https://h/mcp\nauth: {type: client_credentials, client_id: a, client_secret: b}\n", valid: true},
	{doc: "url: https://h/mcp\nauth: {type: client_credentials, client_id: a, private_key_file: k.pem, signing_algorithm: ES256}\n", valid: true},
	{doc: "url: https://h/mcp\nauth: {type: token_file, token_file: /run/secrets/t}\n", valid: true},
	{doc: "url: https://h/mcp\nauth: basic\n"},
	{doc: "url: https://h/mcp\nauth: {client_id: a}\n"},
	{doc: "url: https://h/mcp\nauth: {type: oauth, redirect_port: -1}\n"},
	{doc: "url: https://h/mcp\nauth: {type: oauth, scopes: [\"a b\"]}\n"},
	{doc: "url: https://h/mcp\nauth: {type: oauth, client_metadata_url: \"https://m.example/\"}\n"},
	{doc: "url: https://h/mcp\nauth: {type: oauth, extra: 1}\n"},
	{doc: "url: https://h/mcp\nauth: {type: client_credentials, client_id: a, private_key: k, signing_algorithm: none}\n"},
	{doc: "url: https://h/mcp\nauth: [oauth]\n"},

	// An empty scalar reads as absent; the schema flags it, since
	// "prefix:" with nothing after it was most likely meant as "".
	{doc: "tool_command: x\nprefix:\n", loaderOnly: true},
	{doc: "tool_command: x\ntimeout:\n", loaderOnly: true},
}

var settingsExamples = []schemaExample{
	{doc: "", valid: true},
	{doc: "# only a comment\n", valid: true},
	{doc: `separator: "__"
timeout: 900s
connect_timeout: 60
tool_blacklist:
  - ["tool-code", "download_file_from_sandbox_to_local"]
profiles:
  browsing-agent:
    tool_config: [tool-searching, playwright]
    tool_blacklist: [["tool-searching", "google_search"]]
  everything: {}
rewrite:
  - name: no-benchmark-answers
    tools: ["*scrape*", "*fetch*"]
    block_urls: ["huggingface.co/datasets/**", "huggingface.co/spaces/**"]
    message: "You are trying to scrape a Hugging Face dataset for answers."
    redact: true
  - name: scrape-fallback
    tools: ["*scrape*"]
    on_error: "unhandled errors"
    fallback: {tool: "fetch__fetch", args: {url: "{{url}}", max_length: 5000}}
`, valid: true},

	{doc: "token_file: secrets/token\nallowed_origins: [\"https://app.example.com\", \"http://devbox:*\"]\nmax_request_bytes: 4MiB\nmax_result_bytes: 1048576\n", valid: true},
	{doc: "max_request_bytes: \"512 KiB\"\nmax_result_bytes: 16MB\n", valid: true},
	{doc: "max_request_bytes: lots\n"},
	{doc: "max_result_bytes: -1\n"},
	{doc: "max_result_bytes: 4 MiBs\n"},
	{doc: "allowed_origins: [\"https://app.example.com/path\"]\n"},
	{doc: "allowed_origins: [\"ftp://h\"]\n"},
	{doc: "separator: \"::\"\n"},
	{doc: "separater: \"__\"\n"},
	{doc: "timeout: 1 day\n"},
	{doc: "tool_blacklist: [[tool-code]]\n"},
	{doc: "tool_blacklist: [[tool-code, \"\"]]\n"},
	{doc: "tool_blacklist: [tool-code]\n"},
	{doc: "profiles: {bad name: {}}\n"},
	{doc: "profiles: {a: }\n"},
	{doc: "profiles: {a: {tool_config: [x], extra: 1}}\n"},
	{doc: "rewrite: [{name: x, tool: y}]\n"},
	{doc: "rewrite: [{name: x, fallback: {tool: t, arg: {}}}]\n"},
	{doc: "rewrite: [{name: x, redact: \"yes\"}]\n"},
	{doc: "meta_tools: [status, find_tools, call_tool]\n", valid: true},
	{doc: "journal: {dir: runs/journal}\n", valid: true},
	{doc: "journal: {dir: /var/log/mcpmux, max_bytes: 10MiB}\nreplay: {from: runs/yesterday, miss: call}\n", valid: true},
	{doc: "replay: {from: runs/yesterday, catalog: recorded}\n", valid: true},
	{doc: "replay: {from: runs/yesterday, miss: error, catalog: live}\n", valid: true},
	{doc: "journal: {}\n"},
	{doc: "journal: {dir: j, max_byte: 10MiB}\n"},
	{doc: "journal: runs\n"},
	{doc: "replay: {miss: error}\n"},
	{doc: "replay: {from: r, miss: skip}\n"},
	{doc: "replay: {from: r, catalog: cached}\n"},
	{doc: "replay: {from: r, catalog: recorded, miss: call}\n"},
	{doc: "catalog: lazy\nalways: [\"filesystem__read_*\"]\nprofiles: {agent: {catalog: eager, always: [fetch]}}\n", valid: true},
	{doc: "catalog: sometimes\n"},
	{doc: "always: filesystem\n"},
	{doc: "profiles: {a: {catalog: lazier}}\n"},
	{doc: "meta_tools: [stats]\n"},
	{doc: "meta_tools: [status, status]\n"},
	{doc: "meta_tools: status\n"},
}

func TestSchemaAgreesWithLoader(t *testing.T) {
	lookup := env(map[string]string{"TOKEN": "t"})
	for _, c := range []struct {
		schema   string
		examples []schemaExample
		load     func([]byte) *FileError
	}{
		{"tool.schema.json", toolExamples, func(b []byte) *FileError { _, fe := ParseServer("tool/x.yaml", b, lookup); return fe }},
		{"mcpmux.schema.json", settingsExamples, func(b []byte) *FileError { _, fe := ParseSettings("mcpmux.yaml", b, lookup); return fe }},
	} {
		sch := compileSchema(t, c.schema)
		for _, ex := range c.examples {
			serr := sch.Validate(yamlInstance(t, []byte(ex.doc)))
			lerr := c.load([]byte(ex.doc))
			if (serr == nil) != ex.valid {
				t.Errorf("%s on\n%s\nschema says %v, want valid=%v", c.schema, ex.doc, serr, ex.valid)
			}
			if loaderOK := lerr == nil; loaderOK != (ex.valid || ex.loaderOnly) {
				t.Errorf("loader on\n%s\nsays %v, want valid=%v", ex.doc, lerr, ex.valid || ex.loaderOnly)
			}
		}
	}
}

// A shipped mcpmux.yaml, if there is one, is held to the same standard as
// the tool files: a schema line for editors, valid by schema and loader.
func TestShippedSettingsFileMatchesTheSchema(t *testing.T) {
	data, err := os.ReadFile(SettingsFile)
	if os.IsNotExist(err) {
		t.Skip("no shipped mcpmux.yaml")
	}
	if err != nil {
		t.Fatal(err)
	}
	const line = "# yaml-language-server: $schema=schema/mcpmux.schema.json"
	if first, _, _ := strings.Cut(string(data), "\n"); first != line {
		t.Errorf("%s: first line is %q, want %q for editors", SettingsFile, first, line)
	}
	if _, err := os.Stat(strings.TrimPrefix(line, "# yaml-language-server: $schema=")); err != nil {
		t.Errorf("its $schema path does not resolve: %v", err)
	}
	if err := compileSchema(t, "mcpmux.schema.json").Validate(yamlInstance(t, data)); err != nil {
		t.Errorf("%s: %v", SettingsFile, err)
	}
	if _, ferr := ParseSettings(SettingsFile, data, env(nil)); ferr != nil {
		t.Errorf("%s: %v", SettingsFile, ferr)
	}
}
