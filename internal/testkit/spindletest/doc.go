// Package spindletest holds the helpers that spindle's tests share: waits
// bounded by a safety net, a panic checker and whether the race detector
// is on. Tests drive loops with executor.Drive and RunUntilIdle; nothing
// here sleeps to synchronise.
package spindletest
