package aggregator

import (
	"encoding/json"
	"testing"
)

func TestWithField(t *testing.T) {
	for _, c := range []struct{ in, key, value, want string }{
		{`{"name":"a","execution":{"taskSupport":"required"},"n":1.50}`, "name", `"x__a"`, `{"name":"x__a","execution":{"taskSupport":"required"},"n":1.50}`},
		{`{ "title": "T", "name" : "a" }`, "name", `"x__a"`, `{ "title": "T", "name" : "x__a" }`},
		{`{"nested":{"name":"keep"},"name":"a"}`, "name", `"b"`, `{"nested":{"name":"keep"},"name":"b"}`},
		{`{"title":"T"}`, "name", `"b"`, `{"title":"T","name":"b"}`},
		{`{}`, "name", `"b"`, `{"name":"b"}`},
		{` { } `, "name", `"b"`, ` {"name":"b"} `},
	} {
		got, err := withField(json.RawMessage(c.in), c.key, json.RawMessage(c.value))
		if err != nil || string(got) != c.want {
			t.Errorf("withField(%s, %s, %s) = %s, %v; want %s", c.in, c.key, c.value, got, err, c.want)
		}
		if err == nil && !json.Valid(got) {
			t.Errorf("withField(%s) is not JSON: %s", c.in, got)
		}
	}
	for _, bad := range []string{`[]`, `"s"`, `{"a":}`, ``} {
		if got, err := withField(json.RawMessage(bad), "name", json.RawMessage(`"b"`)); err == nil {
			t.Errorf("withField(%q) = %s, want an error", bad, got)
		}
	}
}
