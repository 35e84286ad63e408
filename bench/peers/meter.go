package peers

import (
	"runtime"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/bench/internal/cputime"
)

// meter measures one run of a case: wall time, CPU time of the process and
// mallocs, reported per unit with b.ReportMetric.
type meter struct {
	start   time.Time
	cpu     time.Duration
	cpuOK   bool
	mallocs uint64
}

// startMeter resets b's timer and takes the first readings.
func startMeter(b *testing.B) *meter {
	m := &meter{}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.mallocs = ms.Mallocs
	m.cpu, m.cpuOK = cputime.Process()
	b.ResetTimer()
	m.start = time.Now()
	return m
}

// stop stops b's timer and reports "ns/<unit>", "allocs/<unit>" and, where
// the system gives it, "cpu-ns/<unit>" (user and system time of every
// thread of the process) for units units.
func (m *meter) stop(b *testing.B, unit string, units float64) {
	elapsed := time.Since(m.start)
	cpu, cpuOK := cputime.Process()
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if !(units > 0) {
		b.Fatalf("meter.stop: units = %v, want > 0", units)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/units, "ns/"+unit)
	b.ReportMetric(float64(ms.Mallocs-m.mallocs)/units, "allocs/"+unit)
	if m.cpuOK && cpuOK {
		b.ReportMetric(float64((cpu-m.cpu).Nanoseconds())/units, "cpu-ns/"+unit)
	}
}
