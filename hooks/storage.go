package hooks

import "github.com/spindle-rt/spindle/internal/frame"

// Loop is an executor as async-local storage sees it: *executor.Executor
// satisfies it. Its method is internal to spindle (package hooks does not
// import the executor; the executor imports hooks).
type Loop = frame.Loop

// Storage is an async-local value of type T: a value that follows the
// logical flow of a request through callbacks and tasks, as
// AsyncLocalStorage does in Node.js.
//
// Run binds a value for the duration of a function; every continuation
// registered under it (Then and Transform callbacks, OnComplete and
// OnCancel callbacks, timers, spawned tasks across their suspensions, Post,
// and Submit and Call made from the loop) sees that value when it runs,
// wherever and whenever it runs. Get reads it. Storages need no hooks:
// each continuation captures the current frame (one pointer) when it is
// registered and the loop restores it when the continuation runs.
//
// Several storages may be used at once and Run may be nested; an inner Run of
// the same storage shadows the outer value until it returns. A Storage may be
// used with any number of executors. Create one with NewStorage and share
// the pointer; the zero value and copies are not usable.
type Storage[T any] struct {
	_ byte // a Storage must have a size of its own: its address is its key
}

// NewStorage returns a new, empty async-local storage.
func NewStorage[T any]() *Storage[T] {
	return &Storage[T]{}
}

// Run calls fn with v bound to s, on top of the values of the current
// frame, and restores the current frame when fn returns (or panics). Every
// continuation registered while fn runs sees v. Run must be called by code
// that holds the loop (a callback, a task body); it panics elsewhere.
//
// Run allocates the new frame (and boxes v when T is not pointer-shaped);
// code that runs in an unchanged frame, and continuations that carry it,
// allocate nothing for it.
func (s *Storage[T]) Run(ex Loop, v T, fn func()) {
	if fn == nil {
		panic("hooks: Storage.Run with nil func")
	}
	h := mustHold(ex, "Storage.Run")
	h.Run(h.Cur.With(s, v), fn)
}

// RunValue is Storage.Run for a function with a result: it calls fn with
// v bound to s, on top of the values of the current frame, restores the
// current frame when fn returns (or panics), and returns fn's result. Every
// continuation registered while fn runs sees v:
//
//	f := hooks.RunValue(requestID, ex, id, func() *future.Future[Page] {
//		return future.Then(lookUp(), render) // render sees id
//	})
//
// RunValue must be called by code that holds the loop (a callback, a task
// body); it panics elsewhere.
func RunValue[T, R any](s *Storage[T], ex Loop, v T, fn func() R) R {
	if fn == nil {
		panic("hooks: RunValue with nil func")
	}
	h := mustHold(ex, "RunValue")
	var r R
	h.Run(h.Cur.With(s, v), func() { r = fn() })
	return r
}

// Get returns the value bound to s in the current frame and true, or the
// zero value and false when s has no value there (outside any Run, or when
// the caller does not hold the loop). It does not allocate.
func (s *Storage[T]) Get(ex Loop) (T, bool) {
	if v, ok := frame.Find(frame.Of(ex).Current(), s); ok {
		t, _ := v.(T) // a nil interface T is stored as a nil any
		return t, true
	}
	var zero T
	return zero, false
}

// Bind returns a function that calls fn under the frame that is current
// now, whatever frame is current when it is called: every storage's value
// as of the call to Bind. It is for APIs that take plain callbacks and call
// them later from another flow (a pool that serves waiters in turn, an
// emitter that calls its listeners from whoever emits), where the
// callback would otherwise see the caller's values instead of its own.
//
// Bind and the returned function must be called by code that holds the
// loop. To call a bound callback from another goroutine, hand it to the
// loop: ex.Submit(hooks.Bind(ex, fn)) runs fn on the loop under the bound
// frame even though Submit from outside the loop carries no frame.
func Bind(ex Loop, fn func()) func() {
	if fn == nil {
		panic("hooks: Bind with nil func")
	}
	h := mustHold(ex, "Bind")
	fr := h.Cur
	return func() { mustHold(ex, "a Bind func").Run(fr, fn) }
}

// Snapshot captures the current frame and returns a function that runs any
// function under it: Bind for callbacks that take arguments,
//
//	run := hooks.Snapshot(ex)
//	emitter.On(func(ev Event) { run(func() { handle(ev) }) })
//
// The same rules apply: both calls must be made by code that holds the
// loop.
func Snapshot(ex Loop) func(fn func()) {
	h := mustHold(ex, "Snapshot")
	fr := h.Cur
	return func(fn func()) { mustHold(ex, "a Snapshot func").Run(fr, fn) }
}

// mustHold returns ex's holder, and panics, naming op, when the caller does
// not hold the loop.
func mustHold(ex Loop, op string) *frame.Holder {
	h := frame.Of(ex)
	if !h.OnLoop() {
		panic("hooks: " + op + " called from a goroutine that does not hold the loop; call it in a callback or task body, or hand it to the loop with Submit")
	}
	return h
}
