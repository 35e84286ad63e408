package channel

// Select over channel operations.
//
// A select first tries its cases in argument order and completes the first
// that can complete at once. Otherwise it queues one waiter per case, all
// sharing one selector; the peer that claims any of them claims the
// selector, which makes every other entry dead (see the invariants in
// chan.go), so exactly one case happens and the others move nothing. Dead
// entries are dropped lazily by the queues.
//
// A task select (Select) is claimed by a loop-owned state change and wakes
// the task; a future select (SelectFuture) is claimed by completing its
// promise with the case's index, which is atomic against Future.Cancel.

import (
	"context"
	"slices"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Case is one operation of a select: a receive made by Chan.RecvCase or a
// send made by Chan.SendCase. A case holds its outcome after the select
// that chose it (Err, and RecvCase.Value). A case may be reused by later
// selects, but belongs to at most one pending select at a time.
type Case interface {
	// Err returns the case's error after a select chose it: ErrClosed
	// if the channel was closed (and, for a receive, drained), nil
	// otherwise.
	Err() error

	base() *caseBase
	exec() *executor.Executor
	reset()
	now() bool // completes the case at once if it can (or fails it on a closed channel)
	enqueue(s *selector, idx int)
	withdrawn() // the task select the case was queued for gave up
}

// caseBase is the part of a case every kind has.
type caseBase struct {
	err error
}

func (b *caseBase) base() *caseBase { return b }

// RecvCase is a select case that receives from a channel. It is made by
// Chan.RecvCase.
type RecvCase[T any] struct {
	caseBase
	c   *Chan[T]
	val T
}

// RecvCase returns a select case that receives from c. Loop only.
func (c *Chan[T]) RecvCase() *RecvCase[T] {
	c.mustLoop("RecvCase")
	return &RecvCase[T]{c: c}
}

// Value returns the item received when a select chose the case (the zero
// value if the case failed with ErrClosed or was not chosen).
func (r *RecvCase[T]) Value() T { return r.val }

// Err returns ErrClosed if a select chose the case because the channel was
// closed and drained, and nil otherwise.
func (r *RecvCase[T]) Err() error { return r.err }

func (r *RecvCase[T]) exec() *executor.Executor { return r.c.ex }

func (r *RecvCase[T]) reset() {
	var zero T
	r.val, r.err = zero, nil
}

func (r *RecvCase[T]) now() bool {
	c := r.c
	if v, ok := c.tryRecv(); ok {
		r.val = v
		return true
	}
	if c.closed {
		r.err = ErrClosed
		return true
	}
	return false
}

func (r *RecvCase[T]) enqueue(s *selector, idx int) {
	c := r.c
	c.recvq.push(c, waiter[T]{ref: s, kind: kindSelect, idx: int32(idx)})
	if s.p != nil {
		c.futureQueued()
	}
}

func (r *RecvCase[T]) withdrawn() { r.c.recvq.withdrawn(r.c) }

// SendCase is a select case that sends a value to a channel. It is made by
// Chan.SendCase.
type SendCase[T any] struct {
	caseBase
	c   *Chan[T]
	val T
}

// SendCase returns a select case that sends v to c. Loop only.
func (c *Chan[T]) SendCase(v T) *SendCase[T] {
	c.mustLoop("SendCase")
	return &SendCase[T]{c: c, val: v}
}

// Set changes the value the case sends, so that one case can be reused for
// the next item. It must not be called while the case is in a pending
// select.
func (s *SendCase[T]) Set(v T) { s.val = v }

// Err returns ErrClosed if a select chose the case because the channel was
// closed (the value was not sent), and nil otherwise.
func (s *SendCase[T]) Err() error { return s.err }

func (s *SendCase[T]) exec() *executor.Executor { return s.c.ex }

func (s *SendCase[T]) reset() { s.err = nil }

func (s *SendCase[T]) now() bool {
	c := s.c
	if c.closed {
		s.err = ErrClosed
		return true
	}
	return c.trySend(s.val)
}

func (s *SendCase[T]) enqueue(sel *selector, idx int) {
	c := s.c
	c.sendq.push(c, waiter[T]{val: s.val, ref: sel, kind: kindSelect, idx: int32(idx)})
	if sel.p != nil {
		c.futureQueued()
	}
	c.wakePoller()
}

func (s *SendCase[T]) withdrawn() { s.c.sendq.withdrawn(s.c) }

// selector is the state shared by the queued cases of one select.
type selector struct {
	loop.TaskWaiter                      // task select
	p               *future.Promise[int] // future select
	cases           []Case               // a copy: the caller's slice may be reused
	chosen          int
}

func (s *selector) claimable() bool {
	if s.p != nil {
		return !s.p.Future().Ready()
	}
	return s.TaskWaiter.Claimable()
}

// fire completes the select with case idx. The caller has checked
// claimable and written the case's outcome.
func (s *selector) fire(idx int) bool {
	if s.p != nil {
		return s.p.Resolve(idx)
	}
	s.chosen = idx
	s.TaskWaiter.Fire()
	return true
}

// checkCases validates the cases of a select and returns their executor.
func checkCases(op string, cases []Case) *executor.Executor {
	if len(cases) == 0 {
		panic("channel: " + op + " of no cases")
	}
	var ex *executor.Executor
	for i, cs := range cases {
		if cs == nil {
			panic("channel: " + op + " with a nil case")
		}
		e := cs.exec()
		if e == nil {
			panic("channel: " + op + " with a case on a Chan not made by New")
		}
		if i == 0 {
			ex = e
		} else if e != ex {
			panic("channel: " + op + " of cases on channels bound to different executors")
		}
	}
	if !ex.OnLoop() {
		panic("channel: " + op + " called from a goroutine that does not hold the loop; hand it to the loop: use executor.Submit or future.Call")
	}
	return ex
}

// ready resets the cases and completes the first that can complete at once,
// returning its index, or -1.
func ready(cases []Case) int {
	for _, cs := range cases {
		cs.reset()
	}
	for i, cs := range cases {
		if cs.now() {
			return i
		}
	}
	return -1
}

// TrySelect completes the first of cases (in argument order) that can
// complete at once and returns its index and its error (ErrClosed for a
// send to a closed channel or a receive from a closed and drained one). It
// returns -1 and nil if no case is ready: then nothing has moved. It never
// waits. Loop only.
func TrySelect(cases ...Case) (int, error) {
	checkCases("TrySelect", cases)
	i := ready(cases)
	if i < 0 {
		return -1, nil
	}
	return i, cases[i].base().err
}

// Select waits in place, in a task body, until exactly one of cases
// happens, and returns its index and its error (ErrClosed for a send to a
// closed channel or a receive from a closed and drained one); the received
// item is in the case (RecvCase.Value). The cases that did not happen moved
// nothing. If several cases can complete at once, the first in argument
// order does. If ctx (or the task) ends or the executor closes first, it
// returns -1 and that error, and no case happened.
//
// A case that can complete at once does so even if ctx has already ended.
// Select is meant for the body of a task started by future.Spawn; on the
// loop outside a task it returns -1 and future.ErrDeadlock when no case can
// complete at once (callbacks use SelectFuture or TrySelect), and from a
// goroutine that does not hold the loop it panics. It
// allocates only when it has to wait (its shared state and a copy of the
// cases).
func Select(ctx context.Context, cases ...Case) (int, error) {
	ex := checkCases("Select", cases)
	if ctx == nil {
		panic("channel: Select with nil context")
	}
	if ex.Closed() {
		return -1, executor.ErrClosed
	}
	if i := ready(cases); i >= 0 {
		return i, cases[i].base().err
	}
	fib := (*loop.Loop)(ex).CurrentFiber()
	if fib == nil {
		return -1, future.ErrDeadlock // a callback cannot wait
	}
	s := &selector{cases: slices.Clone(cases), chosen: -1}
	if err := s.Init(fib, ctx); err != nil {
		return -1, err
	}
	for i, cs := range cases {
		cs.enqueue(s, i)
	}
	if err := s.Wait(); err != nil {
		for _, cs := range cases {
			cs.withdrawn() // every entry of the select is dead now
		}
		return -1, err
	}
	return s.chosen, cases[s.chosen].base().err
}

// SelectFuture is Select for callbacks: it returns a future of the index of
// the case that happened, resolved at once if a case could complete at
// once. The case holds its outcome (Err, RecvCase.Value), readable once the
// future has resolved. Cancelling the future withdraws every case: none
// happens. If the executor has closed, the future fails with
// executor.ErrClosed. Loop only.
func SelectFuture(cases ...Case) *future.Future[int] {
	ex := checkCases("SelectFuture", cases)
	if i := ready(cases); i >= 0 {
		return future.Resolved(ex, i)
	}
	if ex.Closed() {
		return future.Failed[int](ex, executor.ErrClosed)
	}
	p := future.NewPromise[int](ex)
	s := &selector{p: p, cases: slices.Clone(cases), chosen: -1}
	for i, cs := range cases {
		cs.enqueue(s, i)
	}
	return p.Future()
}
