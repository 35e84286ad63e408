package loop

// The task queue.
//
// The loop's queue is three FIFO parts consumed in order:
//
//	front (due timers) -> in (blocks taken from the inbox) -> back (posts)
//
// Invariants (all loop-owned):
//   - Post appends to back; due timers append to front, in deadline order;
//   - blocks taken from the inbox (inbox.go) are consumed in place, from
//     in.items[pos] on, but only when back is empty: then everything in back
//     was posted after the blocks were taken, so running in before back
//     keeps the FIFO order of scheduling. When back is not empty their
//     items are copied to the end of back instead;
//   - inLen counts the items left in the blocks of in;
//   - a slot of in is cleared as soon as it is consumed, so the queue keeps
//     no finished task alive; a consumed block goes to used, and the loop
//     hands used back to the inbox's free list at its next take;
//   - once the loop is idle, ring buffers that grew beyond trimCap for a
//     burst are released (Trim), so memory follows live work.

import "github.com/spindle-rt/spindle/internal/ring"

type taskQueue struct {
	front ring.Ring[item]
	in    *block[item] // blocks taken from the inbox, being consumed
	pos   int          // the next item of in
	inLen int          // items left in in
	used  *block[item] // consumed blocks, for the inbox's free list
	nused int
	back  ring.Ring[item]
}

// Len returns the number of queued tasks.
func (q *taskQueue) Len() int { return q.front.Len() + q.inLen + q.back.Len() }

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
func (q *taskQueue) OnlyBack() bool { return q.front.Len() == 0 && q.in == nil }

// PopBack is Pop while OnlyBack holds.
func (q *taskQueue) PopBack() (item, bool) { return q.back.Pop() }

// Pop removes the next task.
func (q *taskQueue) Pop() (item, bool) {
	if q.front.Len() > 0 {
		return q.front.Pop()
	}
	if c := q.in; c != nil {
		it := c.items[q.pos]
		c.items[q.pos] = item{}
		q.pos++
		q.inLen--
		if q.pos == c.n {
			q.in, q.pos = c.next, 0
			q.retire(c)
		}
		return it, true
	}
	return q.back.Pop()
}

// Peek returns the next task without removing it, or nil when the queue is
// empty. The pointer is valid until the next push or pop.
func (q *taskQueue) Peek() *item {
	if q.front.Len() > 0 {
		return q.front.Peek()
	}
	if c := q.in; c != nil {
		return &c.items[q.pos]
	}
	return q.back.Peek()
}

// retire moves a consumed block (every slot already zero) to used.
func (q *taskQueue) retire(c *block[item]) {
	c.n, c.next = 0, q.used
	q.used = c
	q.nused++
}

// Batching reports whether blocks taken from the inbox are still being
// consumed; the next take must wait for them.
func (q *taskQueue) Batching() bool { return q.in != nil }

// TakeBlocks queues the n items of the block list head (taken from the
// inbox) behind everything queued.
func (q *taskQueue) TakeBlocks(head *block[item], n int) {
	if head == nil {
		return
	}
	if q.back.Len() == 0 {
		switch {
		case q.in != nil: // behind the blocks being consumed
			last := q.in
			for last.next != nil {
				last = last.next
			}
			last.next = head
			q.inLen += n
			return
		case q.front.Len() == 0:
			q.in, q.pos, q.inLen = head, 0, n
			return
		}
	}
	for head != nil {
		c := head
		head = c.next
		for i := range c.items[:c.n] {
			q.back.Push(c.items[i])
		}
		clear(c.items[:c.n])
		q.retire(c)
	}
}

// TakeUsed returns the consumed blocks and forgets them.
func (q *taskQueue) TakeUsed() *block[item] {
	u := q.used
	q.used, q.nused = nil, 0
	return u
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

// Oversized reports whether a buffer of the queue holds more than max
// items, or its consumed blocks do.
func (q *taskQueue) Oversized(max int) bool {
	return q.front.Cap() > max || q.back.Cap() > max || q.nused*blockSize > max
}

// Trim gives back the buffers of an empty queue that grew beyond max items.
func (q *taskQueue) Trim(max int) {
	if q.Len() != 0 {
		return
	}
	q.front.Trim(max)
	q.back.Trim(max)
}
