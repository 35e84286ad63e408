package semaphore

// The semaphore's state and the rules every method keeps.
//
// Invariants:
//   - state (atomic) holds cur, the units held (0 <= cur <= size), and the
//     flag queued, set exactly while the queue of waiters is not empty.
//     While queued is clear, Acquire, TryAcquire and Release change cur by
//     compare-and-swap without the lock: the fast path, when nothing waits.
//     Setting and clearing queued, and every change of cur while it is set,
//     happen under mu: a fast path that loaded state before queued was set
//     fails its compare-and-swap and looks again;
//   - the waiters form a FIFO, head..tail (guarded by mu), doubly linked so
//     that a waiter that gives up unlinks itself at once: the list holds
//     exactly the requests still waiting, and nothing of one that gave up;
//   - no barging: a request is granted at once only when nobody waits and
//     the units are free; otherwise it queues behind the others. Whenever
//     units are given back, a waiter leaves, or a waiter is queued (units
//     given back by a fast path just before queued was set are found
//     then), the head is granted while its request fits, in order, so a
//     large request at the head holds back the smaller ones behind it;
//   - a waiter is granted once, by grant, under mu: it is unlinked, its
//     units are added to cur, granted is set, and then its task is woken
//     (or its promise resolved); grant reads nothing of the waiter after
//     setting granted. A waiter whose wait ends otherwise (ctx, its task,
//     the executor closing) looks at granted under mu: not granted, it
//     unlinks itself; granted, it gives its units back, so an Acquire that
//     fails holds nothing. A granted waiter looks at its ctx (and task, and
//     executor) before it returns, and gives the units back if that wait
//     has ended: a grant that raced with the end of the wait is undone, so
//     a request whose ctx has ended never starts work;
//   - a task of the semaphore's executor waits in place (its fiber is the
//     waiter, woken by grant) in a node from spare, a short free list that
//     only such tasks touch: it is loop-owned. A node goes back to spare
//     once it is out of the list and granted is no longer read by grant.
//     Any other waiter (a goroutine, a task of another executor) waits on
//     a promise through future.Future.Await, in a node of its own.

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// ErrTooLarge is returned by Acquire for a request larger than the
// semaphore's size: it could never be granted.
var ErrTooLarge = errors.New("semaphore: request larger than the semaphore's size")

// maxSpare bounds the free list of task waiter nodes.
const maxSpare = 16

// queued is the flag in state that says that requests wait; the bits below
// it count the units held.
const queued = 1 << 62

// Semaphore is a weighted semaphore bound to an executor: it holds size
// units, and Acquire waits, in FIFO order, until the units it asks for are
// free. Every method may be called from any goroutine. Create one with
// New; the zero value is not usable.
type Semaphore struct {
	ex    *executor.Executor
	size  int64
	state atomic.Int64 // cur | queued

	mu         sync.Mutex
	head, tail *waiter

	spare  *waiter // loop-owned: free task waiter nodes, linked by next
	nspare int
}

// waiter is one Acquire that waits: a task of the semaphore's executor
// (fib) or anyone else (p).
type waiter struct {
	prev, next *waiter
	n          int64
	granted    atomic.Bool
	fib        *loop.Fiber
	p          *future.Promise[struct{}]
}

// New returns a semaphore of n units bound to ex: Acquire waits on ex's
// terms (a task of ex suspends) and fails with executor.ErrClosed once ex
// has closed. It panics if ex is nil or n is negative.
func New(ex *executor.Executor, n int64) *Semaphore {
	if ex == nil {
		panic("semaphore: New with nil executor")
	}
	if n < 0 || n >= queued {
		panic("semaphore: New with size " + strconv.FormatInt(n, 10) + " out of range")
	}
	return &Semaphore{ex: ex, size: n}
}

// Size returns the number of units the semaphore holds.
func (s *Semaphore) Size() int64 { return s.size }

// Acquire takes n units, waiting until they are free. Requests are served
// in the order they came: a request that waits holds back every later one,
// large or small. It returns nil once the units are held; release them
// with Release.
//
// It waits as future.Future.Await does: in a task started by future.Spawn
// (or a function of a future.Group) it suspends the task; on any other
// goroutine it parks; on the loop outside a task it returns
// future.ErrDeadlock if it would have to wait. If ctx ends first (or the
// task is cancelled) it returns the error, holds nothing, and leaves
// nothing behind in the semaphore, even if its units were handed to it in
// the same moment (they go on to the next request). Units that are free
// are taken at once, even if ctx has ended; a request that had to wait
// returns nil only if its ctx has not ended when it returns.
//
// A request larger than the semaphore's size fails at once with
// ErrTooLarge. Once ex has closed, Acquire returns executor.ErrClosed, and
// the requests that waited are released with it.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	if ctx == nil {
		panic("semaphore: Acquire with nil context")
	}
	s.check(n, "Acquire")
	if n > s.size {
		return ErrTooLarge
	}
	if s.ex.Closed() {
		return executor.ErrClosed
	}
	if s.fast(n) {
		return nil
	}
	s.mu.Lock()
	if s.fast(n) { // the units came free, or the queue emptied, meanwhile
		s.mu.Unlock()
		return nil
	}
	if fib := (*loop.Loop)(s.ex).CurrentFiber(); fib != nil {
		return s.waitTask(ctx, fib, n)
	}
	if s.ex.OnLoop() {
		s.mu.Unlock()
		return future.ErrDeadlock
	}
	return s.waitFuture(ctx, n)
}

// waitTask waits in place in a task of the semaphore's executor: the task's
// fiber is the waiter. Called with mu held; it unlocks it.
func (s *Semaphore) waitTask(ctx context.Context, fib *loop.Fiber, n int64) error {
	var tw loop.TaskWaiter // for the reasons to stop waiting: ctx, the task, the executor
	if err := tw.Init(fib, ctx); err != nil {
		s.mu.Unlock()
		return err
	}
	w := s.node()
	w.n = n
	s.push(w)
	if w.granted.Load() { // at once, with units given back as it queued
		s.mu.Unlock()
		s.recycle(w)
		return nil
	}
	w.fib = fib // from here on grant wakes it
	s.mu.Unlock()
	stop := tw.Watch()
	var err error
	for {
		fib.Suspend() // every wake-up is a hint: look again
		if err = tw.Err(); err != nil || w.granted.Load() {
			break
		}
	}
	if err != nil { // granted or not: a request whose wait ended holds nothing
		s.leave(w)
	}
	if stop != nil {
		stop()
	}
	s.recycle(w)
	return err
}

// waitFuture waits on a promise, as Await waits: a goroutine parks, a task
// of another executor suspends. Called with mu held; it unlocks it.
func (s *Semaphore) waitFuture(ctx context.Context, n int64) error {
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return err
	}
	w := &waiter{n: n, p: future.NewPromise[struct{}](s.ex)}
	s.push(w)
	s.mu.Unlock()
	_, err := w.p.Future().Await(ctx)
	if err == nil {
		err = ctx.Err() // granted as ctx ended: give the units back
	}
	if err != nil {
		s.leave(w)
	}
	return err
}

// leave ends the wait of w, which gave up: it leaves the queue, or, granted
// meanwhile, gives its units back.
func (s *Semaphore) leave(w *waiter) {
	s.mu.Lock()
	if w.granted.Load() {
		s.state.Add(-w.n)
	} else {
		s.unlink(w)
	}
	s.grant()
	s.mu.Unlock()
}

// node returns a task waiter node. Loop only: called by a task of the
// semaphore's executor.
func (s *Semaphore) node() *waiter {
	w := s.spare
	if w == nil {
		return &waiter{}
	}
	s.spare, w.next = w.next, nil
	s.nspare--
	return w
}

// recycle keeps a task waiter node, out of the queue, for the next wait.
// Loop only.
func (s *Semaphore) recycle(w *waiter) {
	if s.nspare >= maxSpare {
		return
	}
	w.fib = nil
	w.granted.Store(false)
	w.next = s.spare
	s.spare = w
	s.nspare++
}

// TryAcquire takes n units if they are free and nobody waits, without
// waiting, and reports whether it did.
func (s *Semaphore) TryAcquire(n int64) bool {
	s.check(n, "TryAcquire")
	return n <= s.size && s.fast(n)
}

// Release gives back n units, which waiting requests take in order. It
// panics if more units are released than are held.
func (s *Semaphore) Release(n int64) {
	s.check(n, "Release")
	for {
		st := s.state.Load()
		if st&queued != 0 {
			break
		}
		if st < n {
			s.overRelease(n, st)
		}
		if s.state.CompareAndSwap(st, st-n) {
			return
		}
	}
	s.mu.Lock()
	for { // queued may have been cleared meanwhile: fast paths run again
		st := s.state.Load()
		if st&^queued < n {
			s.mu.Unlock()
			s.overRelease(n, st&^queued)
		}
		if s.state.CompareAndSwap(st, st-n) {
			break
		}
	}
	s.grant()
	s.mu.Unlock()
}

func (s *Semaphore) overRelease(n, held int64) {
	panic("semaphore: Release of " + strconv.FormatInt(n, 10) + " units, more than the " + strconv.FormatInt(held, 10) + " held")
}

// fast takes n units if nobody waits and they are free, without the lock.
func (s *Semaphore) fast(n int64) bool {
	for {
		st := s.state.Load()
		if st&queued != 0 || s.size-st < n {
			return false
		}
		if s.state.CompareAndSwap(st, st+n) {
			return true
		}
	}
}

// check panics on a nil semaphore and a negative count.
func (s *Semaphore) check(n int64, op string) {
	if s == nil || s.ex == nil {
		panic("semaphore: " + op + " on a semaphore not made by New")
	}
	if n < 0 {
		panic("semaphore: " + op + " of a negative count " + strconv.FormatInt(n, 10))
	}
}

// push appends w to the waiters and grants what is free: units a fast
// Release gave back before queued was set are found here. Called with mu
// held.
func (s *Semaphore) push(w *waiter) {
	w.prev = s.tail
	if s.tail == nil {
		s.head = w
		s.state.Or(queued)
	} else {
		s.tail.next = w
	}
	s.tail = w
	s.grant()
}

// unlink removes w from the waiters; the last one out clears queued.
// Called with mu held.
func (s *Semaphore) unlink(w *waiter) {
	if w.prev == nil {
		s.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		s.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	if s.head == nil {
		s.state.And(^int64(queued))
	}
}

// grant grants the waiters at the head while their requests fit, in order,
// and wakes them. Waking runs no user code: it queues a task on the loop
// or completes a promise. Called with mu held.
func (s *Semaphore) grant() {
	for w := s.head; w != nil && s.size-s.state.Load()&^queued >= w.n; w = s.head {
		s.state.Add(w.n) // before unlink may clear queued: no fast path takes these units
		s.unlink(w)
		fib, p := w.fib, w.p
		w.granted.Store(true) // w may be reused from here on
		switch {
		case fib != nil:
			fib.Wake()
		case p != nil:
			p.Resolve(struct{}{})
		} // neither: granted as it was queued, by its own push
	}
}
