package main

import (
	"runtime"
	"testing"
	"time"
)

// meter measures one run of a case, which calls startMeter right before
// its measured loop and Stop right after it:
//
//	m := startMeter(b)
//	for i := 0; i < b.N; i++ { ... }
//	m.Stop(b, "link", float64(b.N*depth), float64(tasksRun))
//
// Stop reports the per-unit figures with b.ReportMetric, so they show in
// `go test -bench` output and in the BenchmarkResult.Extra the runner
// reads; with the runner's hardware counters open, also "inst/<unit>" and
// "cycles/<unit>" of the measured region.
type meter struct {
	start   time.Time
	mallocs uint64
	hw      hwSample // counter reading at start; meaningful when hwc != nil
}

// startMeter reads the counters, the malloc count and the clock, each
// nested inside the one before so that it excludes their cost, and resets
// b's timer.
func startMeter(b *testing.B) *meter {
	m := &meter{}
	if hwc != nil {
		hwc.sampleInto(&m.hw)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.mallocs = ms.Mallocs
	b.ResetTimer()
	m.start = time.Now()
	return m
}

// Stop stops b's timer and reports, with b.ReportMetric, "ns/<unit>",
// "allocs/<unit>" (mallocs during the run / units) and, when tasks >= 0,
// "tasks/<unit>" (tasks/units). units is b.N times the units per iteration
// (e.g. b.N*depth links). With unit "op" the reports replace the built-in
// ns/op and allocs/op, which is intended.
//
// units must be positive; Stop fails the benchmark otherwise.
func (m *meter) Stop(b *testing.B, unit string, units float64, tasks float64) {
	elapsed := time.Since(m.start)
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var inst, cycles float64
	hwOK := false
	if hwc != nil {
		var now hwSample
		hwc.sampleInto(&now)
		inst, cycles, hwOK = now.since(m.hw)
	}
	if !(units > 0) {
		b.Fatalf("meter.Stop: units = %v, want > 0", units)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/units, "ns/"+unit)
	b.ReportMetric(float64(ms.Mallocs-m.mallocs)/units, "allocs/"+unit)
	if tasks >= 0 {
		b.ReportMetric(tasks/units, "tasks/"+unit)
	}
	if hwOK {
		b.ReportMetric(inst/units, "inst/"+unit)
		b.ReportMetric(cycles/units, "cycles/"+unit)
	}
}
