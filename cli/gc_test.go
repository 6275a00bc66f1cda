package cli

import "testing"

func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 400},        // nothing known yet: the cap (a 16 MB minimum heap)
		{1 << 20, 400},  // under 4 MB live: the minimum heap gives the headroom
		{4 << 20, 400},  // 4 MB live: 16 MB of growth
		{8 << 20, 200},  // 8 MB live: 16 MB of growth
		{16 << 20, 100}, // from 16 MB on: the default
		{1 << 30, 100},  // big heaps: the default
	} {
		if got := gcPercent(c.live); got != c.want {
			t.Errorf("gcPercent(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}
