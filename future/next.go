package future

import (
	"context"

	"github.com/spindle-rt/spindle/executor"
)

// Poller is a poll-based source of items, such as a channel.Chan, a
// merge.Merged or any merge.Stream: PollRecv returns an item (ok), the end
// or a failure (err), or neither, in which case it wakes w when it may have
// more.
type Poller[T any] interface {
	PollRecv(w executor.Waker) (v T, ok bool, err error)
}

// Next receives the next item from p in the body of the task that owns ctx:
// it polls p with a waker that resumes the task, and suspends the task while
// p is pending, so waiting costs a coroutine switch and allocates nothing.
// It returns p's error when p fails or ends, executor.ErrClosed once the
// executor is closing, and ctx's error once ctx ends. Elsewhere than in that
// task's body it panics (from other goroutines, await a future such as
// Chan.Recv instead).
func Next[T any](ctx context.Context, p Poller[T]) (T, error) {
	// The task is checked in full before the first suspension only: an item
	// that is there costs no more than the poll (which itself refuses a
	// goroutine that does not hold the loop).
	t := taskOf(ctx)
	if t == nil {
		panic("future: Next called outside the body of the task that owns ctx")
	}
	fib := &t.fiber
	var stop func() bool
	checked := false
	for {
		v, ok, err := p.PollRecv(fib)
		if ok || err != nil {
			if stop != nil {
				stop()
			}
			return v, err
		}
		if !checked {
			if currentTask(ctx) != t {
				panic("future: Next called outside the body of the task that owns ctx")
			}
			checked = true
		}
		if err := t.waitEnded(ctx); err != nil {
			if stop != nil {
				stop()
			}
			var zero T
			return zero, err
		}
		if stop == nil && ctx != t && ctx.Done() != t.Done() {
			stop = context.AfterFunc(ctx, fib.Wake) // a ctx of its own: watch it
		}
		fib.Suspend()
	}
}

// waitEnded says why the task must stop waiting, if it must: the loop is
// closing, or ctx (or the task) has ended.
func (t *taskBase) waitEnded(ctx context.Context) error {
	if t.fiber.Loop().Closed() {
		return executor.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.Err()
}
