package wscase

import "runtime"

type runtimeMemStats = runtime.MemStats

func readMemStats(ms *runtime.MemStats) { runtime.ReadMemStats(ms) }

func gc() {
	runtime.GC()
	runtime.GC()
}
