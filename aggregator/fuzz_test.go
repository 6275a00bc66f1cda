package aggregator

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Fuzz targets; seeds are in testdata/fuzz/. Run one for longer with
//
//	go test -run '^$' -fuzz '^FuzzExposedName$' -fuzztime 5m ./aggregator/

var nameCharsRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// Exposed names are always valid for clients, bounded and deterministic.
func FuzzExposedName(f *testing.F) {
	f.Add("tool-searching", "__", "google_search", 0)
	f.Add("", "__", "", 0)
	f.Add("fs", "__", "read.file", 64)
	f.Add("srv", "-", "ünïcode\x00\xff", 12)
	f.Add("s", "__", strings.Repeat("b", 100), 1)
	f.Fuzz(func(t *testing.T, prefix, sep, tool string, max int) {
		got := ExposedName(prefix, sep, tool, max)
		limit := effectiveMax(max)
		if !nameCharsRE.MatchString(got) {
			t.Fatalf("ExposedName(%q, %q, %q, %d) = %q: not a valid client name", prefix, sep, tool, max, got)
		}
		if len(got) > limit {
			t.Fatalf("ExposedName(%q, %q, %q, %d) = %q: %d bytes, over %d", prefix, sep, tool, max, got, len(got), limit)
		}
		if again := ExposedName(prefix, sep, tool, max); again != got {
			t.Fatalf("not deterministic: %q then %q", got, again)
		}
	})
}

// SplitName finds a known prefix or says it did not, and never loses a
// byte of the name.
func FuzzSplitName(f *testing.F) {
	f.Add("a__b__c", "__", "a,a__b")
	f.Add("tool-searching__google_search", "__", "tool-searching")
	f.Add("__x", "__", "")
	f.Add("abc", "", "a")
	f.Add("a____", "__", "a,a__")
	f.Fuzz(func(t *testing.T, name, sep, knownList string) {
		known := map[string]bool{}
		for _, k := range strings.Split(knownList, ",") {
			known[k] = true
		}
		prefix, tool, ok := SplitName(name, sep, func(p string) bool { return known[p] })
		if !ok {
			if prefix != "" || tool != name {
				t.Fatalf("no match but (%q, %q)", prefix, tool)
			}
			return
		}
		if !known[prefix] || prefix == "" || prefix+sep+tool != name {
			t.Fatalf("SplitName(%q, %q) = (%q, %q): not a known prefix and the rest", name, sep, prefix, tool)
		}
	})
}

// Whatever a client sends as a tools/call's name and arguments, mcpmux
// answers (a result or a JSON-RPC error), never panics, and the session
// keeps working.
func FuzzToolCallArguments(f *testing.F) {
	for _, seed := range []struct{ name, args string }{
		{"alpha__echo", `{"text":"hi"}`},
		{"alpha__echo", `null`},
		{"alpha__echo", `[1,2,3]`},
		{"alpha__echo", `"just a string"`},
		{"alpha__echo", `{"text":{"nested":[[[[[[[[[[{}]]]]]]]]]]}}`},
		{"alpha__echo", `{"text":"` + strings.Repeat("é", 100) + `"}`},
		{"alpha__echo", `{"a":1e400}`},
		{"echo", `{}`},
		{"nope__echo", `{}`},
		{"", `{}`},
		{"alpha__echo", `not json`},
	} {
		f.Add(seed.name, []byte(seed.args))
	}
	h := newHarness(f, map[string]*mcp.Server{
		"alpha": fixtureServer("alpha", map[string]mcp.ToolHandler{"echo": echo("alpha:")}),
	}, "", nil)
	cs := h.client(DefaultProfile)
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		raw := json.RawMessage(args)
		if !json.Valid(args) {
			b, _ := json.Marshal(string(args)) // send it as a JSON string instead
			raw = b
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: raw})
		switch {
		case ctx.Err() != nil:
			t.Fatalf("call %q %s got no answer: %v", name, raw, err)
		case err != nil && errors.Is(err, mcp.ErrConnectionClosed):
			t.Fatalf("call %q %s closed the session: %v", name, raw, err)
		case err == nil && res == nil:
			t.Fatalf("call %q %s: no result and no error", name, raw)
		case err == nil && res.IsError && text(res) == "":
			t.Fatalf("call %q %s: an error result without a message", name, raw)
		}
		if err := cs.Ping(ctx, nil); err != nil {
			if ctx.Err() != nil {
				t.Fatalf("after call %q %s the session answers no ping", name, raw)
			}
			t.Fatalf("after call %q %s the session is broken: %v", name, raw, err)
		}
	})
}

// callArguments accepts exactly the JSON objects (and absent arguments).
func FuzzCallArguments(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, ` {"a":1} `, `[]`, `"s"`, `true`, `1`, `{`, "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := callArguments(raw)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "arguments must be a JSON object") {
				t.Fatalf("unclear error %v", err)
			}
			return
		}
		if len(out) == 0 || out[0] != '{' {
			t.Fatalf("callArguments(%q) = %q: not an object", raw, out)
		}
	})
}
