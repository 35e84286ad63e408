package loop

// Waiting in place.
//
// Packages that keep their own queues of waiters (channel, merge) let a task
// wait without a future: the task itself is the waiter. TaskWaiter is the
// part of such a waiter node that belongs to the task.
//
// Invariants (loop-owned, like the queues that hold the nodes):
//   - state moves waiting -> matched (Fire, by the peer that claims the
//     node) or waiting -> withdrawn (the task gave up: ctx or the task
//     ended, or the executor closed), once per wait;
//   - a peer claims only a Claimable node: waiting, with neither its ctx
//     nor its task ended, so a task whose wait is ending moves nothing even
//     before it runs again;
//   - every wake-up is a hint: after a suspension the task looks at state
//     first (a match wins over a ctx that ended meanwhile), then at Err.

import (
	"context"
)

const (
	twWaiting uint8 = iota
	twMatched
	twWithdrawn
)

// TaskWaiter is embedded in the waiter nodes of packages that let a task
// started by Spawn wait in place: the node names the task's fiber, the peer
// that claims it stores the result in the node and calls Fire, and the
// task's Wait returns. No future is allocated. A TaskWaiter is loop-owned:
// all its methods run on the loop. The zero value is not waiting; call
// Init for each wait.
type TaskWaiter struct {
	fib   *Fiber
	ctx   context.Context
	tc    context.Context // the task's own context when ctx is not it (nil otherwise)
	after bool            // ctx can end apart from the task: Watch must watch it
	state uint8
}

// Init prepares w for the task running fib to wait with ctx. It returns why
// the task must not wait at all (see Err), if it must not. Init must be
// called from that task's body.
func (w *TaskWaiter) Init(fib *Fiber, ctx context.Context) error {
	w.fib, w.ctx, w.tc, w.after, w.state = fib, ctx, nil, false, twWaiting
	if tc := TaskContext(fib); !ownContext(tc, ctx) {
		// A context other than the task's: watch the task's too (as Await
		// does), and wake the fiber when ctx ends.
		w.tc = tc
		w.after = ctx.Done() != nil
	}
	return w.Err()
}

// Rearm makes w wait again, with the same task and ctx, after a match. It
// returns Err.
func (w *TaskWaiter) Rearm() error {
	w.state = twWaiting
	return w.Err()
}

// ownContext reports whether ctx ends exactly when the task whose context
// is tc ends: it is tc, or a value-only wrapper of it. Then the task's own
// cancellation and the executor closing already wake the fiber, and nothing
// needs to watch ctx.
func ownContext(tc, ctx context.Context) bool {
	if tc == nil {
		return false
	}
	if ctx == tc { // tc's dynamic type is comparable: this cannot panic
		return true
	}
	d := ctx.Done()
	return d != nil && d == tc.Done()
}

// Err says why the wait must end, if it must: ErrClosed once the
// executor has closed, ctx's error once it has ended, or the task's
// (context.Canceled) once the task was cancelled.
func (w *TaskWaiter) Err() error {
	if w.fib.Loop().Closed() {
		return ErrClosed
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.tc != nil {
		return w.tc.Err()
	}
	return nil
}

// Claimable reports whether a peer may claim w: it is waiting, and neither
// its ctx nor its task has ended.
func (w *TaskWaiter) Claimable() bool {
	if w.state != twWaiting || w.ctx.Err() != nil {
		return false
	}
	return w.tc == nil || w.tc.Err() == nil
}

// Fire marks w matched and wakes its task. The caller has checked
// Claimable and stored the result.
func (w *TaskWaiter) Fire() {
	w.state = twMatched
	w.fib.Wake()
}

// Matched reports whether a peer has claimed w.
func (w *TaskWaiter) Matched() bool { return w.state == twMatched }

// Withdrawn reports whether w's task gave up its wait; the node may still
// sit in a queue and must not be reused.
func (w *TaskWaiter) Withdrawn() bool { return w.state == twWithdrawn }

// Watch arranges for the task to be woken when ctx ends, if ctx can end
// apart from the task, and returns the func that stops watching; it returns
// nil when there is nothing to watch. Wait watches by itself; a caller that
// waits many times with one ctx (a ranged receive) watches once and calls
// Suspend.
func (w *TaskWaiter) Watch() (stop func() bool) {
	if !w.after {
		return nil
	}
	return context.AfterFunc(w.ctx, w.fib.Wake)
}

// Suspend suspends the task until w is matched (then it returns nil) or the
// wait must end (then w is withdrawn and Suspend returns the reason). It
// does not watch ctx: see Watch.
func (w *TaskWaiter) Suspend() error {
	for w.state != twMatched {
		w.fib.Suspend()
		if w.state == twMatched {
			break
		}
		if err := w.Err(); err != nil {
			w.state = twWithdrawn
			return err
		}
	}
	return nil
}

// Wait is Watch, Suspend, and stopping the watch.
func (w *TaskWaiter) Wait() error {
	if w.state == twMatched {
		return nil
	}
	stop := w.Watch()
	err := w.Suspend()
	if stop != nil {
		stop()
	}
	return err
}
