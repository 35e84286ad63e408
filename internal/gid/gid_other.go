//go:build (!amd64 && !arm64) || purego

package gid

// The portable id is the goroutine's number, as the runtime's traceback
// prints it. Reading it from the caller's own runtime.Stack costs about a
// microsecond per frame of the caller's stack, since the runtime formats
// every frame (with its arguments) under its global print lock even when
// the buffer holds only the first line; on a loop's callback, twenty frames
// deep, that was 17-21 µs a call, and a busy portable server spent most of
// its time there. So Current starts a goroutine and reads the line of that
// goroutine's trace that names its creator ("created by f in goroutine N",
// printed since Go 1.21): that trace is two frames long however deep the
// caller is.
//
// Invariants:
//   - mu is held by one call of Current from starting its reporter to
//     taking the answer, so at most one reporter runs at a time, buf is
//     its alone, and the one answer on ans is the holder's.

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
)

var (
	mu  sync.Mutex
	buf [1024]byte           // under mu: the reporter's traceback, or the caller's own header
	ans = make(chan uintptr) // the reporter's answer to the caller holding mu
)

// Current returns a word that identifies the calling goroutine among all
// live goroutines (its number). It costs about two microseconds, whatever
// the depth of the caller's stack, and allocates nothing (runtime.Stack's
// buffer escapes, so it is one shared buffer, guarded by mu). Calls from
// several goroutines take turns; the runtime serialises their tracebacks
// under its print lock anyway.
func Current() uintptr {
	mu.Lock()
	go report()
	id := <-ans
	if id == 0 {
		id = own() // a traceback with no creator line: read the caller's header
	}
	mu.Unlock()
	return id
}

// report is the body of the goroutine Current starts: it answers with the
// number of the goroutine that started it.
func report() {
	n := runtime.Stack(buf[:], false)
	ans <- creator(buf[:n])
}

// createdBy starts the line of a traceback that names a goroutine's
// creator; inGoroutine precedes the creator's number on it.
var (
	createdBy   = []byte("\ncreated by ")
	inGoroutine = []byte(" in goroutine ")
)

// creator returns the number in the first "created by ... in goroutine N"
// line of the traceback tr, or 0 if it has none.
func creator(tr []byte) uintptr {
	i := bytes.Index(tr, createdBy)
	if i < 0 {
		return 0
	}
	line := tr[i+len(createdBy):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	j := bytes.Index(line, inGoroutine)
	if j < 0 {
		return 0
	}
	return number(line[j+len(inGoroutine):])
}

// own returns the caller's number from the header of its own traceback
// ("goroutine N ["), the slow way. The caller holds mu.
func own() uintptr {
	n := runtime.Stack(buf[:64], false)
	return number(buf[len("goroutine "):n])
}

// number parses the decimal digits that b starts with.
func number(b []byte) uintptr {
	var id uintptr
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uintptr(c-'0')
	}
	return id
}

// Held reports whether the calling goroutine's id is ids[0] or ids[1], read
// as words that other goroutines store atomically.
func Held(ids *[2]uintptr) bool {
	me := Current()
	return me == atomic.LoadUintptr(&ids[0]) || me == atomic.LoadUintptr(&ids[1])
}
