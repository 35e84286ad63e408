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
//   - at most one reporter goroutine waits on hand at a time: a caller
//     holds handMu from starting its reporter until that reporter has taken
//     the caller's probe, so every reporter takes its own creator's probe;
//   - a probe belongs to one call of Current from taking it off free to
//     putting it back, and its id channel holds at most the one id of that
//     call; free holds at most maxFree probes and is guarded by handMu.

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
)

// probe is one call's buffer and answer. Probes are kept for reuse (free),
// so a call does not allocate; not in a sync.Pool, which drops items at
// random under the race detector.
type probe struct {
	buf [1024]byte
	id  chan uintptr // capacity 1: the reporter never waits to answer
}

// maxFree bounds the probes kept for reuse: as many as callers that ask at
// once, up to this.
const maxFree = 64

var (
	handMu sync.Mutex
	free   []*probe            // under handMu
	hand   = make(chan *probe) // unbuffered: the handover to the reporter
)

// Current returns a word that identifies the calling goroutine among all
// live goroutines (its number). It costs about two microseconds, whatever
// the depth of the caller's stack.
func Current() uintptr {
	handMu.Lock()
	p := take()
	go report()
	hand <- p
	handMu.Unlock()
	id := <-p.id
	if id == 0 {
		id = own(p) // a traceback with no creator line: read the caller's header
	}
	handMu.Lock()
	if len(free) < maxFree {
		free = append(free, p)
	}
	handMu.Unlock()
	return id
}

// take returns a probe from free, or a new one. The caller holds handMu.
func take() *probe {
	if n := len(free); n > 0 {
		p := free[n-1]
		free = free[:n-1]
		return p
	}
	return &probe{id: make(chan uintptr, 1)}
}

// report is the body of the goroutine Current starts: it answers with the
// number of the goroutine that started it.
func report() {
	p := <-hand
	n := runtime.Stack(p.buf[:], false)
	p.id <- creator(p.buf[:n])
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
// ("goroutine N ["), the slow way, using p's buffer.
func own(p *probe) uintptr {
	n := runtime.Stack(p.buf[:64], false)
	return number(p.buf[len("goroutine "):n])
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
