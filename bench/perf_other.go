//go:build !linux

package main

import (
	"errors"
	"runtime"
)

// hwCounters would hold hardware counters; they are only read on Linux (see
// perf_linux.go), so on other systems the inst and cycles columns read n/a.
type hwCounters struct{}

// hwSample is a reading of the counters; empty where there are none.
type hwSample struct{}

// openHWCounters reports that hardware counters are not available here.
func openHWCounters() (*hwCounters, error) {
	return nil, errors.New("hardware counters are only read on Linux, not " + runtime.GOOS)
}

// sampleInto does nothing: there are no counters to read.
func (h *hwCounters) sampleInto(s *hwSample) {}

// close does nothing: there are no counters to close.
func (h *hwCounters) close() {}

// since reports that no figures are available.
func (s hwSample) since(prev hwSample) (inst, cycles float64, ok bool) { return 0, 0, false }
