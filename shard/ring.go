package shard

// ringQueue: a lock-free single-producer/single-consumer ring.
//
// Invariants (counters run for ever and wrap as unsigned integers; a slot's
// index is its counter modulo ringSize):
//   - the producer owns tail, pubTail, headSeen and overflow; the consumer
//     owns next and tailSeen; published, head and stalled are atomics
//     shared by the two, each written by one side only, except stalled;
//   - head <= next <= published == pubTail <= tail <= head + ringSize: the
//     slots [head, tail) hold messages, of which [next, published) are
//     visible to the consumer and [published, tail) are written but not yet
//     published. A slot outside [head, tail) is nil;
//   - publish is one atomic store of tail into published; the consumer reads
//     a slot only below the published value it loaded, so the store
//     publishes the slot's contents. Likewise the consumer gives slots back
//     with one atomic store of next into head, after it cleared them;
//   - headSeen <= head and tailSeen <= published are cached copies, refreshed
//     only when the cached value says the ring is full or empty, so each
//     side reads the other's counter about once per batch, not per message;
//   - overflow holds, in order, the messages pushed while the ring was full
//     (or while overflow was not empty, so order is kept). While it is not
//     empty after a publish, stalled is true: the consumer's next release
//     clears it and reports that the producer must be woken. Dekker's rule
//     on sequentially consistent atomics keeps a wake-up from being lost:
//     the producer stores stalled and then reloads head; the consumer stores
//     head and then loads stalled.

import (
	"sync/atomic"

	"github.com/spindle-rt/spindle/internal/ring"
)

// ringSize is the number of slots of a ring (Seastar's queue length).
const ringSize = 128

// maxIdleOverflow is the capacity of an empty overflow buffer kept for
// reuse; a larger one goes back to the garbage collector once drained.
const maxIdleOverflow = 1024

type ringQueue struct {
	// Producer side.
	tail     uint64
	pubTail  uint64
	headSeen uint64
	overflow ring.Ring[message]
	_        [64]byte

	published atomic.Uint64
	stalled   atomic.Bool
	_         [64]byte
	head      atomic.Uint64
	_         [64]byte

	// Consumer side.
	next     uint64
	tailSeen uint64
	_        [64]byte

	slots [ringSize]message
}

// room reports whether a slot is free, reading head only when the cached
// copy says the ring is full.
func (q *ringQueue) room() bool {
	if q.tail-q.headSeen < ringSize {
		return true
	}
	q.headSeen = q.head.Load()
	return q.tail-q.headSeen < ringSize
}

func (q *ringQueue) push(m message) bool {
	if q.overflow.Len() == 0 && q.room() {
		q.slots[q.tail%ringSize] = m
		q.tail++
		return q.tail-q.pubTail >= batchSize
	}
	q.overflow.Push(m)
	return false
}

func (q *ringQueue) publish() (moved, pending bool) {
	for {
		for q.overflow.Len() > 0 && q.room() {
			m, _ := q.overflow.Pop()
			q.slots[q.tail%ringSize] = m
			q.tail++
		}
		if q.tail != q.pubTail {
			q.published.Store(q.tail)
			q.pubTail = q.tail
			moved = true
		}
		if q.overflow.Len() == 0 {
			if q.overflow.Cap() > maxIdleOverflow {
				q.overflow = ring.Ring[message]{}
			}
			return moved, false
		}
		q.stalled.Store(true)
		if !q.room() {
			return moved, true
		}
		// The consumer made room before it could see stalled: go on.
	}
}

func (q *ringQueue) pop() (message, bool) {
	if q.next == q.tailSeen {
		q.tailSeen = q.published.Load()
		if q.next == q.tailSeen {
			return nil, false
		}
	}
	i := q.next % ringSize
	m := q.slots[i]
	q.slots[i] = nil
	q.next++
	return m, true
}

func (q *ringQueue) ready() bool {
	if q.next == q.tailSeen {
		q.tailSeen = q.published.Load()
	}
	return q.next != q.tailSeen
}

func (q *ringQueue) release() bool {
	q.head.Store(q.next)
	return q.stalled.Load() && q.stalled.CompareAndSwap(true, false)
}

func (q *ringQueue) sweep(fn func(message)) {
	for ; q.next != q.tail; q.next++ {
		i := q.next % ringSize
		m := q.slots[i]
		q.slots[i] = nil
		fn(m)
	}
	// Leave an empty, consistent ring behind.
	q.pubTail, q.tailSeen, q.headSeen = q.tail, q.tail, q.tail
	q.published.Store(q.tail)
	q.head.Store(q.tail)
	for {
		m, ok := q.overflow.Pop()
		if !ok {
			return
		}
		fn(m)
	}
}
