package frame

// Who holds a loop, and the frame current on it.
//
// Invariants:
//   - LoopG is the goroutine id of the goroutine running the loop (0 when
//     none does) and CoroG that of the task goroutine the loop last switched
//     to. Of these two goroutines only one executes at any moment (the other
//     is blocked in the coroutine switch), so "the caller's id is LoopG or
//     CoroG" is exactly "the caller holds the loop".
//   - Cur is loop-owned: read and written only by the goroutine that holds
//     the loop.

import (
	"sync/atomic"
	"unsafe"

	"github.com/spindle-rt/spindle/internal/gid"
)

// Holder records which goroutine holds a loop and the async-local frame
// current on it. The loop embeds it, so every executor satisfies Loop.
type Holder struct {
	Cur   *Frame         // loop-owned: the frame of the running continuation
	LoopG atomic.Uintptr // gid of the goroutine running the loop, 0 if none
	CoroG atomic.Uintptr // gid of the task goroutine last switched to
	Name  string         // the loop's name, set before the loop is shared
}

// OnLoop reports whether the calling goroutine holds the loop: one call
// that compares the caller's id with LoopG and CoroG, which lie next to each
// other (see the check below).
func (h *Holder) OnLoop() bool {
	return gid.Held((*[2]uintptr)(unsafe.Pointer(&h.LoopG)))
}

// LoopG and CoroG must be adjacent words for OnLoop: this fails to compile
// otherwise.
var _ = [1]struct{}{}[unsafe.Offsetof(Holder{}.CoroG)-unsafe.Offsetof(Holder{}.LoopG)-unsafe.Sizeof(uintptr(0))]

// Hold marks the calling goroutine as the one running the loop; Release
// undoes it.
func (h *Holder) Hold() { h.LoopG.Store(gid.Current()) }

// Release marks the loop as run by no goroutine.
func (h *Holder) Release() { h.LoopG.Store(0) }

func (h *Holder) holder() *Holder { return h }

// Loop is anything that embeds a Holder: every executor. Its one method is
// unexported, so only types built on Holder satisfy it.
type Loop interface {
	holder() *Holder
}

// Of returns l's Holder.
func Of(l Loop) *Holder { return l.holder() }

// Current returns the frame of the running continuation, or nil when the
// caller does not hold the loop.
func (h *Holder) Current() *Frame {
	if !h.OnLoop() {
		return nil
	}
	return h.Cur
}

// Run runs fn with fr as the current frame and then restores the previous
// one, also when fn panics. The caller holds the loop.
func (h *Holder) Run(fr *Frame, fn func()) {
	prev := h.Cur
	h.Cur = fr
	defer func() { h.Cur = prev }()
	fn()
}
