package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles is a hidden switch for performance work (docs/BENCHMARKS.md):
// MCPMUX_CPUPROFILE=FILE records a CPU profile from start to exit, and
// MCPMUX_MEMPROFILE=FILE writes a heap profile at exit. The returned func
// writes them; call it before exiting.
func startProfiles() (stop func()) {
	cpu, mem := os.Getenv("MCPMUX_CPUPROFILE"), os.Getenv("MCPMUX_MEMPROFILE")
	var f *os.File
	if cpu != "" {
		var err error
		if f, err = os.Create(cpu); err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpmux: MCPMUX_CPUPROFILE:", err)
			f = nil
		}
	}
	return func() {
		if f != nil {
			pprof.StopCPUProfile()
			_ = f.Close()
		}
		if mem != "" {
			if hf, err := os.Create(mem); err == nil {
				runtime.GC()
				_ = pprof.WriteHeapProfile(hf)
				_ = hf.Close()
			}
		}
	}
}
