//go:build race

package spindletest

// RaceEnabled reports whether the binary runs under the race detector.
const RaceEnabled = true
