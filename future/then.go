package future

import (
	"unsafe"

	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
)

// node is what the continuations of Then and Transform share: the waiter on
// src, the queued task and the derived future, in one allocation.
type node[T, U any] struct {
	out Future[U]
	l   link
	src *Future[T]
	fr  *frame.Frame
}

// out must come first in a node: sourceOf finds src from the address of
// out. This fails to compile otherwise.
var _ = [1]struct{}{}[unsafe.Offsetof(node[int, int]{}.out)]

// sourceOf returns the core of the future that f, a pending future derived
// by Then or Transform (its err is the derived mark), hangs on: f is the
// out of a node[T, U], whose src lies at an offset that does not depend on
// T (src is a pointer), and a Future[T] begins with its core. Only Cancel
// calls it, between its claim and its publish: the node clears src only
// once it sees the future done (release), after that read.
func sourceOf[U any](f *Future[U]) *core {
	src := unsafe.Add(unsafe.Pointer(f), unsafe.Offsetof(node[struct{}, U]{}.src))
	return (*core)(*(*unsafe.Pointer)(src))
}

// register links the continuation w (the node's outer object) into src.
// fr and onLoop are what src's executor's Current returned.
func (n *node[T, U]) register(src *Future[T], w waiter, fr *frame.Frame, onLoop bool) *Future[U] {
	ex := src.ex
	n.src, n.fr = src, fr
	n.out.ex = ex
	if ex.HooksEnabled() {
		n.out.id = track(ex, ex.NewResourceOnLoop(hooks.KindFuture, src.id, onLoop), &n.out)
	}
	n.out.err = (*derivedMark)(nil) // for Cancel, while pending
	n.l.w = w
	if !src.addWaiter(&n.l) {
		w.wake(onLoop)
	}
	return &n.out
}

// gone reports whether the derived future has completed while the node
// still waits on src (it was cancelled): its wake would do nothing.
func (n *node[T, U]) gone() bool { return n.out.ready() }

// CatchPanic fails the derived future with the panic of the callback.
func (n *node[T, U]) CatchPanic(v any, stack []byte) {
	var zero U
	if !n.out.complete(zero, &PanicError{Value: v, Stack: stack}, fromLoop) {
		n.out.ex.ReportPanic(v, stack) // the future was cancelled meanwhile
	}
	n.release()
}

// release lets the source be collected once the derived future is done
// (completed by the continuation or by Cancel). While a Cancel is between
// its claim and its publish, src stays: Cancel reads it (sourceOf). A
// continuation that completed the future itself clears src at once: no
// Cancel can read it any more.
func (n *node[T, U]) release() {
	if n.out.ready() {
		n.src = nil
	}
}

// thenNode is one link of a Then chain.
type thenNode[T, U any] struct {
	node[T, U]
	fn func(T) (U, error)
}

// Then returns a future completed with fn's result once f resolves with a
// value. If f fails, fn is not called and the error propagates to the
// returned future at the cost of a value. fn runs on the loop, always after
// Then has returned (even when f is already done), under the async-local
// frame current at the call. A panic in fn fails the returned future with a
// *PanicError. Once f's executor has closed, Then returns a future that has
// already failed with executor.ErrClosed, and a callback whose executor
// closes before it runs is not called: its future fails with
// executor.ErrClosed.
func Then[T, U any](f *Future[T], fn func(T) (U, error)) *Future[U] {
	if f == nil {
		panic("future: Then on nil future")
	}
	if fn == nil {
		panic("future: Then with nil func")
	}
	f.mustMade("Then")
	if f.ex.Closed() {
		return closedFuture[U](f.ex)
	}
	fr, onLoop := f.ex.Current()
	n := newObj[thenNode[T, U]](f.ex, onLoop)
	n.fn = fn
	return n.register(f, n, fr, onLoop)
}

func (n *thenNode[T, U]) wake(onLoop bool) {
	schedule(n.out.ex, onLoop, n, n.fr, n.out.id)
}

// Run computes the derived future on the loop.
func (n *thenNode[T, U]) Run() {
	src, fn := n.src, n.fn
	n.fn = nil // let fn be collected; src goes once the future is done
	if src == nil || n.out.settled() {
		n.release()
		return // cancelled meanwhile
	}
	var u U
	err := src.err
	if err == nil {
		u, err = fn(src.val)
	}
	if n.out.complete(u, err, fromLoop) {
		n.src = nil // see release
		return
	}
	n.release()
}

// transformNode is one Transform link.
type transformNode[T, U any] struct {
	node[T, U]
	fn func(T, error) (U, error)
}

// Transform is Then for both outcomes: fn receives f's value and error and
// its result completes the returned future, so it can recover from an error
// or turn a value into one. Like Then, it returns a failed future once f's
// executor has closed.
func Transform[T, U any](f *Future[T], fn func(T, error) (U, error)) *Future[U] {
	if f == nil {
		panic("future: Transform on nil future")
	}
	if fn == nil {
		panic("future: Transform with nil func")
	}
	f.mustMade("Transform")
	if f.ex.Closed() {
		return closedFuture[U](f.ex)
	}
	fr, onLoop := f.ex.Current()
	n := newObj[transformNode[T, U]](f.ex, onLoop)
	n.fn = fn
	return n.register(f, n, fr, onLoop)
}

func (n *transformNode[T, U]) wake(onLoop bool) {
	schedule(n.out.ex, onLoop, n, n.fr, n.out.id)
}

// Run computes the derived future on the loop.
func (n *transformNode[T, U]) Run() {
	src, fn := n.src, n.fn
	n.fn = nil
	if src == nil || n.out.settled() {
		n.release()
		return
	}
	u, err := fn(src.val, src.err)
	if n.out.complete(u, err, fromLoop) {
		n.src = nil // see release
		return
	}
	n.release()
}

// OnComplete registers fn to run on the loop with f's value and error once f
// completes. Unlike Then it makes no new future; a panic in fn goes to the
// executor's panic handler. If f's executor has closed by the time fn would
// be queued, fn is not lost: it is called on the goroutine that completes f
// (or registers fn), since the loop no longer runs anything.
func (f *Future[T]) OnComplete(fn func(T, error)) {
	if f == nil {
		panic("future: OnComplete on nil future")
	}
	if fn == nil {
		panic("future: OnComplete with nil func")
	}
	f.mustMade("OnComplete")
	fr, onLoop := f.ex.Current()
	n := &completeNode[T]{src: f, fn: fn, fr: fr}
	n.l.w = n
	if !f.addWaiter(&n.l) {
		n.wake(onLoop)
	}
}

type completeNode[T any] struct {
	l   link
	src *Future[T]
	fn  func(T, error)
	fr  *frame.Frame
}

func (n *completeNode[T]) wake(onLoop bool) { schedule(n.src.ex, onLoop, n, n.fr, n.src.id) }

// Run calls the callback on the loop.
func (n *completeNode[T]) Run() { n.fn(n.src.val, n.src.err) }
