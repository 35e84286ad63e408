package shard

// ringQueue: a lock-free single-producer/single-consumer queue of
// fixed-size ring segments.
//
// A first version was one fixed ring of 128 slots with a producer-side
// overflow, as Seastar's queues are. In Go it lost to the mutex-guarded
// slice on bursts longer than the ring (docs/shards.md): Seastar's
// reactors poll without sleeping, while a spindle loop sleeps when idle,
// so each time a full ring made room the consumer had to wake the
// producer's loop to refill it, and then the producer woke the consumer
// again. Segments remove that round trip: a burst links one more segment
// instead of waiting for room.
//
// Invariants (counters run for ever and wrap as unsigned integers; the
// message number i lives in slot i%segSize of its segment):
//   - the producer owns tail, pubTail and tailSeg, the consumer owns next,
//     tailSeen and headSeg; published, the segments' next links and spare
//     are atomics;
//   - next <= published == pubTail <= tail: messages [next, published)
//     are visible to the consumer, [published, tail) are written but not
//     yet published. Every slot outside [next, tail) is nil, so the queue
//     keeps no delivered message alive;
//   - the segments from headSeg to tailSeg, linked by next, hold the
//     messages [next, tail) in order. A segment is linked (next.Store)
//     before the producer publishes any message in it, so a consumer that
//     read a published value past a segment's end finds its successor;
//   - publish is one atomic store of tail into published; the consumer
//     reads a slot only below the published value it loaded, so the store
//     publishes the slots' contents;
//   - a segment the consumer has left goes back to the producer through
//     free, a stack linked by the segments' next fields that only the
//     consumer pushes and only the producer pops (so a pop cannot meet the
//     ABA problem: nobody else can pop and re-push the top it read). At
//     most maxFree segments wait there; more are left to the garbage
//     collector, so a burst gives most of its memory back.

import "sync/atomic"

// segSize is the number of slots of a segment: Seastar's queue length.
const segSize = 128

type segment struct {
	slots [segSize]message
	next  atomic.Pointer[segment]
}

// maxFree bounds the segments kept for reuse.
const maxFree = 8

type ringQueue struct {
	// Producer side.
	tail    uint64
	pubTail uint64
	tailSeg *segment
	_       [64]byte

	published atomic.Uint64
	free      atomic.Pointer[segment]
	nfree     atomic.Int32
	_         [64]byte

	// Consumer side.
	next     uint64
	tailSeen uint64
	headSeg  *segment
}

func newRingQueue() *ringQueue {
	s := new(segment)
	return &ringQueue{tailSeg: s, headSeg: s}
}

func (q *ringQueue) push(m message) bool {
	i := q.tail % segSize
	if i == 0 && q.tail != 0 {
		s := q.newSegment()
		q.tailSeg.next.Store(s)
		q.tailSeg = s
	}
	q.tailSeg.slots[i] = m
	q.tail++
	return q.tail-q.pubTail >= batchSize
}

func (q *ringQueue) publish() bool {
	if q.tail == q.pubTail {
		return false
	}
	q.published.Store(q.tail)
	q.pubTail = q.tail
	return true
}

func (q *ringQueue) pop() (message, bool) {
	if q.next == q.tailSeen {
		q.tailSeen = q.published.Load()
		if q.next == q.tailSeen {
			return nil, false
		}
	}
	return q.take(), true
}

// newSegment pops a free segment, or makes one. Producer only.
func (q *ringQueue) newSegment() *segment {
	for {
		s := q.free.Load()
		if s == nil {
			return new(segment)
		}
		if q.free.CompareAndSwap(s, s.next.Load()) {
			q.nfree.Add(-1)
			s.next.Store(nil)
			return s
		}
	}
}

// freeSegment gives an emptied segment back to the producer. Consumer
// only.
func (q *ringQueue) freeSegment(s *segment) {
	if q.nfree.Load() >= maxFree {
		return
	}
	q.nfree.Add(1)
	for {
		top := q.free.Load()
		s.next.Store(top)
		if q.free.CompareAndSwap(top, s) {
			return
		}
	}
}

// take removes message next, moving to the following segment first when
// next starts one. Consumer only, with next < tail.
func (q *ringQueue) take() message {
	i := q.next % segSize
	if i == 0 && q.next != 0 {
		old := q.headSeg
		q.headSeg = old.next.Load()
		q.freeSegment(old)
	}
	p := &q.headSeg.slots[i]
	m := *p
	*p = nil
	q.next++
	return m
}

func (q *ringQueue) ready() bool {
	if q.next == q.tailSeen {
		q.tailSeen = q.published.Load()
	}
	return q.next != q.tailSeen
}

func (q *ringQueue) sweep(fn func(message)) {
	for q.next != q.tail {
		fn(q.take())
	}
	q.pubTail, q.tailSeen = q.tail, q.tail
	q.published.Store(q.tail)
}
