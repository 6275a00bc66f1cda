package config

import (
	"fmt"
	"strings"
	"testing"
)

// manyKeys is a tool file with n env entries.
func manyKeys(n int) []byte {
	var b strings.Builder
	b.WriteString("name: many\ntool_command: mcpmux\nenv:\n")
	for i := range n {
		fmt.Fprintf(&b, "  VAR_%d: value-%d-${oc.env:HOME,/home}\n", i, i)
	}
	return []byte(b.String())
}

// A file is decoded in one pass: the work per key (counted in
// allocations, which unlike time do not depend on the machine) stays the
// same as the file grows. Setting every expanded key back into koanf, as
// the loader once did, re-merged the whole map each time: doubling the
// keys quadrupled the work, and 10 000 keys took a minute.
func TestDecodeIsLinearInKeys(t *testing.T) {
	allocs := func(n int) float64 {
		data := manyKeys(n)
		return testing.AllocsPerRun(2, func() {
			s, ferr := ParseServer("many.yaml", data, func(string) (string, bool) { return "", false })
			if ferr != nil || len(s.Env) != n {
				t.Fatalf("ParseServer: %v, %d env entries", ferr, len(s.Env))
			}
		})
	}
	small, large := allocs(500), allocs(2000)
	if ratio := large / small; ratio > 5 {
		t.Errorf("4× the keys cost %.1f× the allocations (%.0f → %.0f): decoding is not linear in the keys", ratio, small, large)
	}
}

// BenchmarkParseManyKeys decodes a tool file of 10 000 env entries (with
// a reference each), and one of 1 MiB, the size limit of a tool file, of
// the shortest entries (88 000).
func BenchmarkParseManyKeys(b *testing.B) {
	var short strings.Builder
	short.WriteString("name: many\ntool_command: mcpmux\nenv:\n")
	for i := 0; short.Len() < MaxFileBytes-20; i++ {
		fmt.Fprintf(&short, "  V%d: x\n", i)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"keys=10000", manyKeys(10000)}, {"bytes=1MiB", []byte(short.String())}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ferr := ParseServer("many.yaml", c.data, nil); ferr != nil {
					b.Fatal(ferr)
				}
			}
		})
	}
}
