//go:build (!amd64 && !arm64) || purego

package spindletest

import (
	"bytes"
	"reflect"
	"runtime"

	"github.com/spindle-rt/spindle/internal/gid"
)

// PortableGoroutineID reports whether the binary uses the portable (and
// far slower) way to tell which goroutine holds a loop (internal/gid).
const PortableGoroutineID = true

// Goroutines returns the number of live goroutines, as
// runtime.NumGoroutine, less the short-lived goroutines that the portable
// goroutine id starts to read its caller's number (internal/gid), which
// may not have ended yet: what a test that checks for goroutines left
// behind counts.
func Goroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	reporter := []byte("\ncreated by " + runtime.FuncForPC(reflect.ValueOf(gid.Current).Pointer()).Name() + " in goroutine ")
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\ngoroutine ")) {
		if !bytes.Contains(g, reporter) {
			count++
		}
	}
	return count
}
