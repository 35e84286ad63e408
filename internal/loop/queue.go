package loop

// The task queue.
//
// The loop's queue is three FIFO parts consumed in order:
//
//	front (due timers) -> in[pos:] (a batch taken from the inbox) -> back (posts)
//
// Invariants (all loop-owned):
//   - Post appends to back; due timers append to front, in deadline order;
//   - a batch taken from the inbox is consumed in place from in, without
//     copying, but only when back is empty: then everything in back was
//     posted after the batch was taken, so running in before back keeps the
//     FIFO order of scheduling. When back is not empty the batch is copied to
//     the end of back instead;
//   - a slot of in is cleared as soon as it is consumed, so the queue keeps
//     no finished task alive, and an exhausted in is handed back to the inbox
//     for reuse;
//   - once the loop is idle, buffers that grew beyond trimCap for a burst
//     are released (Trim), so memory follows live work.

import "github.com/spindle-rt/spindle/internal/ring"

type taskQueue struct {
	front ring.Ring[item]
	in    []item
	pos   int
	back  ring.Ring[item]
}

// Len returns the number of queued tasks.
func (q *taskQueue) Len() int { return q.front.Len() + len(q.in) - q.pos + q.back.Len() }

// Push appends a task at the back.
func (q *taskQueue) Push(it item) { q.back.Push(it) }

// TryPush is Push when back has room, and reports whether it had: small
// enough to inline into Post, which calls Push only when back must grow.
func (q *taskQueue) TryPush(it item) bool { return q.back.TryPush(it) }

// PushUrgent appends a task to the front part, ahead of everything else
// queued.
func (q *taskQueue) PushUrgent(it item) { q.front.Push(it) }

// OnlyBack reports whether every queued task is in the back part, as in a
// burst of posts. Then the loop takes the next one with PopBack, which
// inlines, rather than with Pop, which does not.
func (q *taskQueue) OnlyBack() bool { return q.front.Len() == 0 && q.pos == len(q.in) }

// PopBack is Pop while OnlyBack holds.
func (q *taskQueue) PopBack() (item, bool) { return q.back.Pop() }

// Pop removes the next task.
func (q *taskQueue) Pop() (item, bool) {
	if q.front.Len() > 0 {
		return q.front.Pop()
	}
	if q.pos < len(q.in) {
		it := q.in[q.pos]
		q.in[q.pos] = item{}
		q.pos++
		return it, true
	}
	return q.back.Pop()
}

// Batching reports whether a batch taken from the inbox is still being
// consumed; the next one must wait for it.
func (q *taskQueue) Batching() bool { return q.pos < len(q.in) }

// TakeBatch queues batch (taken from the inbox) behind everything queued and
// returns a slice the inbox may reuse. Call only when Batching is false.
func (q *taskQueue) TakeBatch(batch []item) (spare []item) {
	spare = q.in[:0]
	q.in, q.pos = nil, 0
	if q.back.Len() == 0 && q.front.Len() == 0 {
		q.in = batch
		return spare
	}
	for i := range batch {
		q.back.Push(batch[i])
		batch[i] = item{}
	}
	if cap(spare) < cap(batch) {
		spare = batch[:0]
	}
	return spare
}

// each pops every queued task, in order, and hands it to fn, including
// tasks fn queues meanwhile.
func (q *taskQueue) each(fn func(item)) {
	for {
		it, ok := q.Pop()
		if !ok {
			return
		}
		fn(it)
	}
}

// Oversized reports whether a buffer of the queue holds more than max items.
func (q *taskQueue) Oversized(max int) bool {
	return q.front.Cap() > max || q.back.Cap() > max || cap(q.in) > max
}

// Trim gives back the buffers of an empty queue that grew beyond max items.
func (q *taskQueue) Trim(max int) {
	if q.Len() != 0 {
		return
	}
	q.front.Trim(max)
	q.back.Trim(max)
	if cap(q.in) > max {
		q.in, q.pos = nil, 0
	}
}
