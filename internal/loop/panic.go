package loop

import (
	"log/slog"
	"runtime/debug"

	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
)

// Panics on the loop: how a panic that escapes a queued item is sorted out
// (its future, the item, or the panic handler), with no defer per task.

// recoverItem handles a panic, with its stack, that escaped the running
// item it: either one of its Before or After hooks panicked (reported to the panic
// handler; the rest of the item's protocol then runs, guarded: the other
// hooks, the continuation, once), or its continuation did (the item's
// PanicCatcher or the panic handler gets it; its After hooks run). Loop
// only; the loop calls it from its recovery, with the item's frame and id
// still current.
func (e *Loop) recoverItem(it item, v any, stack []byte) {
	h := &e.hooks
	switch h.stage {
	case stageBefore:
		h.stage = stageNone
		e.handlePanic(v, stack)
		for _, fn := range h.inflight.before[h.hookAt+1:] {
			e.callID(fn, it.id)
		}
		e.runGuarded(it.r)
		e.hooksAfter(it.id)
		return
	case stageAfter:
		h.stage = stageNone
		e.handlePanic(v, stack)
		s := h.inflight
		h.inflight = nil
		for _, fn := range s.after[h.hookAt+1:] {
			e.callID(fn, it.id)
		}
		return
	}
	e.catchPanic(it.r, v, stack)
	if it.id != 0 {
		e.hooksAfter(it.id)
	}
}

// runGuarded runs r, handing a panic to catchPanic.
func (e *Loop) runGuarded(r Runnable) {
	defer func() {
		if v := recover(); v != nil {
			e.catchPanic(r, v, debug.Stack())
		}
	}()
	r.Run()
}

// catchPanic gives the panic of r to r's PanicCatcher, or to the panic
// handler.
func (e *Loop) catchPanic(r Runnable, v any, stack []byte) {
	if c, ok := r.(PanicCatcher); ok {
		c.CatchPanic(v, stack)
	} else {
		e.handlePanic(v, stack)
	}
	e.ObservePanic(v)
}

// PanicObserver is told of the panics of the continuations that run under
// a frame it is bound to (hooks.ObservePanics), after the panic has been
// reported (to the continuation's future or the panic handler).
type PanicObserver = hooks.PanicObserver

// PanicObserverKey is the frame key of a PanicObserver.
var PanicObserverKey any = frame.PanicObserverKey{}

// ObservePanic tells the PanicObserver of the current frame, if it has
// one, of the panic v that escaped the running continuation (a task body
// too: package future calls it). Loop only. A panic in the observer goes
// to the panic handler.
func (e *Loop) ObservePanic(v any) {
	o, ok := frame.Find(e.Cur, frame.PanicObserverKey{})
	if !ok {
		return
	}
	po, ok := o.(PanicObserver)
	if !ok {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			e.handlePanic(r, debug.Stack())
		}
	}()
	po.ObservePanic(v)
}

// ReportPanic hands a recovered panic that has nowhere else to go to the
// executor's panic handler (see WithPanicHandler). Packages built on the
// executor call it when a panic cannot be stored in the future it would have
// completed, because that future was already completed (cancelled, say).
func (e *Loop) ReportPanic(v any, stack []byte) { e.handlePanic(v, stack) }

// handlePanic reports a panic that no future carries.
func (e *Loop) handlePanic(v any, stack []byte) {
	if h := e.panicHandler; h != nil {
		defer func() {
			if r := recover(); r != nil {
				slog.Error("spindle: panic handler panicked", "executor", e.name, "panic", r, "original", v)
			}
		}()
		h(v)
		return
	}
	slog.Error("spindle: panic on the loop", "executor", e.name, "panic", v, "stack", string(stack))
}

// goexitItem handles runtime.Goexit (a t.FailNow in a test) called by the
// running item it on the loop goroutine: the goroutine ends whatever
// happens, but the item is not left half done. Its PanicCatcher (a
// continuation's future) fails with ErrGoexit, the panic handler is told,
// and cbGoexited makes leave hand the loop on to a new goroutine. A task
// body's Goexit reaches here too, through the coroutine switch; it was
// handled by runFiberBody (goexited is set). Loop only.
func (e *Loop) goexitItem(it item) {
	if e.goexited != nil {
		return
	}
	e.cbGoexited = true
	h := &e.hooks
	h.stage, h.inflight = stageNone, nil
	stack := debug.Stack()
	if c, ok := it.r.(PanicCatcher); ok {
		c.CatchPanic(ErrGoexit, stack)
	}
	e.handlePanic(ErrGoexit, stack)
}
