package future

// Blocking work off the loop.
//
// Go runs a function on a goroutine of its own and brings its result back
// to the loop. One object, goNode, is at once the future, the waiter that
// notices a Cancel, the executor's close watch and the task that completes
// the future on the loop.
//
// Invariants:
//   - the future is completed once: by the loop with fn's result (Run), by
//     Cancel (context.Canceled), or by the executor closing (ErrClosed,
//     Interrupt); the future's own claim decides between them, and the
//     losers do nothing;
//   - fn's context is cancelled as soon as the future is completed by any of
//     the three, so fn is told to stop, and nothing waits for it to return;
//   - with GoContext, the end of the caller's ctx is a fourth way to
//     complete the future (with ctx's error), watched by context.AfterFunc
//     from Go until the future is completed, and never again after;
//   - val and err are written only by fn's goroutine, before it hands the
//     node to the loop (Schedule publishes them to the loop); a node whose
//     future is already completed when it arrives is dropped;
//   - the node is the executor's close watch from Go until the future is
//     completed, and never again after: the executor keeps no finished Go.

import (
	"context"
	"errors"
	"runtime/debug"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
	"github.com/spindle-rt/spindle/internal/loop"
)

// errGoexit fails the work of a function that called runtime.Goexit.
var errGoexit = errors.New("future: the function called runtime.Goexit")

type goNode[T any] struct {
	out    Future[T]
	cl     link // on out: notices Cancel
	watch  loop.CloseWatch
	ctx    context.Context
	cancel context.CancelCauseFunc
	fn     func(context.Context) (T, error)
	fr     *frame.Frame
	parent context.Context // GoContext's ctx, if it can end; else nil
	stop   func() bool     // stops watching parent
	val    T
	err    error
}

// Go runs fn on a goroutine of its own, off the loop (unlike Group.Go,
// which runs a task on the loop), and returns a future
// completed on ex's loop with fn's result: the way to call blocking code
// (a database driver, a file, a cgo call) from a task or a callback without
// stopping the loop. A panic in fn fails the future with a *PanicError.
//
// fn's ctx is cancelled when the future is cancelled or the executor
// closes; the future then fails at once, with context.Canceled or
// executor.ErrClosed, without waiting for fn to return (context.Cause(ctx)
// says which). fn should return soon after. fn's ctx carries no values
// and no deadline of the caller's: GoContext derives it from a ctx.
//
// fn runs off the loop: it must not touch loop-owned state, and
// hooks.Storage.Get is empty there; its ctx carries the async-local values
// of the caller of Go instead (hooks.Storage's FromContext, and
// slog.InfoContext(ctx, ...) through hooks.LogHandler). The loop code that
// the future's completion runs, its continuations and the tasks awaiting
// it, sees the async-local frame of the caller of Go as usual.
//
// Go may be called from any goroutine. Once Shutdown or Close has begun it
// returns a future that has already failed with executor.ErrClosed and does
// not start fn.
func Go[T any](ex *executor.Executor, fn func(ctx context.Context) (T, error)) *Future[T] {
	if ex == nil {
		panic("future: Go with nil executor")
	}
	if fn == nil {
		panic("future: Go with nil func")
	}
	return goStart(context.Background(), (*loop.Loop)(ex), fn)
}

// GoContext is Go with fn's ctx derived from ctx: fn sees ctx's values and
// deadline, and its ctx ends when ctx ends, as well as when the future is
// cancelled or the executor closes. When ctx ends first the future fails
// at once with ctx.Err() (context.DeadlineExceeded for a deadline), without
// waiting for fn to return. It is the way to run blocking work under a
// request's or a task's context, or to time it out and cancel it together:
//
//	ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
//	defer cancel()
//	row, err := future.GoContext(ctx, ex, query).Await(ctx)
//
// A ctx that has already ended gives a future that has already failed with
// its error, and fn does not start. GoContext may be called from any
// goroutine, with the rules of Go.
func GoContext[T any](ctx context.Context, ex *executor.Executor, fn func(ctx context.Context) (T, error)) *Future[T] {
	if ctx == nil {
		panic("future: GoContext with nil context")
	}
	if ex == nil {
		panic("future: GoContext with nil executor")
	}
	if fn == nil {
		panic("future: GoContext with nil func")
	}
	return goStart(ctx, (*loop.Loop)(ex), fn)
}

// goStart starts fn for Go (parent: context.Background()) or GoContext.
func goStart[T any](parent context.Context, ex *loop.Loop, fn func(ctx context.Context) (T, error)) *Future[T] {
	fr, onLoop := ex.Current()
	n := &goNode[T]{fn: fn, fr: fr}
	n.out.ex = ex
	n.out.id = newID(ex, hooks.KindFuture, 0, n, where{known: true, onLoop: onLoop})
	n.cl.w = (*goCancel[T])(n)
	n.out.head.Store(&n.cl) // not yet shared: no race
	base := parent
	if fr != nil {
		base = frame.NewContext(base, fr, ex.Name()) // fn's ctx carries the caller's values
	}
	n.ctx, n.cancel = context.WithCancelCause(base)
	var zero T
	if parent.Done() != nil { // a ctx that can end: watch it
		n.parent = parent
		if err := parent.Err(); err != nil {
			n.cancel(err)
			n.out.complete(zero, err, fromAnywhere)
			return &n.out
		}
		// Set before Watch, which publishes it to Interrupt.
		n.stop = context.AfterFunc(parent, n.parentEnded)
	}
	if ex.Closing() || !ex.Watch(&n.watch, n) {
		n.cancel(executor.ErrClosed)
		n.out.complete(zero, executor.ErrClosed, fromAnywhere)
		if n.stop != nil {
			n.stop()
		}
		return &n.out
	}
	if n.out.settled() { // ctx ended meanwhile: parentEnded has failed the future
		ex.Unwatch(&n.watch)
		return &n.out
	}
	go n.run()
	return &n.out
}

// parentEnded fails the future when GoContext's ctx ends first. It runs on
// a goroutine of package context's, possibly before goStart has returned,
// so it reads nothing goStart writes after registering it.
func (n *goNode[T]) parentEnded() {
	var zero T
	if n.out.complete(zero, n.parent.Err(), fromAnywhere) {
		n.cancel(context.Cause(n.parent))
		n.out.ex.Unwatch(&n.watch)
	}
}

// run calls fn on its own goroutine and hands the result to the loop.
func (n *goNode[T]) run() {
	n.err = errGoexit // stays if fn calls runtime.Goexit
	defer func() {
		if v := recover(); v != nil {
			var zero T
			n.val, n.err = zero, &PanicError{Value: v, Stack: debug.Stack()}
		}
		if n.out.settled() {
			return // cancelled or closed meanwhile: nobody wants the result
		}
		_ = n.out.ex.Schedule(n, n.fr, n.out.id) // fails only once closed
	}()
	n.val, n.err = n.fn(n.ctx)
}

// Run completes the future with fn's result, on the loop.
func (n *goNode[T]) Run() {
	n.fn = nil
	if n.out.complete(n.val, n.err, fromLoop) {
		n.end(nil)
	}
}

// Interrupt fails the future when the executor closes.
func (n *goNode[T]) Interrupt(err error) {
	var zero T
	if n.out.complete(zero, err, fromLoop) {
		n.end(err)
	}
}

// end releases fn's context and the close watch once the future has been
// completed; cause is why fn's context ends (nil: it has returned).
func (n *goNode[T]) end(cause error) {
	n.cancel(cause)
	n.out.ex.Unwatch(&n.watch)
	if n.stop != nil {
		n.stop()
	}
}

// goCancel is the waiter the node keeps on its own future.
type goCancel[T any] goNode[T]

func (c *goCancel[T]) wake(bool) {
	n := (*goNode[T])(c)
	if n.out.cancelled() {
		n.end(context.Canceled)
	}
}
