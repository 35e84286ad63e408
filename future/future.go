package future

// The promise state machine.
//
// A future's whole state is one atomic word, head:
//
//	pending (nil or a stack of waiters) --CAS--> &claimedLink --Store--> &doneLink
//	                                                                or &cancelledLink
//
// Invariants:
//   - head leaves the pending states once, by the compare-and-swap that
//     claims it; the goroutine that wins it takes the waiter stack with it and
//     is the only writer of val and err, which it writes before it stores a
//     done sentinel, so anyone who loads a done sentinel sees them (the
//     atomic store publishes them);
//   - while pending, head is a lock-free stack (newest first) of the waiters'
//     links; a waiter is pushed by compare-and-swap, and only while pending.
//     A waiter that finds the future claimed but not yet done yields until it
//     is done (the completer is between two stores);
//   - the completer reverses the stack (waiters are woken in the order they
//     registered) and, for each link, reads next before it calls wake: after
//     wake the link belongs to its waiter again and may be reused at once;
//   - a waiter that gives up (an Await whose ctx ended, a task whose wait
//     was interrupted) withdraws its link, a quitLink: the link's state
//     moves once from live to dead (withdraw) or from live to fired (the
//     completer, just before it calls wake), by compare-and-swap, so exactly
//     one of the two happens. The completer wakes other links without a
//     compare-and-swap;
//   - a link is dead when its waiter is gone (goner): a withdrawn quitLink,
//     or a continuation whose own future has already completed (a Then
//     whose derived future was cancelled, a Timeout that expired), whose
//     wake would do nothing, so dropping it races with nothing. Whoever
//     makes such a waiter gone compacts the future it waits on: a
//     withdrawal, a Timeout's expiry or cancellation, and Cancel of a
//     derived future, which finds its source through its node (below);
//   - while a future derived by Then or Transform is pending, its err holds
//     a mark (derivedMark, a typed nil: no pointer for the collector to
//     follow on every link), written before the future is shared and read
//     only by Cancel after its claim; the completer overwrites it with the
//     result, so nobody else ever sees it. Such a future is the out of a
//     node, whose src is the future it hangs on: Cancel reads src between
//     its claim and its publish (sourceOf), and the continuation clears src
//     only once it sees the future done, so the two never race;
//   - dead links stay in the stack until the future completes or a
//     compaction drops them. A compaction takes the stack out of head by
//     swapping in compactingLink (pushers and completers wait while it is
//     there, as they do for claimedLink), drops the dead links above the
//     compactScan-th live one and puts the stack back. Every withdrawal compacts
//     (unless another compaction holds the stack), so a dead link outlives
//     its withdrawal only beneath compactScan live links pushed after it:
//     the links a future holds stay within its live waiters plus one per
//     compactScan of them, however many waits are abandoned, at O(1) per
//     withdrawal;
//   - a waiter never runs user code on the completing goroutine: a
//     continuation is queued on the loop (Post when the completer holds the
//     loop, the inbox otherwise), a parked goroutine gets a token on its
//     channel, a suspended task is queued to resume.
//
// Continuations are nodes that are at once the waiter's link, the queued
// task and the derived future (Seastar's continuation layout): Then costs one
// allocation and one queued task per link, and a failed future moves through
// a chain exactly like a value.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
	"github.com/spindle-rt/spindle/internal/loop"
)

// ErrDeadlock is returned by Await called on the loop goroutine, outside a
// spawned task, for a future that is not ready: waiting there would stop the
// loop that has to complete it.
var ErrDeadlock = errors.New("future: Await on the loop outside a spawned task would deadlock")

// ErrGoexit is the error of a spawned task whose body called
// runtime.Goexit (a t.FailNow in a test). The executor's panic handler is
// told too, and an executor started with Start keeps serving.
var ErrGoexit = loop.ErrGoexit

// PanicError carries a panic recovered from a callback, task body or
// spawned task into the future it would have completed.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine, from runtime/debug.Stack.
	Stack []byte
}

// Error describes the panic.
func (e *PanicError) Error() string { return fmt.Sprintf("future: panic: %v", e.Value) }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// link is a waiter's entry in a future's stack of waiters.
type link struct {
	next *link
	w    waiter
}

// quitLink is the link of a waiter that may give up (withdraw). Its w is
// the quitLink itself, which is how the completer and compactions tell it
// from a plain link, and it wakes the real waiter, of.
type quitLink struct {
	link
	state atomic.Uint32 // linkLive, linkDead or linkFired
	of    waiter
}

// init makes q the link of waiter of.
func (q *quitLink) init(of waiter) { q.w, q.of = q, of }

func (q *quitLink) wake(onLoop bool) { q.of.wake(onLoop) }

// gone reports whether the waiter has withdrawn.
func (q *quitLink) gone() bool { return q.state.Load() == linkDead }

// goner is a waiter that may give up without withdrawing its link: once
// gone is true its wake does nothing, and a compaction may drop its link.
type goner interface {
	gone() bool
}

// dead reports whether l's waiter has given up.
func dead(l *link) bool {
	if q := quitOf(l); q != nil {
		return q.gone()
	}
	g, ok := l.w.(goner)
	return ok && g.gone()
}

// derivedMark, as a nil *derivedMark, is the err of a pending derived
// future (see the invariants above). It is an error only so that it fits
// there; nobody sees it as one.
type derivedMark struct{}

func (*derivedMark) Error() string { return "future: pending" }

// quitOf returns l as a quitLink, or nil for a plain link.
func quitOf(l *link) *quitLink {
	q, _ := l.w.(*quitLink)
	return q
}

// compactScan is how far from the top of the stack a compaction looks.
const compactScan = 32

// The states of a quitLink.
const (
	linkLive uint32 = iota
	linkDead
	linkFired
)

// waiter is woken once when the future it waits on completes. onLoop says
// whether the completing goroutine holds the loop.
type waiter interface {
	wake(onLoop bool)
}

// Sentinels of head: claimedLink while the completer writes the result,
// then doneLink, or cancelledLink when Cancel completed the future;
// compactingLink while a compaction drops dead links.
var doneLink, cancelledLink, claimedLink, compactingLink link

// core is the untyped part of a future's state.
type core struct {
	ex   *loop.Loop
	head atomic.Pointer[link]
	id   hooks.ID
}

func isDone(h *link) bool { return h == &doneLink || h == &cancelledLink }

func (c *core) ready() bool { return isDone(c.head.Load()) }

// settled reports whether the future is no longer pending (claimed or done).
func (c *core) settled() bool {
	h := c.head.Load()
	return h == &claimedLink || isDone(h)
}

// cancelled reports whether the future was completed by Cancel.
func (c *core) cancelled() bool { return c.head.Load() == &cancelledLink }

// addWaiter links l into the waiters; it returns false if the future is
// already done (l is then not linked).
func (c *core) addWaiter(l *link) bool {
	if q := quitOf(l); q != nil {
		q.state.Store(linkLive)
	}
	for {
		h := c.head.Load()
		switch {
		case isDone(h):
			return false
		case h == &claimedLink || h == &compactingLink:
			runtime.Gosched() // the completer is between its two stores
			continue
		}
		l.next = h
		if c.head.CompareAndSwap(h, l) {
			return true
		}
	}
}

// claim takes the future out of the pending states, returning its waiters;
// ok is false if it was already claimed.
func (c *core) claim() (waiters *link, ok bool) {
	for {
		h := c.head.Load()
		switch {
		case h == &claimedLink || isDone(h):
			return nil, false
		case h == &compactingLink:
			runtime.Gosched() // a compaction is putting the waiters back
			continue
		}
		if c.head.CompareAndSwap(h, &claimedLink) {
			return h, true
		}
	}
}

// withdraw takes back q, whose waiter gives up on c. It returns false if
// the completer has claimed q first: then q's wake has been or is about to
// be called, and the future is done.
func (c *core) withdraw(q *quitLink) bool {
	if !q.state.CompareAndSwap(linkLive, linkDead) {
		return false
	}
	c.compact(compactScan)
	return true
}

// compact drops the dead links above the n-th live link of a pending
// future's waiters.
func (c *core) compact(n int) {
	var h *link
	for {
		h = c.head.Load()
		if h == nil || h == &claimedLink || h == &compactingLink || isDone(h) {
			return // nothing to drop, or someone else owns the stack
		}
		if c.head.CompareAndSwap(h, &compactingLink) {
			break
		}
	}
	var first, last *link
	l := h
	for l != nil && n > 0 {
		next := l.next
		if dead(l) {
			l.next = nil
		} else {
			if last == nil {
				first = l
			} else {
				last.next = l
			}
			last = l
			n--
		}
		l = next
	}
	if last == nil {
		first = l
	} else {
		last.next = l // the rest of the stack, unscanned
	}
	c.head.Store(first)
}

// how says who completes a future.
type how uint8

const (
	fromAnywhere how = iota // a goroutine that may or may not hold the loop
	fromLoop                // code that holds the loop
	fromCancel              // Cancel, from anywhere
)

// publish marks the claimed future done and wakes waiters h in registration
// order. The caller has written the result.
func (c *core) publish(h *link, by how) {
	if by == fromCancel {
		c.head.Store(&cancelledLink)
	} else {
		c.head.Store(&doneLink)
	}
	// held: the completer holds the loop; known: held has been found out
	// (asked once, for the Resolve hooks and the waiters alike).
	held := by == fromLoop
	known := held
	if c.id != 0 {
		if !known {
			held, known = c.ex.OnLoop(), true
		}
		c.ex.ResolveHookOnLoop(c.id, held)
	}
	if h == nil {
		return
	}
	var rev *link
	for h != nil {
		next := h.next
		h.next = rev
		rev, h = h, next
	}
	if !known {
		held = c.ex.OnLoop()
	}
	for rev != nil {
		next := rev.next
		rev.next = nil
		if q := quitOf(rev); q == nil || q.state.CompareAndSwap(linkLive, linkFired) {
			rev.w.wake(held)
		}
		rev = next
	}
}

// publishFresh is publish for a future that is done from the start and that
// no other goroutine can see yet (done made it just now; it has no
// waiters): its state is written with a plain store, not an atomic one,
// because whatever hands the future to another goroutine orders that
// store before the other's loads.
func (c *core) publishFresh(w where) {
	// head is an atomic.Pointer, whose only field with a size is the
	// pointer itself (checked below), so it is written through that word.
	*(*unsafe.Pointer)(unsafe.Pointer(&c.head)) = unsafe.Pointer(&doneLink)
	if c.id != 0 {
		if w.known {
			c.ex.ResolveHookOnLoop(c.id, w.onLoop)
		} else {
			c.ex.ResolveHook(c.id)
		}
	}
}

// An atomic.Pointer is its pointer word and nothing else: publishFresh
// writes it as one. This fails to compile otherwise.
var _ = [1]struct{}{}[unsafe.Sizeof(atomic.Pointer[link]{})-unsafe.Sizeof(unsafe.Pointer(nil))]

// Future is the result of an asynchronous operation bound to an executor:
// pending until it is completed once with a value or an error. Its methods
// may be called from any goroutine; the callbacks registered on it run on
// its executor's loop. A Future is created by a Promise, Then, Transform,
// Call, Spawn, Sleep, Resolved, Failed or a combinator; the zero value is not
// usable: its methods panic (Ready and Peek report it pending).
type Future[T any] struct {
	core
	val T
	err error
}

// complete claims f and publishes the result; false if f was already
// completed.
func (f *Future[T]) complete(v T, err error, by how) bool {
	h, ok := f.claim()
	if !ok {
		return false
	}
	f.val, f.err = v, err
	f.publish(h, by)
	return true
}

// mustMade panics on a zero Future (or the future of a zero Promise): it
// is bound to no executor, so nothing could ever run its callbacks.
func (c *core) mustMade(op string) {
	if c.ex == nil {
		if c.ready() {
			panic("future: " + op + " on a future bound to no executor (a combinator of no futures made off any loop): Await it, or make it on a loop")
		}
		panic("future: " + op + " on a Future not made by this package (NewPromise, Then, Call, ...)")
	}
}

// Executor returns the executor the future is bound to.
func (f *Future[T]) Executor() *executor.Executor { return (*executor.Executor)(f.ex) }

// Ready reports whether the future has completed.
func (f *Future[T]) Ready() bool { return f.ready() }

// Peek returns the result of a completed future and true, or false while
// it is pending. It never waits.
func (f *Future[T]) Peek() (Result[T], bool) {
	if !f.ready() {
		return Result[T]{}, false
	}
	return Result[T]{Value: f.val, Err: f.err}, true
}

// Cancel completes a pending future with context.Canceled and runs its
// OnCancel callbacks on the loop (a spawned task's context is cancelled). It
// returns false if the future had already completed.
func (f *Future[T]) Cancel() bool {
	if f.ready() {
		return false
	}
	f.mustMade("Cancel")
	h, ok := f.claim()
	if !ok {
		return false
	}
	var src *core
	if _, derived := f.err.(*derivedMark); derived {
		src = sourceOf(f) // before publish: see sourceOf
	}
	var zero T
	f.val, f.err = zero, context.Canceled
	f.publish(h, fromCancel)
	if src != nil {
		src.compact(compactScan) // f's continuation waits on it in vain
	}
	return true
}

// Await waits for the future and returns its value and error.
//
//   - On a ready future it returns at once, anywhere.
//   - Inside a task started by Spawn it suspends the task, lends the loop to
//     other work, and resumes the task on the loop when the future completes,
//     ctx ends (then it returns ctx.Err()) or the executor closes (then
//     executor.ErrClosed).
//     A task awaiting a future bound to another executor must pass its own
//     ctx (or one derived from it) so that Await can find the task.
//   - On any other goroutine it parks that goroutine until the future
//     completes, ctx ends, or the executor closes.
//   - On the loop goroutine outside a task, a pending future returns
//     ErrDeadlock at once: the loop cannot wait for itself.
func (f *Future[T]) Await(ctx context.Context) (T, error) {
	if f == nil {
		panic("future: Await on nil future")
	}
	if f.ready() {
		return f.val, f.err
	}
	return f.awaitSlow(ctx)
}

func (f *Future[T]) awaitSlow(ctx context.Context) (T, error) {
	var zero T
	if ctx == nil {
		panic("future: Await with nil context")
	}
	f.mustMade("Await")
	fib := f.ex.CurrentFiber()
	if fib == nil {
		// A task of another executor awaiting this future is found through
		// its context.
		if t := currentTask(ctx); t != nil {
			fib = &t.fiber
		}
	}
	if fib != nil {
		if err := suspendUntil(fib, &f.core, ctx); err != nil {
			return zero, err
		}
		return f.val, f.err
	}
	if f.ex.OnLoop() {
		return zero, ErrDeadlock
	}
	return f.park(ctx)
}

// parker is a goroutine blocked in Await (or Do) off the loop. Parkers are
// pooled per executor (loop.Loop.Parked), never across executors, so that
// no channel made in one testing/synctest bubble is used in another.
type parker struct {
	l  quitLink
	ch chan struct{}
}

func (p *parker) wake(bool) { p.ch <- struct{}{} }

// getParker returns a parker for a goroutine about to wait for ex.
func getParker(ex *loop.Loop) *parker {
	if p, ok := ex.Parked.Get().(*parker); ok {
		return p
	}
	p := &parker{ch: make(chan struct{}, 1)}
	p.l.init(p)
	return p
}

func (f *Future[T]) park(ctx context.Context) (T, error) {
	var zero T
	p := getParker(f.ex)
	if !f.addWaiter(&p.l.link) {
		f.ex.Parked.Put(p)
		return f.val, f.err
	}
	var err error
	select {
	case <-p.ch:
		f.ex.Parked.Put(p)
		return f.val, f.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-f.ex.Done():
		err = executor.ErrClosed
	}
	if f.withdraw(&p.l) {
		// p stays in f's stack until a compaction or f's completion drops
		// it, so it is not recycled.
		return zero, err
	}
	<-p.ch // the completer got there first: its token is coming
	f.ex.Parked.Put(p)
	return f.val, f.err
}

// Promise is the write side of a Future: it completes the future once. Its
// methods may be called from any goroutine. Make one with NewPromise; the
// zero value is not usable (its methods panic).
type Promise[T any] struct {
	f Future[T]
}

// NewPromise returns a promise for a new pending future bound to e.
func NewPromise[T any](e *executor.Executor) *Promise[T] {
	ex := (*loop.Loop)(e)
	if ex == nil {
		panic("future: NewPromise with nil executor")
	}
	p, w := newObjHere[Promise[T]](ex)
	p.f.ex = ex
	p.f.id = newID(ex, hooks.KindFuture, 0, p, w)
	return p
}

// Future returns the promise's future.
func (p *Promise[T]) Future() *Future[T] { return &p.f }

// Resolve completes the future with v. It returns false if the future was
// already completed (resolved, rejected or cancelled).
func (p *Promise[T]) Resolve(v T) bool {
	p.f.mustMade("Resolve")
	return p.f.complete(v, nil, fromAnywhere)
}

// Reject completes the future with err, which must not be nil. It returns
// false if the future was already completed.
func (p *Promise[T]) Reject(err error) bool {
	if err == nil {
		panic("future: Reject with nil error")
	}
	p.f.mustMade("Reject")
	var zero T
	return p.f.complete(zero, err, fromAnywhere)
}

// Complete completes the future with v and err (a nil err resolves it). It
// returns false if the future was already completed.
func (p *Promise[T]) Complete(v T, err error) bool {
	p.f.mustMade("Complete")
	return p.f.complete(v, err, fromAnywhere)
}

// OnCancel registers fn to run on the loop if the future is cancelled while
// pending (by Future.Cancel or a combinator); it never runs if the future is
// completed otherwise. Registered after a cancellation, fn runs at once (on
// the loop, asynchronously).
func (p *Promise[T]) OnCancel(fn func()) {
	if fn == nil {
		panic("future: OnCancel with nil func")
	}
	p.f.mustMade("OnCancel")
	fr, onLoop := p.f.ex.Current()
	c := &cancelNode{c: &p.f.core, fn: fn, fr: fr}
	c.l.w = c
	if !p.f.addWaiter(&c.l) {
		c.wake(onLoop)
	}
}

type cancelNode struct {
	l  link
	c  *core
	fn func()
	fr *frame.Frame
}

func (n *cancelNode) wake(onLoop bool) {
	if !n.c.cancelled() {
		return
	}
	schedule(n.c.ex, onLoop, n, n.fr, 0)
}

func (n *cancelNode) Run() { n.fn() }

// schedule queues r on ex's loop from a goroutine that does (onLoop) or does
// not hold it.
func schedule(ex *loop.Loop, onLoop bool, r loop.Runnable, fr *frame.Frame, id hooks.ID) {
	if onLoop {
		ex.PostRunnable(r, fr, id)
		return
	}
	_ = ex.Schedule(r, fr, id)
}
