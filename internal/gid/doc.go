// Package gid identifies the calling goroutine cheaply.
//
// The executor needs to know whether the calling goroutine is the one that
// holds its loop (the loop goroutine, or the goroutine of the spawned task
// that runs now): Submit and Await take different paths there, and Await on
// the loop must report a deadlock instead of hanging. Go has no public
// goroutine id, so Current returns an opaque word that is unique among live
// goroutines: on amd64 and arm64 the address of the runtime's goroutine
// descriptor, read in a few instructions; elsewhere the goroutine number,
// which the runtime prints only in tracebacks: Current reads it from the
// "created by" line of a goroutine it starts, which costs about two
// microseconds however deep the caller's stack is (the caller's own
// traceback costs about a microsecond per frame).
// The build tag purego selects the portable version everywhere; CI runs the
// executor's and future's tests with it.
//
// The value is only compared for equality with a value taken earlier by a
// goroutine that is still alive; it is never dereferenced.
package gid
