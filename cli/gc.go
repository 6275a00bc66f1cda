package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// gcHeadroom is the least heap growth allowed between two collections.
//
// The go-sdk decodes every JSON-RPC message with a fresh 32 KiB buffer,
// so a proxied call leaves some 600 KB of garbage behind (two sessions,
// several decodes per message). With the default GOGC=100 and the few MB
// of live heap of a small catalog, that is a collection every few calls,
// and the collector took a third of mcpmux's CPU on the call path (see
// docs/BENCHMARKS.md). A floor of headroom makes collections rare for
// small heaps, while big heaps (large catalogs) keep GOGC=100.
const gcHeadroom = 16 << 20

// tuneGC keeps at least gcHeadroom between the live heap and the next
// collection, re-tuned after every collection. An explicit GOGC in the
// environment wins: then nothing is changed.
func tuneGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		// A finalizer runs once after the collection that finds its
		// object unreachable: one adjustment per collection.
		s := &gcSentinel{}
		runtime.SetFinalizer(s, func(*gcSentinel) {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				debug.SetGCPercent(gcPercent(sample[0].Value.Uint64()))
			}
			arm()
		})
	}
	debug.SetGCPercent(gcPercent(0))
	arm()
}

// gcSentinel has a pointer so that it is never a tiny allocation, whose
// finalizer may be delayed by its neighbours.
type gcSentinel struct{ _ *byte }

// gcPercent is the GOGC that lets a heap of live bytes grow by at least
// gcHeadroom, and never less than the default 100. It is at most 400:
// the runtime's minimum heap goal is 4 MB × GOGC/100, so 400 already gives
// a heap of under 4 MB its 16 MB, and more would give it more.
func gcPercent(live uint64) int {
	const most = 400
	if live == 0 {
		return most
	}
	return int(min(most, max(100, gcHeadroom*100/live)))
}
