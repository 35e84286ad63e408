// Package frame holds the async-local frames that continuations carry and
// the record of which goroutine holds a loop.
//
// A [Frame] is an immutable list of bindings (copy on write), so capturing
// the current frame when a continuation is registered costs one pointer. A
// [Holder] is embedded in every loop: it says which goroutine holds the loop
// and which frame is current there. Package hooks reaches it through [Of],
// so async-local storage reads the current frame without a method on the
// executor's public face.
package frame
