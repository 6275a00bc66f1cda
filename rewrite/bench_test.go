package rewrite

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkRefuseScan measures the refuse check on large arguments: long
// prose with many (allowed) URLs, and a long run of URL-like tokens
// without spaces. Both must stay linear in the input.
func BenchmarkRefuseScan(b *testing.B) {
	r, err := Compile(seedRules[:1])
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name, text string
		refused    bool
	}{
		{"prose", strings.Repeat("See https://example.com/a/b?c=d and huggingface.co/models/x for details. ", 2000), false},
		{"one-token", strings.Repeat("a.b/c+", 30000), false},
		// Each Hugging Face URL is read past its token, to a dot segment:
		// bounded by maxExtensions, then refused.
		{"dot-segments", strings.Repeat("See https://huggingface.co/models/x' (a/../b) ", 3000), true},
	} {
		args, _ := json.Marshal(map[string]any{"url": bc.text})
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(args)))
			for b.Loop() {
				if refused := r.Before(&Call{Name: "x__scrape", Tool: "scrape", Args: args}, nil) != nil; refused != bc.refused {
					b.Fatalf("refused = %v", refused)
				}
			}
		})
	}
}
