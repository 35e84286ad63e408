package shard

import (
	"runtime"
	"sync"
	"testing"
)

// item is a message that records the order it was pushed in.
type item int

func (item) deliver(*shard)     {}
func (item) fail(*shard, error) {}
func (item) abandon()           {}

// pushAll pushes n items numbered from first and reports how many pushes
// said a batch was full.
func pushAll(q *ringQueue, first, n int) (full int) {
	for i := range n {
		if q.push(item(first + i)) {
			full++
		}
	}
	return full
}

// popAll pops until empty and checks the items continue from next.
func popAll(t *testing.T, q *ringQueue, next int) int {
	t.Helper()
	for {
		m, ok := q.pop()
		if !ok {
			return next
		}
		if int(m.(item)) != next {
			t.Fatalf("popped %d, want %d", m.(item), next)
		}
		next++
	}
}

// Single-threaded walk through both queues: nothing is visible before
// publish, a full batch is reported, order holds across many segments
// (a burst of ten segments' worth), and sweep hands over published and
// unpublished messages in order.
func TestQueueSequential(t *testing.T) {
	q := newRingQueue()
	if full := pushAll(q, 0, batchSize-1); full != 0 {
		t.Fatalf("%d full batches after %d pushes", full, batchSize-1)
	}
	if _, ok := q.pop(); ok || q.ready() {
		t.Fatal("message visible before publish")
	}
	if !q.push(item(batchSize - 1)) {
		t.Fatal("push of the 16th message did not report a full batch")
	}
	if !q.publish() || q.publish() {
		t.Fatal("publish did not report exactly the new messages")
	}
	if !q.ready() {
		t.Fatal("not ready after publish")
	}
	next := popAll(t, q, 0)
	const burst = 10 * segSize
	pushAll(q, next, burst)
	q.publish()
	next = popAll(t, q, next)
	if next != batchSize+burst {
		t.Fatalf("popped up to %d, want %d", next, batchSize+burst)
	}
	// Sweep: published, unpublished, in order, across a segment.
	pushAll(q, next, segSize)
	q.publish()
	pushAll(q, next+segSize, 5)
	var got []int
	q.sweep(func(m message) { got = append(got, int(m.(item))) })
	if len(got) != segSize+5 || got[0] != next || got[len(got)-1] != next+segSize+4 {
		t.Fatalf("sweep gave %d items from %v, want %d from %d", len(got), got[:1], segSize+5, next)
	}
	if _, ok := q.pop(); ok || q.ready() {
		t.Fatal("message left after the sweep")
	}
}

// One producer and one consumer goroutine pass 100,000 messages in
// batches; every message arrives once, in order (run with -race).
func TestQueueConcurrent(t *testing.T) {
	const n = 100_000
	q := newRingQueue()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			if q.push(item(i)) {
				q.publish()
			}
		}
		q.publish()
	}()
	next := 0
	for next < n {
		if got := popAll(t, q, next); got != next {
			next = got
		} else {
			runtime.Gosched() // let the producer publish
		}
	}
	wg.Wait()
	if _, ok := q.pop(); ok {
		t.Fatal("message beyond the last")
	}
}

// Segments are reused, and a burst keeps at most maxFree of the segments
// it linked.
func TestRingReusesSegments(t *testing.T) {
	q := newRingQueue()
	first := q.headSeg
	pushAll(q, 0, 2*segSize)
	q.publish()
	popAll(t, q, 0)
	if q.free.Load() != first {
		t.Fatal("the segment the consumer left was not handed back")
	}
	pushAll(q, 2*segSize, segSize)
	if q.tailSeg != first {
		t.Fatal("the producer did not reuse the free segment")
	}
	q.publish()
	popAll(t, q, 2*segSize)
	const burst = 4 * maxFree
	pushAll(q, 3*segSize, burst*segSize)
	q.publish()
	popAll(t, q, 3*segSize)
	n := 0
	for s := q.free.Load(); s != nil; s = s.next.Load() {
		n++
	}
	if n != maxFree || int(q.nfree.Load()) != n {
		t.Fatalf("%d free segments (counted %d) after a burst of %d, want %d", n, q.nfree.Load(), burst, maxFree)
	}
	if q.headSeg != q.tailSeg || q.headSeg.next.Load() != nil {
		t.Fatal("the queue links more than its current segment after a burst")
	}
}
