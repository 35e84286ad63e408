//go:build (amd64 || arm64) && !purego

package gid

// Current returns a word that identifies the calling goroutine among all
// live goroutines (the address of its runtime descriptor).
func Current() uintptr

// Held reports whether the calling goroutine's id is ids[0] or ids[1], read
// as words that other goroutines store atomically: a loop's holder check in
// one call.
//
//go:noescape
func Held(ids *[2]uintptr) bool
