package merge

// The receive side: Recv (a future per item), RecvWait (one item, waiting in
// place in a task) and All (a range over the items, in a task).
//
// Receivers queue in m.waiters when no item is ready and are served in FIFO
// order by drain. drain runs as a task posted by the drainer, which is the
// merge's parent waker whenever receivers wait: the drainer's Wake is called
// from inside a substream's wake (a channel's Send, say), where polling that
// substream again would re-enter it, so it only posts the drain.
//
// A task waits in place: its node (taskWaiter) names its fiber; drain stores
// the result in the node and wakes the fiber. Nodes come from a free list
// kept by the merge, so waiting allocates nothing. Every wake-up is a hint:
// the task looks at its node's state after Suspend returns. A receiver that
// went away (a cancelled Recv, a task whose context ended) stays in the
// queue until drain or the next receiver pops it; drain never hands an item
// to it. A withdrawn node may still sit in the queue, so it is never reused.

import (
	"context"
	"iter"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// waiter is one queued receiver: a Recv's promise or a waiting task.
type waiter[T any] struct {
	p *future.Promise[T]
	t *taskWaiter[T]
}

// taskWaiter is the node of a task waiting in RecvWait or All.
type taskWaiter[T any] struct {
	loop.TaskWaiter
	v   T
	err error
}

func (w waiter[T]) gone() bool {
	if w.p != nil {
		return w.p.Future().Ready() // only a cancellation completes a queued promise
	}
	return !w.t.Claimable()
}

// deliver hands the receiver its result and reports whether it took it.
func (w waiter[T]) deliver(v T, err error) bool {
	if w.p != nil {
		return w.p.Complete(v, err)
	}
	t := w.t
	t.v, t.err = v, err
	t.Fire()
	return true
}

// drainer is the merge's parent waker while receivers wait, and the task
// that serves them.
type drainer[T any] Merged[T]

// Wake posts the drain once. It is called only by the merge, on the loop.
func (d *drainer[T]) Wake() {
	m := (*Merged[T])(d)
	if m.drainPosted {
		return
	}
	m.drainPosted = true
	(*loop.Loop)(m.ex).PostRunnable(d, nil, 0)
}

// Run serves the waiting receivers while items are ready.
func (d *drainer[T]) Run() {
	m := (*Merged[T])(d)
	m.drainPosted = false
	for {
		m.trimWaiters()
		w, ok := m.waiters.Pop()
		if !ok {
			return
		}
		v, ok, err := m.PollRecv(d)
		if !ok && err == nil {
			m.waiters.PushFront(w)
			return
		}
		// A promise cancelled from another goroutine since trimWaiters
		// refuses the item: it goes to the next receiver. ErrClosed
		// sticks, so it needs no keeping.
		if !w.deliver(v, err) && !isEnd(err) {
			m.stash(v, err)
		}
	}
}

// trimWaiters pops the receivers at the front that went away.
func (m *Merged[T]) trimWaiters() {
	for {
		w := m.waiters.Peek()
		if w == nil || !w.gone() {
			return
		}
		m.waiters.Pop()
	}
}

func (m *Merged[T]) stash(v T, err error) {
	m.stashV, m.stashErr, m.hasStash = v, err, true
}

// tryRecv polls for an item when no receiver is queued ahead of the caller,
// with the drainer as the waker. done is false when the caller must wait.
func (m *Merged[T]) tryRecv() (v T, err error, done bool) {
	m.trimWaiters()
	if m.waiters.Len() > 0 {
		return v, nil, false
	}
	v, ok, err := m.PollRecv((*drainer[T])(m))
	return v, err, ok || err != nil
}

// Recv returns a future of the next item. It fails with ErrClosed once the
// merge has ended, or with the error of a substream that failed (that
// substream is dropped; the next Recv goes on with the others). An item that
// is ready now gives a future that is already complete. Receivers are served
// in the order they called Recv; cancelling the future withdraws the
// receiver and moves no item. Each call allocates the future; tasks receive
// without allocating with RecvWait and All. Loop only.
func (m *Merged[T]) Recv() *future.Future[T] {
	m.mustLoop("Recv")
	if v, err, done := m.tryRecv(); done {
		if err != nil {
			return future.Failed[T](m.ex, err)
		}
		return future.Resolved(m.ex, v)
	}
	p := future.NewPromise[T](m.ex)
	m.waiters.Push(waiter[T]{p: p})
	return p.Future()
}

// RecvWait receives the next item, with Recv's results, waiting in place:
// inside a task started by future.Spawn it suspends the task until an item
// is there, ctx (or the task) ends, then it returns that error, or the
// executor closes (executor.ErrClosed); a wait that ends early takes no
// item. The task itself is the waiter, so RecvWait allocates nothing, and
// it watches ctx with context.AfterFunc only when ctx is not the task's own
// context (or a value-only wrapper of it). On the loop outside a task it
// returns an item that is ready now, or future.ErrDeadlock. Loop only.
func (m *Merged[T]) RecvWait(ctx context.Context) (T, error) {
	m.mustLoop("RecvWait")
	if v, err, done := m.tryRecv(); done {
		return v, err
	}
	var zero T
	fib := (*loop.Loop)(m.ex).CurrentFiber()
	if fib == nil {
		return zero, future.ErrDeadlock
	}
	tw := m.free.Get()
	err := tw.Init(fib, ctx)
	if err == nil {
		err = m.wait(tw, true)
	}
	if err != nil {
		if !tw.Withdrawn() {
			m.putWaiter(tw)
		}
		return zero, err
	}
	v, err := m.take(tw)
	m.putWaiter(tw)
	return v, err
}

// All returns an iterator over the merge's items, for the body of a task
// started by future.Spawn:
//
//	for v, err := range m.All(ctx) {
//		if err != nil { ... } // a substream failed (it is dropped; the range goes on)
//		...
//	}
//
// The range ends when the merge ends. A substream's failure is yielded as
// (zero, err) and the range goes on with the others (hence iter.Seq2, where
// a channel's All, which cannot fail, is an iter.Seq). When ctx or the task
// ends, or the executor closes, while the task waits, that error is yielded
// last. Each step is a RecvWait; the range allocates nothing per item and
// registers a context.AfterFunc at most once. Breaking out of the range
// takes no further item.
//
// Outside a task, on the loop, the range yields the items ready now and then,
// instead of waiting, future.ErrDeadlock. Loop only.
func (m *Merged[T]) All(ctx context.Context) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		m.mustLoop("All")
		var (
			zero T
			tw   *taskWaiter[T]
			stop func() bool
		)
		defer func() {
			if stop != nil {
				stop()
			}
			if tw != nil && !tw.Withdrawn() {
				m.putWaiter(tw)
			}
		}()
		for {
			v, err, done := m.tryRecv()
			if !done {
				if tw == nil {
					fib := (*loop.Loop)(m.ex).CurrentFiber()
					if fib == nil {
						yield(zero, future.ErrDeadlock)
						return
					}
					tw = m.free.Get()
					if err = tw.Init(fib, ctx); err != nil {
						yield(zero, err)
						return
					}
					stop = tw.Watch()
				}
				if err = m.wait(tw, false); err != nil {
					yield(zero, err)
					return
				}
				v, err = m.take(tw)
			}
			if err != nil {
				if isEnd(err) {
					return
				}
				if !yield(zero, err) {
					return
				}
				continue
			}
			if !yield(v, nil) {
				return
			}
		}
	}
}

// putWaiter returns a node that is in no queue to the free list.
func (m *Merged[T]) putWaiter(tw *taskWaiter[T]) { m.free.Put(tw) }

// take returns the result drain stored in tw and clears it.
func (m *Merged[T]) take(tw *taskWaiter[T]) (v T, err error) {
	var zero T
	v, err = tw.v, tw.err
	tw.v, tw.err = zero, nil
	return v, err
}

// wait queues tw and suspends its task until drain fills it (nil) or the
// task must stop waiting (the reason; tw is then withdrawn and, since it may
// still sit in the queue, never reused). watch says whether to watch tw's
// ctx for this wait (All watches once for the whole range).
func (m *Merged[T]) wait(tw *taskWaiter[T], watch bool) error {
	if err := tw.Rearm(); err != nil {
		return err
	}
	m.waiters.Push(waiter[T]{t: tw})
	if watch {
		return tw.Wait()
	}
	return tw.Suspend()
}
