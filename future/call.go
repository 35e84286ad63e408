package future

import (
	"context"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Futures that need no continuation: already-completed ones, Call and Sleep.

// Resolved returns a future bound to e that is already resolved with v.
func Resolved[T any](e *executor.Executor, v T) *Future[T] {
	return done((*loop.Loop)(e), v, nil)
}

// Failed returns a future bound to e that has already failed with err,
// which must not be nil.
func Failed[T any](e *executor.Executor, err error) *Future[T] {
	ex := (*loop.Loop)(e)
	if err == nil {
		panic("future: Failed with nil error")
	}
	var zero T
	return done(ex, zero, err)
}

// closedFuture returns a future of ex that has failed with
// executor.ErrClosed.
func closedFuture[T any](ex *loop.Loop) *Future[T] {
	var zero T
	return done(ex, zero, executor.ErrClosed)
}

func done[T any](ex *loop.Loop, v T, err error) *Future[T] {
	if ex == nil {
		panic("future: nil executor")
	}
	f, w := newObjHere[Future[T]](ex)
	f.val, f.err = v, err
	f.ex = ex
	f.id = newID(ex, hooks.KindFuture, 0, f, w)
	f.publishFresh(w)
	return f
}

// callNode runs a function on the loop and completes its future with the
// result.
type callNode[T any] struct {
	out Future[T]
	fn  func() (T, error)
}

// Call runs fn on e's loop and returns a future of its result. It may be
// called from any goroutine: it is how code outside the loop hands work to
// it (f := future.Call(ex, fn); v, err := f.Await(ctx)). A panic in fn fails
// the future with a *PanicError; if the executor is closing, the future
// fails with executor.ErrClosed.
func Call[T any](e *executor.Executor, fn func() (T, error)) *Future[T] {
	ex := (*loop.Loop)(e)
	if ex == nil {
		panic("future: Call with nil executor")
	}
	if fn == nil {
		panic("future: Call with nil func")
	}
	fr, onLoop := ex.Current()
	return call(ex, fn, fr, onLoop)
}

// CallContext is Call for code that has a context: called off the loop, fn
// runs under the async-local values that ctx carries (hooks.Storage's
// WithValue, hooks.NewContext, a task's ctx), so a handler's request id
// reaches fn and every continuation fn registers. Called on the loop it is
// Call: fn runs under the current values. ctx only carries values here: its
// end does not cancel the call (Cancel the future, or Await it with ctx).
func CallContext[T any](ctx context.Context, e *executor.Executor, fn func() (T, error)) *Future[T] {
	ex := (*loop.Loop)(e)
	if ex == nil {
		panic("future: CallContext with nil executor")
	}
	if fn == nil {
		panic("future: CallContext with nil func")
	}
	if ctx == nil {
		panic("future: CallContext with nil context")
	}
	fr, onLoop := ex.Current()
	if !onLoop {
		fr = ctxFrame(ctx)
	}
	return call(ex, fn, fr, onLoop)
}

// call is Call and CallContext: fn runs under fr.
func call[T any](ex *loop.Loop, fn func() (T, error), fr *frame.Frame, onLoop bool) *Future[T] {
	n := newObj[callNode[T]](ex, onLoop)
	n.fn = fn
	n.out.ex = ex
	n.out.id = newID(ex, hooks.KindFuture, 0, n, where{known: true, onLoop: onLoop})
	if err := ex.SubmitRunnable(n, fr, n.out.id); err != nil {
		var zero T
		n.out.complete(zero, err, fromAnywhere)
	}
	return &n.out
}

// Run calls fn on the loop.
func (n *callNode[T]) Run() {
	if n.out.settled() {
		return
	}
	v, err := n.fn()
	n.fn = nil
	n.out.complete(v, err, fromLoop)
}

// CatchPanic fails the future with fn's panic.
func (n *callNode[T]) CatchPanic(v any, stack []byte) {
	var zero T
	if !n.out.complete(zero, &PanicError{Value: v, Stack: stack}, fromLoop) {
		n.out.ex.ReportPanic(v, stack) // the future was cancelled meanwhile
	}
}

// Sleep returns a future resolved on e's loop once d has elapsed.
// Cancelling the future stops the timer. If the executor closes first (or
// has closed), the future fails with executor.ErrClosed.
func Sleep(e *executor.Executor, d time.Duration) *Future[struct{}] {
	ex := (*loop.Loop)(e)
	p := NewPromise[struct{}](e)
	t := ex.AfterFuncClose(d, func() { p.Resolve(struct{}{}) }, func() { p.Reject(executor.ErrClosed) })
	p.OnCancel(func() { t.Stop() })
	return p.Future()
}
