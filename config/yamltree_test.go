package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// viaYAMLv3 is what koanf's own YAML parser returned: yaml.v3's Unmarshal
// into a map, keys made strings.
func viaYAMLv3(data []byte) (map[string]any, error) {
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return stringKeys(m).(map[string]any), nil
}

func stringKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = stringKeys(e)
		}
		return v
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = stringKeys(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = stringKeys(e)
		}
	}
	return v
}

// yamlParser reads documents as yaml.v3's Unmarshal does: types, tags,
// anchors, aliases, merge keys; and rejects what it rejects.
func TestYAMLParserMatchesYAMLv3(t *testing.T) {
	for _, doc := range []string{
		"",
		"# only a comment\n",
		"name: x\nargs: [a, 1, 2.5, true, null, '3']\nenv: {A: b, N: 10}\n",
		"a:\n  b:\n    c: [1, {d: e}]\n",
		"defaults: &d {timeout: 30s, env: {A: '1'}}\nserver:\n  <<: *d\n  timeout: 90s\n",
		"a: &a {x: 1, y: 2}\nb: &b {y: 3, z: 4}\nc:\n  <<: [*a, *b]\n  w: 0\n",
		"list: &l [1, 2]\nagain: *l\nstr: &s text\nref: *s\n",
		"1: one\ntrue: yes\n2.5: f\n",
		"t: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\nbin: !!binary aGVsbG8=\nstr: !!str 123\n",
		"multi: |\n  line 1\n  line 2\nfolded: >\n  a\n  b\n",
		"empty:\nnull_value: ~\n",
		"a: 1\na: 2\n",
		"a:\n  x: 1\n  y: 2\n  x: 3\n",
		"- a\n- b\n",
		"just a string\n",
		"a: [unclosed\n",
		"a: *nowhere\n",
		"name: by\n  tool_command: x\n",
	} {
		want, werr := viaYAMLv3([]byte(doc))
		got, gerr := yamlParser{}.Unmarshal([]byte(doc))
		if (werr != nil) != (gerr != nil) {
			t.Errorf("%q: yaml.v3 error %v, yamlParser error %v", doc, werr, gerr)
			continue
		}
		if werr != nil {
			if yamlErrorLine(werr) != yamlErrorLine(gerr) {
				t.Errorf("%q: errors name lines %d and %d: %v / %v", doc, yamlErrorLine(werr), yamlErrorLine(gerr), werr, gerr)
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n yamlParser %#v\n yaml.v3    %#v", doc, got, want)
		}
	}
}

// Aliases cannot blow up: a "billion laughs" document and an alias of its
// own container are errors, not hours or a crash.
func TestYAMLParserBoundsAliases(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	if _, err := (yamlParser{}).Unmarshal([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "too many values") {
		t.Errorf("billion laughs: %v", err)
	}
	if _, err := (yamlParser{}).Unmarshal([]byte("a: &a {b: *a}\n")); err == nil {
		t.Error("an alias inside its own anchor was accepted")
	}
}

// FuzzYAMLParser: yamlParser reads every document as yaml.v3's Unmarshal
// into a map does (koanf's former parser), or rejects it as that does.
// Seeds are in testdata/fuzz/FuzzYAMLParser.
func FuzzYAMLParser(f *testing.F) {
	for _, s := range []string{"a: 1\n", "a: &a {x: 1}\nb:\n  <<: *a\n", "- 1\n", "a: [1, {b: c}]\n", "1: 2\n00: x\n", "? \n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := viaYAMLv3(data)
		got, gerr := yamlParser{}.Unmarshal(data)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%q: yaml.v3 error %v, yamlParser error %v", data, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n yamlParser %#v\n yaml.v3    %#v", data, got, want)
		}
	})
}
