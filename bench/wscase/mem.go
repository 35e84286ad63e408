package wscase

import (
	"os"
	"runtime"
	"runtime/pprof"
)

type runtimeMemStats = runtime.MemStats

func readMemStats(ms *runtime.MemStats) { runtime.ReadMemStats(ms) }

func gc() {
	runtime.GC()
	runtime.GC()
}

// writeHeapProfile writes the heap profile, after collecting, to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	gc()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
