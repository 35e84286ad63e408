//go:build (amd64 || arm64) && !purego

package gid

// Current returns a word that identifies the calling goroutine among all
// live goroutines (the address of its runtime descriptor).
func Current() uintptr
