//go:build !linux

package main

import (
	"errors"
	"runtime"
)

// hwCounters and hwSample stand for the counters of perf_linux.go, which
// only Linux has: here the inst and cycles columns read n/a.
type (
	hwCounters struct{}
	hwSample   struct{}
)

func openHWCounters() (*hwCounters, error) {
	return nil, errors.New("hardware counters are only read on Linux, not " + runtime.GOOS)
}

func (*hwCounters) sampleInto(*hwSample)                 {}
func (*hwCounters) close()                               {}
func (hwSample) since(hwSample) (float64, float64, bool) { return 0, 0, false }
