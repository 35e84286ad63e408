package shard

// Lanes: the one-way path from one shard to another.
//
// A lane carries messages (calls, and the replies to calls) from its source
// shard to its destination shard through its queue. It is made by the
// source on first use, so pairs of shards that never talk cost nothing but
// a nil pointer.
//
// Invariants:
//   - the source's loop is the queue's only producer and the destination's
//     loop its only consumer (queue.go); the sweep after every shard has
//     closed is the only other reader;
//   - the source publishes at its loop's batch boundary (shard.Flush) or as
//     soon as a batch is full, so a batch costs one publish whatever the
//     number of calls in it;
//   - armed is true while a drain of the lane is queued or running on the
//     destination. Only the side that flips it from false to true queues the
//     drain: the source after it published (through the destination's inbox,
//     which wakes a sleeping loop), or the drain itself when it finds more
//     work after disarming. So the destination is woken at most once per
//     batch, and not at all while it is still draining the lane;
//   - no message is stranded: the drain stores armed = false and then looks
//     at the queue again, the source publishes and then loads armed; with
//     sequentially consistent atomics one of the two sees the other;
//   - a drain delivers at most drainBudget messages per run, then queues
//     itself behind the destination's other work;
//   - cur is the message being delivered (destination-owned), so that a
//     panic in the function of the call it carries fails that call alone.
//     Delivering a reply runs no user code (completing a promise only
//     queues its waiters, and hooks are guarded), so only a call's function
//     can panic in a drain.

import (
	"sync/atomic"

	"github.com/spindle-rt/spindle/future"
)

// drainBudget bounds the messages a drain delivers before it lets the
// destination's other work run.
const drainBudget = 128

type lane struct {
	src, dst *shard
	q        *ringQueue
	dirty    bool // source-owned: in src.dirty
	_        [64]byte
	armed    atomic.Bool
	_        [64]byte
	cur      message // destination-owned
}

// publish makes the pushed messages visible and, if the destination is not
// already draining the lane, queues a drain there. Source only.
func (l *lane) publish() {
	if l.q.publish() && !l.armed.Load() && l.armed.CompareAndSwap(false, true) {
		// An error means the destination has closed: no drain will come,
		// and the group's sweep releases the messages.
		_ = l.dst.ex.Schedule(l, nil, 0)
	}
}

// Run drains the lane on the destination's loop.
func (l *lane) Run() {
	at := l.dst
	for range drainBudget {
		m, ok := l.q.pop()
		if !ok {
			l.cur = nil
			l.armed.Store(false)
			if l.q.ready() && l.armed.CompareAndSwap(false, true) {
				at.ex.PostRunnable(l, nil, 0)
			}
			return
		}
		at.recv++
		l.cur = m
		m.deliver(at)
	}
	l.cur = nil
	at.ex.PostRunnable(l, nil, 0)
}

// CatchPanic fails the call whose function panicked and goes on draining.
// A panic outside a call's function would be a bug of the lane: it goes to
// the panic handler, and the lane stops rather than fail again forever.
func (l *lane) CatchPanic(v any, stack []byte) {
	m := l.cur
	l.cur = nil
	if m == nil {
		l.dst.ex.ReportPanic(v, stack)
		return
	}
	m.fail(l.dst, &future.PanicError{Value: v, Stack: stack})
	l.dst.ex.PostRunnable(l, nil, 0)
}
