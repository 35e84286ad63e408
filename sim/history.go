package sim

// A history of the operations of a simulated run, for a check of the run
// as a whole (see docs/simulation.md, "Checking a history").
//
// Invariants: everything runs on the world's goroutine (the test's, and
// the loops the world steps), so nothing here locks; nothing is drawn
// from the world's rand, so recording does not change the run; an
// operation ends once (Return, Unknown, Fail), and what ends it first
// wins.

import "time"

// Outcome is how an operation of a History ended.
type Outcome uint8

const (
	// Pending: called, not ended yet.
	Pending Outcome = iota
	// Returned: its output came, at Return.
	Returned
	// Unknown: no output came, and it may or may not have happened (it
	// was in flight when its server crashed, or its connection ended
	// first). A linearizability checker gives it a return after every
	// other event and accepts any output.
	Unknown
	// Failed: it did not happen (the server refused it), or it changed
	// nothing and its output was lost (a read): a check leaves it out.
	Failed
)

// Op is one operation of a History.
type Op[In, Out any] struct {
	// Client names the sequential client that made it.
	Client int
	// Input is what the client asked; Output what came back (Returned
	// only).
	Input  In
	Output Out
	// Call and Return are the world's times (World.Now) when it was
	// called and when it ended.
	Call, Return time.Duration
	// Outcome is how it ended.
	Outcome Outcome
}

// History records the operations of a simulated run: for each, its
// client, its input, and the world's time when it was called and when it
// ended, with its output or that its outcome is unknown. Make one with
// NewHistory; use it from the world's goroutine (a task on one of its
// loops, or the test between steps).
type History[In, Out any] struct {
	w   *World
	ops []Op[In, Out]
}

// NewHistory returns an empty history on w's clock.
func NewHistory[In, Out any](w *World) *History[In, Out] {
	return &History[In, Out]{w: w}
}

// Call records that client calls input now, and returns the operation's
// index, which Return, Unknown and Fail take.
func (h *History[In, Out]) Call(client int, input In) int {
	h.ops = append(h.ops, Op[In, Out]{Client: client, Input: input, Call: h.w.Now()})
	return len(h.ops) - 1
}

// end ends operation i with o now; it reports false if i had ended.
func (h *History[In, Out]) end(i int, o Outcome) bool {
	op := &h.ops[i]
	if op.Outcome != Pending {
		return false
	}
	op.Outcome, op.Return = o, h.w.Now()
	return true
}

// Return records that operation i returned output now. It reports false,
// and changes nothing, if i had ended (a crash made its outcome unknown
// while its reply was on its way).
func (h *History[In, Out]) Return(i int, output Out) bool {
	if !h.end(i, Returned) {
		return false
	}
	h.ops[i].Output = output
	return true
}

// Unknown records that operation i ended without an output and may or
// may not have happened; false if it had ended.
func (h *History[In, Out]) Unknown(i int) bool { return h.end(i, Unknown) }

// Fail records that operation i did not happen; false if it had ended.
func (h *History[In, Out]) Fail(i int) bool { return h.end(i, Failed) }

// Settle ends every pending operation for which fn, given it, returns
// Unknown or Failed (fn returns Pending to leave one): at a crash, the
// operations in flight on the crashed host.
func (h *History[In, Out]) Settle(fn func(op *Op[In, Out]) Outcome) {
	for i := range h.ops {
		if h.ops[i].Outcome != Pending {
			continue
		}
		switch o := fn(&h.ops[i]); o {
		case Unknown, Failed:
			h.end(i, o)
		}
	}
}

// Op returns operation i, to read or to change its input (until the next
// Call).
func (h *History[In, Out]) Op(i int) *Op[In, Out] { return &h.ops[i] }

// Len returns the number of operations called.
func (h *History[In, Out]) Len() int { return len(h.ops) }

// Ops returns the operations in the order they were called (the
// history's own slice: do not keep it across Calls).
func (h *History[In, Out]) Ops() []Op[In, Out] { return h.ops }
