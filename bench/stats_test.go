package main

import (
	"testing"
	"time"
)

func TestQuantiles(t *testing.T) {
	var s samples
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	if got := s.median(); got != 50*time.Millisecond {
		t.Errorf("median = %v, want 50ms", got)
	}
	if got := s.p99(); got != 99*time.Millisecond {
		t.Errorf("p99 = %v, want 99ms", got)
	}
	if s[0] != 100*time.Millisecond {
		t.Error("quantile sorted the samples in place")
	}
	if got := s.mean(); got != 50500*time.Microsecond {
		t.Errorf("mean = %v, want 50.5ms", got)
	}
	if got := (samples{}).median(); got != 0 {
		t.Errorf("median of nothing = %v", got)
	}
	if got := (samples{}).mean(); got != 0 {
		t.Errorf("mean of nothing = %v", got)
	}

}

func TestNextCursor(t *testing.T) {
	for in, want := range map[string]string{
		`data: {"jsonrpc":"2.0","id":1,"result":{"tools":[],"nextCursor":"abc=="}}`: "abc==",
		`data: {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`:                      "",
	} {
		if got := nextCursor([]byte(in)); got != want {
			t.Errorf("nextCursor(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestToolYAML(t *testing.T) {
	e := &env{fixture: "/bin/fixture"}
	got := string(e.toolYAML(server{name: "a", tools: 3, args: []string{"stdio"}}))
	want := "name: a\ntool_command: /bin/fixture\nargs: [\"stdio\"]\nenv:\n  FIXTURE_TOOLS: \"3\"\n"
	if got != want {
		t.Errorf("toolYAML = %q, want %q", got, want)
	}
}
