package channel

// Waiting in place, inside a task.
//
// A task started by future.Spawn runs on an loop.Fiber. SendWait,
// RecvWait, All and Select make the task the waiter: they queue a small node
// that embeds a loop.TaskWaiter, which suspends the task; the peer that
// claims the node stores the result in it and fires it. No future is
// allocated, and the nodes of SendWait and RecvWait come from a free list
// kept by the channel, so a hand-off costs a coroutine switch and no
// allocation. loop.TaskWaiter states the rules: a match wins over a
// context that ended meanwhile (the item has moved, so the operation reports
// success), and a peer never claims a node whose task's context has already
// ended, so a cancelled task moves no item even before it runs again.

import (
	"context"
	"iter"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// taskWait is the node of a task waiting in SendWait or RecvWait.
type taskWait[T any] struct {
	loop.TaskWaiter
	val T     // RecvWait: the item
	err error // ErrClosed when the channel closed on the waiter
}

// taskFiber returns the fiber of the task whose body calls op, or nil when
// the caller holds the loop outside a task (it cannot wait: a wait returns
// future.ErrDeadlock, as Await does). It panics when the caller does not
// hold c's loop. A task of c's loop holds it, so finding the caller's fiber
// is the holder check too: only a caller outside a task pays for another.
func (c *Chan[T]) taskFiber(op string) *loop.Fiber {
	if c == nil || c.ex == nil {
		c.misuse(op)
	}
	if fib := (*loop.Loop)(c.ex).CurrentFiber(); fib != nil {
		return fib
	}
	if !c.ex.OnLoop() {
		c.misuse(op)
	}
	return nil
}

// newTaskWait returns a node for the task running fib, or the reason it
// must not wait.
func (c *Chan[T]) newTaskWait(fib *loop.Fiber, ctx context.Context) (*taskWait[T], error) {
	tw := c.free.Get()
	if err := tw.Init(fib, ctx); err != nil {
		c.free.Put(tw)
		return nil, err
	}
	return tw, nil
}

// putTaskWait returns a node that is in no queue to the free list, which
// zeroes it.
func (c *Chan[T]) putTaskWait(tw *taskWait[T]) { c.free.Put(tw) }

// SendWait sends v, waiting in place until a receiver takes it (or the
// buffer has room). It must be called from the body of a task started by
// future.Spawn: the task itself is the waiter, so waiting allocates no
// future, and a hand-off costs one coroutine switch. It returns nil once v
// has been taken; ErrClosed if the channel is closed or closes while the
// task waits; ctx's error (or the task's, if the task is cancelled) if it
// ends first; executor.ErrClosed if the executor has closed or closes
// first. In the error cases v has not been sent. A send that can complete at once does so even
// if ctx has already ended. On the loop outside a task (a callback) it
// cannot wait: a send that cannot complete at once returns
// future.ErrDeadlock, as Await does (callbacks use Send or TrySend). From a
// goroutine that does not hold the loop it panics.
func (c *Chan[T]) SendWait(ctx context.Context, v T) error {
	fib := c.taskFiber("SendWait")
	if ctx == nil {
		panic("channel: SendWait with nil context")
	}
	if c.ex.Closed() {
		return executor.ErrClosed
	}
	if c.closed {
		return ErrClosed
	}
	if c.trySend(v) {
		return nil
	}
	if fib == nil {
		return future.ErrDeadlock
	}
	tw, err := c.newTaskWait(fib, ctx)
	if err != nil {
		return err
	}
	c.sendq.push(c, waiter[T]{val: v, ref: tw, kind: kindTask})
	c.wakePoller()
	if err := tw.Wait(); err != nil {
		c.sendq.withdrawn(c) // the node may still be queued; it is not reused
		return err
	}
	err = tw.err
	c.putTaskWait(tw)
	return err
}

// RecvWait receives the next item, waiting in place until one arrives. It
// must be called from the body of a task started by future.Spawn (see
// SendWait). It returns ErrClosed once the channel is closed and drained;
// ctx's error (or the task's) or executor.ErrClosed if the wait ends
// first, in which case no item was taken. An item that is there already is
// taken even if ctx has already ended. On the loop outside a task it
// returns future.ErrDeadlock instead of waiting (callbacks use Recv or
// TryRecv); from a goroutine that does not hold the loop it panics.
func (c *Chan[T]) RecvWait(ctx context.Context) (T, error) {
	fib := c.taskFiber("RecvWait")
	if ctx == nil {
		panic("channel: RecvWait with nil context")
	}
	return c.recvWait(fib, ctx, nil)
}

// recvWait is RecvWait for the task of fib (nil outside a task). r is the
// state of a range over All, or nil: a range waits with one node from
// wait to wait and watches ctx once (r.end gives both back); a lone
// RecvWait takes a node and watches ctx for this wait only.
func (c *Chan[T]) recvWait(fib *loop.Fiber, ctx context.Context, r *ranged[T]) (T, error) {
	var zero T
	if c.ex.Closed() {
		return zero, executor.ErrClosed
	}
	if v, ok := c.tryRecv(); ok {
		return v, nil
	}
	if c.closed {
		return zero, ErrClosed
	}
	if fib == nil {
		return zero, future.ErrDeadlock
	}
	var tw *taskWait[T]
	var err error
	switch {
	case r == nil || r.tw == nil:
		if tw, err = c.newTaskWait(fib, ctx); err != nil {
			return zero, err
		}
		if r != nil {
			r.tw, r.stop = tw, tw.Watch()
		}
	default:
		tw = r.tw
		if err := tw.Rearm(); err != nil {
			return zero, err // in no queue: r.end puts it back
		}
	}
	c.recvq.push(c, waiter[T]{ref: tw, kind: kindTask})
	if r == nil {
		err = tw.Wait()
	} else {
		err = tw.Suspend()
	}
	if err != nil {
		c.recvq.withdrawn(c) // the node may still be queued; it is not reused
		return zero, err
	}
	v, err := tw.val, tw.err // the claim popped the node
	if r == nil {
		c.putTaskWait(tw)
	} else {
		tw.val, tw.err = zero, nil // it waits again for the same range
	}
	return v, err
}

// All returns an iterator over the items received from c, for ranging in a
// task body:
//
//	for v := range c.All(ctx) { ... }
//
// Each step is a RecvWait. The loop ends when the channel is closed and
// drained, or when ctx (or the task) ends or the executor closes (check
// ctx.Err() afterwards to tell these apart). An item is taken only when it
// is yielded; breaking out of the loop takes nothing more. The range waits
// with one waiter node from start to end and watches ctx (when it is not
// the task's own context) once, not once per item. Meant for task
// bodies: on the loop outside a task it yields the items that are there
// and stops where it would have to wait.
func (c *Chan[T]) All(ctx context.Context) iter.Seq[T] {
	if c == nil {
		panic("channel: All on a nil channel")
	}
	if ctx == nil {
		panic("channel: All with nil context")
	}
	return func(yield func(T) bool) {
		fib := c.taskFiber("All")
		r := ranged[T]{c: c}
		defer r.end()
		for {
			v, err := c.recvWait(fib, ctx, &r)
			if err != nil || !yield(v) {
				return
			}
		}
	}
}

// ranged is the state of one range over All: the waiter node it reuses
// from wait to wait (recvWait), and the stop of its watch on ctx.
type ranged[T any] struct {
	c    *Chan[T]
	tw   *taskWait[T]
	stop func() bool
}

// end stops the watch and gives the node back, unless it was withdrawn
// (it may still be queued).
func (r *ranged[T]) end() {
	if r.stop != nil {
		r.stop()
	}
	if r.tw != nil && !r.tw.Withdrawn() {
		r.c.putTaskWait(r.tw)
	}
}
