//go:build !amd64 && !arm64

package gid

import "runtime"

// Current returns a word that identifies the calling goroutine among all
// live goroutines (its number, parsed from the runtime.Stack header
// "goroutine N [").
func Current() uintptr {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	var id uintptr
	for _, c := range buf[len("goroutine "):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uintptr(c-'0')
	}
	return id
}

// Fast reports whether Current is the cheap assembly version.
const Fast = false
