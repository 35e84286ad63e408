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

var transports = []transport{ringTransport, lockedTransport}

// pushAll pushes n items numbered from first and reports how many pushes
// said a batch was full.
func pushAll(q queue, first, n int) (full int) {
	for i := range n {
		if q.push(item(first + i)) {
			full++
		}
	}
	return full
}

// popAll pops until empty and checks the items continue from next.
func popAll(t *testing.T, q queue, next int) int {
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
// publish, a full batch is reported, order holds through a full ring, and
// sweep hands over published and unpublished messages in order.
func TestQueueSequential(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.String(), func(t *testing.T) {
			q := tr.newQueue()
			if full := pushAll(q, 0, batchSize-1); full != 0 {
				t.Fatalf("%d full batches after %d pushes", full, batchSize-1)
			}
			if _, ok := q.pop(); ok || q.ready() {
				t.Fatal("message visible before publish")
			}
			if !q.push(item(batchSize - 1)) {
				t.Fatal("push of the 16th message did not report a full batch")
			}
			if moved, pending := q.publish(); !moved || pending {
				t.Fatalf("publish = %v, %v; want true, false", moved, pending)
			}
			if !q.ready() {
				t.Fatal("not ready after publish")
			}
			next := popAll(t, q, 0)
			q.release()
			// Three rings' worth without the consumer: the ring fills and
			// the rest waits on the producer's side.
			pushAll(q, next, 3*ringSize)
			_, pending := q.publish()
			if tr == ringTransport && !pending {
				t.Fatal("ring: publish of 3 rings' worth left nothing pending")
			}
			for pending {
				next = popAll(t, q, next)
				if tr == ringTransport && !q.release() {
					t.Fatal("ring: release did not report the waiting producer")
				}
				_, pending = q.publish()
			}
			next = popAll(t, q, next)
			q.release()
			if next != batchSize+3*ringSize {
				t.Fatalf("popped up to %d, want %d", next, batchSize+3*ringSize)
			}
			// Sweep: published, unpublished, in order.
			pushAll(q, next, 5)
			q.publish()
			pushAll(q, next+5, 5)
			var got []int
			q.sweep(func(m message) { got = append(got, int(m.(item))) })
			if len(got) != 10 || got[0] != next || got[9] != next+9 {
				t.Fatalf("sweep = %v, want %d..%d", got, next, next+9)
			}
		})
	}
}

// One producer and one consumer goroutine pass 100,000 messages in
// batches; every message arrives once, in order (run with -race).
func TestQueueConcurrent(t *testing.T) {
	const n = 100_000
	for _, tr := range transports {
		t.Run(tr.String(), func(t *testing.T) {
			q := tr.newQueue()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range n {
					if q.push(item(i)) {
						if _, pending := q.publish(); pending {
							runtime.Gosched()
						}
					}
				}
				for _, pending := q.publish(); pending; _, pending = q.publish() {
					runtime.Gosched() // let the consumer make room
				}
			}()
			next := 0
			for next < n {
				if got := popAll(t, q, next); got != next {
					next = got
				} else {
					runtime.Gosched() // let the producer publish
				}
				q.release()
			}
			wg.Wait()
			if _, ok := q.pop(); ok {
				t.Fatal("message beyond the last")
			}
		})
	}
}

// A burst through the overflow does not keep its peak memory.
func TestRingGivesBackOverflow(t *testing.T) {
	q := new(ringQueue)
	pushAll(q, 0, ringSize+4*maxIdleOverflow)
	for _, pending := q.publish(); pending; _, pending = q.publish() {
		for {
			if _, ok := q.pop(); !ok {
				break
			}
		}
		q.release()
	}
	if c := q.overflow.Cap(); c > maxIdleOverflow {
		t.Fatalf("overflow keeps capacity %d after the burst, want <= %d", c, maxIdleOverflow)
	}
}
