package aggregator

import (
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmux/mcpmux/internal/testkit"
)

var clientNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestExposedName(t *testing.T) {
	long := strings.Repeat("x", 80)
	tests := []struct {
		prefix, tool string
		want         string // "" means: check only validity and the hash suffix
	}{
		{"tool-searching", "google_search", "tool-searching__google_search"},
		{"", "echo", "echo"},
		{"fs", "read.file", "fs__read_file_"}, // lossy: hash appended
		{"srv", "ünïcode", "srv___n_code_"},
		{"srv", long, ""},
	}
	for _, tt := range tests {
		got := ExposedName(tt.prefix, "__", tt.tool, 0)
		if !clientNameRE.MatchString(got) {
			t.Errorf("ExposedName(%q, %q) = %q: not a valid client tool name", tt.prefix, tt.tool, got)
		}
		switch {
		case tt.want == "":
		case strings.HasSuffix(tt.want, "_"):
			if !strings.HasPrefix(got, tt.want) || len(got) != len(tt.want)+hashLen {
				t.Errorf("ExposedName(%q, %q) = %q, want %q + %d hex digits", tt.prefix, tt.tool, got, tt.want, hashLen)
			}
		case got != tt.want:
			t.Errorf("ExposedName(%q, %q) = %q, want %q", tt.prefix, tt.tool, got, tt.want)
		}
		if again := ExposedName(tt.prefix, "__", tt.tool, 0); again != got {
			t.Errorf("ExposedName is not deterministic: %q then %q", got, again)
		}
	}
}

func TestExposedNameShorteningKeepsDistinctNamesDistinct(t *testing.T) {
	a := ExposedName("server", "__", strings.Repeat("a", 70)+"_one", 0)
	b := ExposedName("server", "__", strings.Repeat("a", 70)+"_two", 0)
	if a == b {
		t.Fatalf("two long names shortened to the same %q", a)
	}
	for _, n := range []string{a, b} {
		if len(n) > MaxNameLength || !strings.HasPrefix(n, "server__aaaa") {
			t.Errorf("shortened name %q: want a readable head and at most %d bytes", n, MaxNameLength)
		}
	}
	if got := ExposedName("s", "__", strings.Repeat("b", 60), 40); len(got) > 40 {
		t.Errorf("max 40: got %d bytes (%q)", len(got), got)
	}
}

func TestSplitName(t *testing.T) {
	known := map[string]bool{"a": true, "a__b": true, "tool-code": true}
	isKnown := func(p string) bool { return known[p] }
	tests := []struct {
		name, prefix, tool string
		ok                 bool
	}{
		{"a__x", "a", "x", true},
		{"a__b__c", "a", "b__c", true}, // first separator naming a known server
		{"tool-code__run_python", "tool-code", "run_python", true},
		{"nope__x", "", "nope__x", false},
		{"__x", "", "__x", false},
		{"plain", "", "plain", false},
		{"a__", "a", "", true},
	}
	for _, tt := range tests {
		prefix, tool, ok := SplitName(tt.name, "__", isKnown)
		if prefix != tt.prefix || tool != tt.tool || ok != tt.ok {
			t.Errorf("SplitName(%q) = %q, %q, %v; want %q, %q, %v", tt.name, prefix, tool, ok, tt.prefix, tt.tool, tt.ok)
		}
	}
}

func tools(names ...string) []*mcp.Tool {
	var ts []*mcp.Tool
	for _, n := range names {
		ts = append(ts, &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}})
	}
	return ts
}

func TestBuildCatalogNeverCollides(t *testing.T) {
	cat := BuildCatalog([]ServerFeatures{
		{Name: "a", Prefix: "a", Tools: tools("b__c", "x", "x.y", "x_y")},
		{Name: "a__b", Prefix: "a__b", Tools: tools("c")}, // a__b__c again
		{Name: "bare", Prefix: "", Tools: tools("a__x", "solo")},
	}, "__", 0)
	seen := map[string]bool{}
	for _, e := range cat.Entries() {
		if seen[e.Name] {
			t.Errorf("name %q exposed twice", e.Name)
		}
		seen[e.Name] = true
		if !clientNameRE.MatchString(e.Name) {
			t.Errorf("invalid exposed name %q", e.Name)
		}
		if e.Def.Name != e.Name {
			t.Errorf("definition of %q is named %q", e.Name, e.Def.Name)
		}
	}
	// a's b__c keeps the plain name (a sorts first); a__b's c gets a hash.
	if e, ok := cat.Lookup("a__b__c"); !ok || e.Server != "a" || e.Tool != "b__c" {
		t.Errorf("a__b__c = %+v, want tool b__c of server a", e)
	}
	if len(cat.Entries()) != 6 {
		t.Errorf("got %d entries, want 6 (the bare a__x clashes)", len(cat.Entries()))
	}
	if len(cat.Conflicts) != 1 || !strings.Contains(cat.Conflicts[0].Error(), `"a__x"`) {
		t.Errorf("Conflicts = %v, want the bare a__x clash", cat.Conflicts)
	}
	// Rebuilding from the same input gives the same names.
	again := BuildCatalog([]ServerFeatures{
		{Name: "bare", Prefix: "", Tools: tools("solo", "a__x")},
		{Name: "a__b", Prefix: "a__b", Tools: tools("c")},
		{Name: "a", Prefix: "a", Tools: tools("b__c", "x", "x.y", "x_y")},
	}, "__", 0)
	for _, e := range cat.Entries() {
		if e2, ok := again.Lookup(e.Name); !ok || e2.Server != e.Server || e2.Tool != e.Tool {
			t.Errorf("%q maps to %s/%s, then to %+v", e.Name, e.Server, e.Tool, e2)
		}
	}
}

func TestNormalizeInputSchema(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{nil, `{"type":"object"}`},
		{map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}, `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{map[string]any{"properties": map[string]any{}}, `{"properties":{},"type":"object"}`},
		{map[string]any{"type": "string"}, `{"type":"object"}`},
		{"garbage", `{"type":"object"}`},
	}
	for _, tt := range tests {
		got := testkit.JSON(t, normalizeInputSchema(tt.in))
		if got != tt.want {
			t.Errorf("normalizeInputSchema(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// Found by FuzzExposedName: a bound shorter than the hash suffix made
// ExposedName slice with a negative index and panic.
func TestExposedNameTinyBound(t *testing.T) {
	for max := 1; max <= minNameLength+1; max++ {
		got := ExposedName("server", "__", "a.tool", max)
		if len(got) > effectiveMax(max) || !clientNameRE.MatchString(got) {
			t.Errorf("max %d: %q", max, got)
		}
	}
}

// A server whose name is no valid tool-name prefix is told how its tools
// are named, and how to name them plainly; the advice holds.
func TestPrefixNote(t *testing.T) {
	note := PrefixNote("my.srv", "__")
	for _, want := range []string{"my_srv__<tool>_<hash>", `server named "my_srv"`, "prefix: my_srv"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	if got := ExposedName("my.srv", "__", "fetch", 0); !strings.HasPrefix(got, "my_srv__fetch_") {
		t.Errorf("ExposedName = %q, not what the note says", got)
	}
	if got := ExposedName("my_srv", "__", "fetch", 0); got != "my_srv__fetch" {
		t.Errorf("with the prefix the note advises: %q", got)
	}
	for _, prefix := range []string{"my-srv", "my_srv", "", "A9"} {
		if note := PrefixNote(prefix, "__"); note != "" {
			t.Errorf("PrefixNote(%q) = %q, want none", prefix, note)
		}
	}
}
