package logs

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestMasker(t *testing.T) {
	var nilMasker *Masker
	if nilMasker.Mask("abc") != "abc" {
		t.Error("nil masker changed text")
	}
	m := &Masker{}
	if m.Mask("sk-123456") != "sk-123456" {
		t.Error("empty masker changed text")
	}
	m.Add("sk-123456", "abc", "", "sk-123456-long", `q"uote`)
	for in, want := range map[string]string{
		"key=sk-123456 and sk-123456-long": "key=**** and ****",
		"abc is too short to be a secret":  "abc is too short to be a secret",
		`{"v":"q\"uote"}`:                  `{"v":"****"}`,
	} {
		if got := m.Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMaskedLogger(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		var h slog.Handler = slog.NewTextHandler(&buf, nil)
		if format == "json" {
			h = slog.NewJSONHandler(&buf, nil)
		}
		m := &Masker{}
		log := Masked(slog.New(h), m).With("server", "s", "cfg", "pw=hunter22")
		m.Add("hunter22")
		log.Info("child said hunter22", "line", "echo hunter22", "error", errors.New("failed: hunter22"),
			slog.Group("g", "k", "hunter22"), "n", 5)
		QuietInfo(log).Warn("sdk hunter22")
		if out := buf.String(); strings.Contains(out, "hunter22") || strings.Count(out, "****") < 5 {
			t.Errorf("%s: secret in log or not masked:\n%s", format, out)
		}
	}
}
