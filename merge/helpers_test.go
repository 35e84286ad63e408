package merge

import (
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// queue is the tests' stream: a loop-owned FIFO that keeps the waker of its
// last pending poll and wakes it on Push, Close and Fail.
type queue[T any] struct {
	items  []T
	closed bool
	err    error
	w      executor.Waker
	polls  int
}

func (q *queue[T]) PollRecv(w executor.Waker) (v T, ok bool, err error) {
	q.polls++
	if len(q.items) > 0 {
		v = q.items[0]
		if len(q.items) == 1 {
			q.items = q.items[:0] // keep the buffer
		} else {
			q.items = q.items[1:]
		}
		return v, true, nil
	}
	if q.err != nil {
		return v, false, q.err
	}
	if q.closed {
		return v, false, ErrClosed
	}
	q.w = w
	return v, false, nil
}

func (q *queue[T]) wake() {
	if w := q.w; w != nil {
		q.w = nil
		w.Wake()
	}
}

func (q *queue[T]) Push(vs ...T) {
	q.items = append(q.items, vs...)
	q.wake()
}

func (q *queue[T]) Close() {
	q.closed = true
	q.wake()
}

// Fail makes the stream fail with err once its items are taken.
func (q *queue[T]) Fail(err error) {
	q.err = err
	q.wake()
}

// lockedQueue is a stream pushed from other goroutines: its state is
// guarded by mu, and Push wakes the stored waker off the loop.
type lockedQueue[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	w      executor.Waker
}

func (q *lockedQueue[T]) PollRecv(w executor.Waker) (v T, ok bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) > 0 {
		v = q.items[0]
		q.items = q.items[1:]
		return v, true, nil
	}
	if q.closed {
		return v, false, ErrClosed
	}
	q.w = w
	return v, false, nil
}

func (q *lockedQueue[T]) push(v T, closeIt bool) {
	q.mu.Lock()
	if closeIt {
		q.closed = true
	} else {
		q.items = append(q.items, v)
	}
	w := q.w
	q.w = nil
	q.mu.Unlock()
	if w != nil {
		w.Wake()
	}
}

// forever is an always-ready stream: every poll yields its id.
type forever int

func (f forever) PollRecv(executor.Waker) (int, bool, error) { return int(f), true, nil }

// countWaker counts its wakes.
type countWaker struct{ n atomic.Int64 }

func (c *countWaker) Wake()        { c.n.Add(1) }
func (c *countWaker) count() int64 { return c.n.Load() }

// check verifies the merge's bookkeeping invariants (merge.go, 1-3).
func (m *Merged[T]) check(t testing.TB) {
	t.Helper()
	for i, h := range m.subs {
		if h.pos != i {
			t.Fatalf("subs[%d].pos = %d", i, h.pos)
		}
	}
	seen := map[*Handle[T]]bool{}
	for j := range m.ready.Len() {
		h := *m.ready.At(j)
		if seen[h] {
			t.Fatalf("substream queued twice")
		}
		seen[h] = true
		if !h.queued {
			t.Fatalf("ready[%d] is not marked queued", j)
		}
		if h.pos < 0 || h.pos >= len(m.subs) || m.subs[h.pos] != h {
			t.Fatalf("ready[%d] is not a live substream", j)
		}
	}
	for _, h := range m.subs {
		if h.queued != seen[h] {
			t.Fatalf("substream %d: queued=%v, in ready queue=%v", h.pos, h.queued, seen[h])
		}
	}
	if m.ended && len(m.subs) != 0 {
		t.Fatalf("ended with %d substreams", len(m.subs))
	}
}

// callOn runs fn on a running loop and returns its result.
func callOn[T any](t testing.TB, ex *executor.Executor, fn func() T) T {
	t.Helper()
	v, err := spindletest.Await(t, future.Call(ex, func() (T, error) { return fn(), nil }))
	if err != nil {
		t.Fatalf("callOn: %v", err)
	}
	return v
}
