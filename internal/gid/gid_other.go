//go:build (!amd64 && !arm64) || purego

package gid

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// bufs holds stack buffers: runtime.Stack's buffer escapes, so a fresh one
// per call would allocate.
var bufs = sync.Pool{New: func() any { return new([64]byte) }}

// Current returns a word that identifies the calling goroutine among all
// live goroutines (its number, parsed from the runtime.Stack header
// "goroutine N [").
func Current() uintptr {
	buf := bufs.Get().(*[64]byte)
	n := runtime.Stack(buf[:], false)
	var id uintptr
	for _, c := range buf[len("goroutine "):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uintptr(c-'0')
	}
	bufs.Put(buf)
	return id
}

// Held reports whether the calling goroutine's id is ids[0] or ids[1], read
// as words that other goroutines store atomically.
func Held(ids *[2]uintptr) bool {
	me := Current()
	return me == atomic.LoadUintptr(&ids[0]) || me == atomic.LoadUintptr(&ids[1])
}
