package semaphore

import (
	"context"
	"sync/atomic"

	"github.com/spindle-rt/spindle/future"
)

// Go runs fn off the loop while it holds n units of s: the way to bound
// blocking work (database calls, requests to a peer) that a caller may stop
// waiting for. It takes the units as Acquire does (waiting, in FIFO order,
// by Acquire's rules: in a task it suspends, on another goroutine it parks,
// on the loop outside a task it fails with future.ErrDeadlock rather than
// wait), then starts fn as future.GoContext(ctx, ex, fn) does, and gives
// the units back when fn returns.
//
// The units follow fn's real return, not its future: the future may
// complete long before fn does (it is cancelled, a WithTimeout or Timeout
// on it gives up, ctx ends, the executor closes), and a slot given back
// then would let more calls run at once than the semaphore allows, since
// the abandoned ones still run. With Go, at most s.Size() units' worth of
// fn run at once, whatever their callers do. A call whose future completes
// before fn has started does not start it, and gives the units back at
// once.
//
// If the units cannot be taken (ctx ends, the request is larger than the
// semaphore, the executor has closed), Go returns a future that has
// already failed with Acquire's error, and fn does not start.
func Go[T any](ctx context.Context, s *Semaphore, n int64, fn func(ctx context.Context) (T, error)) *future.Future[T] {
	if ctx == nil {
		panic("semaphore: Go with nil context")
	}
	if fn == nil {
		panic("semaphore: Go with nil func")
	}
	if err := s.Acquire(ctx, n); err != nil {
		return future.Failed[T](s.ex, err)
	}
	// Exactly one of fn's goroutine and this caller gives the units back:
	// whoever claims them first.
	var claimed atomic.Bool
	f := future.GoContext(ctx, s.ex, func(ctx context.Context) (T, error) {
		if !claimed.CompareAndSwap(false, true) { // the future completed first
			var zero T
			return zero, context.Cause(ctx)
		}
		defer s.Release(n)
		return fn(ctx)
	})
	// A future still pending here has started its goroutine, which will
	// claim the units; one that is ready may not have (the executor closed,
	// ctx ended), and then fn never runs.
	if f.Ready() && claimed.CompareAndSwap(false, true) {
		s.Release(n)
	}
	return f
}
