//go:build (amd64 || arm64) && !purego

package spindletest

import "runtime"

// PortableGoroutineID reports whether the binary uses the portable (and
// far slower) way to tell which goroutine holds a loop (internal/gid).
const PortableGoroutineID = false

// Goroutines returns the number of live goroutines (runtime.NumGoroutine):
// what a test that checks for goroutines left behind counts.
func Goroutines() int { return runtime.NumGoroutine() }
