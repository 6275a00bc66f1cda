package main

import (
	"fmt"
	"slices"
	"time"
)

// samples are the durations of many operations.
type samples []time.Duration

func (s samples) sorted() samples {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// quantile is the nearest-rank q-quantile (0 < q ≤ 1).
func (s samples) quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := s.sorted()
	i := int(q*float64(len(c))+0.5) - 1
	return c[min(max(i, 0), len(c)-1)]
}

func (s samples) median() time.Duration { return s.quantile(0.5) }

func (s samples) mean() time.Duration {
	if len(s) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return sum / time.Duration(len(s))
}

func (s samples) p99() time.Duration { return s.quantile(0.99) }

// row is one line of the results table.
type row struct {
	Figure  string  `json:"figure"`
	Median  string  `json:"median"`
	P99     string  `json:"p99"`
	Value   string  `json:"value"`  // the figure the target is about
	Target  string  `json:"target"` // "" if none
	Met     *bool   `json:"met,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"`
	Command string  `json:"command"`
	Note    string  `json:"note,omitempty"`
	// Check marks a correctness figure (errors, lost calls): unlike the
	// timings, missing it fails the run.
	Check bool `json:"check,omitempty"`
}

func met(ok bool) *bool { return &ok }

// ms formats a duration in milliseconds with three significant digits.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	case v >= 1:
		return fmt.Sprintf("%.2f ms", v)
	}
	if v >= 0.01 {
		return fmt.Sprintf("%.0f µs", v*1000)
	}
	return fmt.Sprintf("%.0f ns", v*1e6)
}
