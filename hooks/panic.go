package hooks

import "github.com/spindle-rt/spindle/internal/frame"

// PanicObserver is told of the panics of the continuations that carry it
// (see ObservePanics).
type PanicObserver interface {
	// ObservePanic is called on the loop with the value of a panic that
	// escaped a continuation carrying the observer, after the panic was
	// reported as usual: to the continuation's future (a *PanicError of
	// package future), or to the executor's panic handler. It must not
	// block; a panic in it goes to the panic handler.
	ObservePanic(v any)
}

// ObservePanics binds o to the current frame of ex's loop from now until
// the returned PanicWatch's End: the continuations registered in between
// (callbacks, timers, spawned tasks, Post and Submit from the loop, as
// for Storage.Run), and those they register in turn, carry o, and when one
// of them panics, o is told (PanicObserver.ObservePanic). Where several
// observers are bound, the innermost is told.
//
// It is how a protocol ties the work a request starts to the request: a
// server binds an observer around a handler, or from the handler on (as
// package web's ResponseWriter.Later does), and ends the request when a
// continuation that was to finish it panics, instead of leaving its client
// waiting:
//
//	watch := hooks.ObservePanics(ex, req) // req ends itself in ObservePanic
//	handler(req)
//	watch.End()
//
// The binding also ends when the Run (of any Storage), Bind or Snapshot
// function it was made in returns, and when the running callback returns
// (a task body carries it across its suspensions, to its end); End is for
// ending it sooner.
// Like Run, it allocates the new frame. It must be called by code that
// holds the loop; it panics elsewhere.
func ObservePanics(ex Loop, o PanicObserver) PanicWatch {
	if o == nil {
		panic("hooks: ObservePanics with nil PanicObserver")
	}
	h := mustHold(ex, "ObservePanics")
	w := PanicWatch{h: h, prev: h.Cur}
	h.Cur = h.Cur.With(frame.PanicObserverKey{}, o)
	w.cur = h.Cur
	return w
}

// PanicWatch is a binding made by ObservePanics. The zero value is no
// binding: its End does nothing.
type PanicWatch struct {
	h         *frame.Holder
	prev, cur *frame.Frame
}

// End ends the binding: the continuations registered from then on no
// longer carry the observer (those registered before keep it). It makes
// the frame current before ObservePanics current again, if the binding is
// still current; once it has ended otherwise (see ObservePanics), End does
// nothing. Call it from the code that made the binding, in a defer when a
// panic may come in between and is recovered. It must be called by code
// that holds the loop.
func (w PanicWatch) End() {
	if w.h == nil {
		return
	}
	if !w.h.OnLoop() {
		panic("hooks: PanicWatch.End called from a goroutine that does not hold the loop")
	}
	if w.h.Cur == w.cur {
		w.h.Cur = w.prev
	}
}
