package loop

// Fibers: straight-line task bodies that suspend and resume on the loop.
//
// A fiber's body runs on a goroutine of its own, but only while the loop has
// been lent to it: the loop goroutine switches to the fiber's goroutine with
// the runtime's coroutine switch (the one behind iter.Pull), and the fiber
// switches back when it suspends or finishes. Exactly one of the two runs at
// any moment, so the body holds the loop and needs no locks, and a switch
// does not go through the Go scheduler.
//
// Invariants (all loop-owned, except scheduled):
//   - state moves new -> running -> (suspended -> running)* -> done;
//   - a fiber is in e.suspended exactly while its state is suspended;
//   - e.fiber is the running fiber while its body runs, nil otherwise, and
//     e.CoroG is then the fiber's goroutine (see executor.go);
//   - a coroutine (goroutine) belongs to at most one fiber at a time
//     (f.co and co.fiber point at each other while the fiber has started and
//     is not done). When its fiber is done it runs the next queued task in
//     place if that task is the first run of another fiber (nextNewFiber),
//     which keeps the FIFO order and saves two switches; otherwise it
//     switches back to the loop goroutine and goes back to the idle pool;
//   - a fiber that suspends while the next queued task is the run of
//     another fiber is the hub (e.hub) while its goroutine runs that fiber
//     in place, and the ones after it, until its own resumption comes up
//     (hubRun): the loop goroutine stays switched into the hub meanwhile. A
//     fiber run by the hub switches back to the hub's goroutine and never
//     becomes a hub itself, so coroutine calls nest one level at most; a
//     Goexit under the hub is passed to the loop goroutine (e.hubExit);
//   - scheduled coalesces wake-ups: Wake queues a fiber only when it is not
//     already queued by a Wake, and a stale or repeated wake-up (the fiber is
//     running or done, or was resumed by its own Start or Yield item)
//     is ignored by Run, so a body that resumes must recheck the condition
//     it waited for.

import (
	"context"
	"errors"
	"iter"
	"runtime/debug"
	"sync/atomic"

	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
	"github.com/spindle-rt/spindle/internal/gid"
)

const (
	fiberNew uint8 = iota
	fiberRunning
	fiberSuspended
	fiberDone
)

// FiberBody is the code a Fiber runs.
type FiberBody interface {
	// RunFiber runs the body on the fiber's goroutine while it holds the
	// loop. A panic that escapes it goes to the executor's panic handler.
	RunFiber()
}

// Goexiter is implemented by a FiberBody that wants to know, on the loop,
// when its RunFiber called runtime.Goexit (a t.FailNow in a test): the
// goroutine ends whatever happens, but the body can still complete its
// future.
type Goexiter interface {
	Goexited()
}

// ErrGoexit is what the panic handler receives, and what a spawned task's
// future fails with, when a task body or a callback on the loop calls
// runtime.Goexit (a continuation's future fails with a *PanicError that
// wraps it).
var ErrGoexit = errors.New("executor: runtime.Goexit called on the loop")

// Interrupter is implemented by a FiberBody that wants to know, on the loop,
// when the executor closes while the fiber is suspended; the fiber is then
// resumed and must unwind.
type Interrupter interface {
	// Interrupt is called with ErrClosed before the fiber is resumed.
	Interrupt(err error)
}

// ContextBody is implemented by a FiberBody that runs a task with a
// context of its own (future.Spawn's tasks): TaskContext returns it.
type ContextBody interface {
	TaskContext() context.Context
}

// TaskContext returns the context of the task that runs on fib, or nil if
// fib is nil or its body has none. Packages that suspend tasks themselves
// (channels, merges) compare a ctx with it: the task's own context needs no
// watching, because its cancellation and the loop's closing already wake the
// fiber.
func TaskContext(fib *Fiber) context.Context {
	if fib == nil {
		return nil
	}
	if cb, ok := fib.body.(ContextBody); ok {
		return cb.TaskContext()
	}
	return nil
}

// Fiber is a task body that can suspend itself and later resume on the loop,
// written as straight-line code: the machinery under future.Spawn. Embed it
// in a larger object, call Init, then Start. The zero value is not usable.
type Fiber struct {
	ex         *Loop
	body       FiberBody
	co         *coro
	frame      *frame.Frame
	id         hooks.ID
	state      uint8
	scheduled  atomic.Bool
	prev, next *Fiber
}

// Init binds f to ex and body. It must be called once, before Start.
func (f *Fiber) Init(ex *Loop, body FiberBody, id hooks.ID) {
	if ex == nil || body == nil {
		panic("executor: Fiber.Init with nil executor or body")
	}
	f.ex, f.body, f.id = ex, body, id
}

// Body returns the body f runs.
func (f *Fiber) Body() FiberBody { return f.body }

// Loop returns the executor f runs on.
func (f *Fiber) Loop() *Loop { return f.ex }

// Start queues f's first run. From code that holds the loop the body will run
// under the current async-local frame; elsewhere under the empty frame, and
// Start returns ErrClosed if the executor is closing.
func (f *Fiber) Start() error {
	e := f.ex
	if e.OnLoop() {
		f.frame = e.Cur
		e.post(item{r: f, id: f.id})
		return nil
	}
	return e.submit(item{r: f, id: f.id}, phaseOpen)
}

// Wake queues f to resume if it is suspended. It may be called from any
// goroutine and any number of times; wake-ups that arrive while f is already
// queued are merged, and one that arrives while f runs or after it finished
// is ignored. Fiber implements executor.Waker.
func (f *Fiber) Wake() {
	if !f.scheduled.CompareAndSwap(false, true) {
		return
	}
	if err := f.ex.Schedule(f, nil, f.id); err != nil {
		f.scheduled.Store(false)
	}
}

// Run starts or resumes f on the loop. It is called by the loop.
func (f *Fiber) Run() {
	if f.scheduled.Load() {
		f.scheduled.Store(false)
	}
	e := f.ex
	switch f.state {
	case fiberNew:
		f.co = e.getCoro()
		f.co.fiber = f
	case fiberSuspended:
		e.suspended.remove(f)
	default:
		return // a stale wake-up
	}
	f.state = fiberRunning
	e.fiber = f
	co := f.co
	co.next()
	e.fiber = nil
	if x := e.hubExit; x != nil && e.hub == nil {
		// A fiber that f ran as the hub called runtime.Goexit; its
		// goroutine waits in its last deferred call. Resumed here, the
		// Goexit goes on and reaches this goroutine, as it does when the
		// loop goroutine runs the fiber itself (leave hands the loop on).
		e.hubExit = nil
		x.next()
	}
	if co.fiber == nil {
		// The last fiber the goroutine ran has finished (it may have run
		// more than f: see nextNewFiber).
		e.putCoro(co)
	}
}

// nextNewFiber pops the next queued task and returns its fiber if that task
// is the first run of a fiber that the goroutine of a fiber that just
// finished may run in place, without switching back to the loop goroutine
// and from there to another task goroutine: the batch has room, the loop is
// not closing, and no Before or After hook wants to wrap it. Otherwise it
// leaves the queue alone and returns nil. Taking exactly the next task
// keeps the FIFO order; it is counted as runBatch counts the tasks it runs.
func (e *Loop) nextNewFiber() *Fiber {
	if e.left <= 1 || e.stopReq.Load() {
		return nil
	}
	it := e.q.Peek()
	if it == nil {
		return nil
	}
	f, ok := it.r.(*Fiber)
	if !ok || f.state != fiberNew || (it.id != 0 && e.hooks.wrapping.Load()) {
		return nil
	}
	e.takeInPlace(f)
	return f
}

// CurrentFiber returns the fiber whose body is running if the caller is that
// body, and nil otherwise (on the loop goroutine itself, or on a goroutine
// that does not hold the loop).
func (e *Loop) CurrentFiber() *Fiber {
	if me := gid.Current(); me == 0 || me != e.CoroG.Load() {
		return nil
	}
	return e.fiber
}

// Suspend gives the loop back until f is resumed by Wake (or by the executor
// closing, which wakes every suspended fiber). It must be called by f's own
// body. The async-local frame is saved and restored across the suspension.
func (f *Fiber) Suspend() {
	e := f.ex
	if e.fiber != f {
		panic("executor: Fiber.Suspend called outside the fiber's body")
	}
	f.frame = e.Cur
	f.state = fiberSuspended
	e.suspended.push(f)
	if e.hub != nil || !e.hubRun(f) {
		f.co.yield(struct{}{})
		// Resumed by Run, on the loop goroutine or on a hub's.
	}
	f.co.hold(e)
	e.Cur = f.frame
	e.curID = f.id
}

// hubRun runs queued fibers on the goroutine of f, which has just
// suspended, for as long as the next queued task is the run of a fiber
// (its first run or a resumption) that may run in place: the batch has
// room, the loop is not closing and no Before or After hook wants to wrap
// it. f is the hub meanwhile: each fiber it runs switches to its own
// goroutine and back to f's, one round trip, where the loop goroutine
// would have paid one round trip for f's suspension and resumption besides
// (two fibers that hand items to each other pay half the switches). When
// the next task is f's own resumption, hubRun takes it and reports true: f
// goes on, resumed in place. Otherwise it reports false and f switches back
// to the loop goroutine. Taking exactly the next task keeps the FIFO order;
// each is counted as runBatch counts the tasks it runs. A fiber run by the
// hub does not become a hub itself (its goroutine switches back to the
// hub's), so coroutines nest one level at most. Loop only.
func (e *Loop) hubRun(f *Fiber) bool {
	for e.left > 1 && !e.stopReq.Load() {
		next := e.q.Peek()
		if next == nil {
			return false
		}
		g, ok := next.r.(*Fiber)
		if !ok || (next.id != 0 && e.hooks.wrapping.Load()) {
			return false
		}
		fr, id := next.fr, next.id
		e.takeInPlace(g)
		if g == f {
			e.suspended.remove(f)
			f.state = fiberRunning
			e.fiber = f
			return true
		}
		e.Cur, e.curID = fr, id
		e.hub = f
		g.Run()
		e.hub = nil
		if e.hubExit != nil {
			return false // the loop goroutine takes the Goexit over (Run)
		}
	}
	return false
}

// nextIsOwn pops the next queued task and reports true if that task is
// f's own Yield (nothing else was queued), the batch has room, the loop is
// not closing and no Before or After hook wants to wrap it: then f goes on
// at once, as if it had been suspended and resumed, without the two
// switches. Otherwise it leaves the queue alone. Taking exactly the next
// task keeps the FIFO order; it is counted as runBatch counts the tasks it
// runs.
func (e *Loop) nextIsOwn(f *Fiber) bool {
	if e.q.Len() != 1 || e.left <= 1 || e.stopReq.Load() {
		return false // something else is queued (or nothing is: f's Yield went elsewhere)
	}
	it := e.q.Peek()
	if it == nil || it.r != Runnable(f) || (it.id != 0 && e.hooks.wrapping.Load()) {
		return false
	}
	e.takeInPlace(f)
	return true
}

// takeInPlace pops f, the queue's next task, to run it in place of a
// switch back to the loop, counting it as runBatch counts the tasks it
// runs. Loop only.
func (e *Loop) takeInPlace(f *Fiber) {
	e.q.Pop()
	e.left--
	e.ran++
	e.pulse()
	if f.scheduled.Load() {
		f.scheduled.Store(false)
	}
}

// Yield lets the rest of the queue run and resumes f after it: f is queued at
// the back and suspends. It must be called by f's own body.
func (f *Fiber) Yield() {
	if f.ex.fiber != f {
		panic("executor: Fiber.Yield called outside the fiber's body")
	}
	f.ex.post(item{r: f, id: f.id})
	if f.ex.q.Len() == 1 && f.ex.nextIsOwn(f) {
		return // nothing else was queued: f goes on in place
	}
	f.Suspend()
}

// coro is a reusable task goroutine driven by the runtime's coroutine switch.
type coro struct {
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	g     uintptr
	fiber *Fiber
}

func (e *Loop) getCoro() *coro {
	if n := len(e.idle); n > 0 {
		c := e.idle[n-1]
		e.idle[n-1] = nil
		e.idle = e.idle[:n-1]
		return c
	}
	return e.newCoro()
}

func (e *Loop) putCoro(c *coro) {
	if len(e.idle) < maxIdleCoros && !e.dead.Load() {
		e.idle = append(e.idle, c)
		return
	}
	e.stopCoro(c)
}

// stopCoro ends an idle task goroutine. coroG forgets it first: its
// descriptor may be reused by an unrelated goroutine.
func (e *Loop) stopCoro(c *coro) {
	e.CoroG.CompareAndSwap(c.g, 0)
	c.stop()
}

// hold records that c's goroutine holds the loop now; it stores only when
// the loop switched to a different task goroutine than last time.
func (c *coro) hold(e *Loop) {
	if e.CoroG.Load() != c.g {
		e.CoroG.Store(c.g)
	}
}

func (e *Loop) newCoro() *coro {
	c := &coro{}
	c.next, c.stop = iter.Pull(func(yield func(struct{}) bool) {
		c.g = gid.Current()
		c.yield = yield
		e.labelTaskGoroutine()
		for {
			f := c.fiber
			c.hold(e)
			e.Cur, e.curID = f.frame, f.id
			e.runFiberBody(f)
			f.state = fiberDone
			f.co = nil
			c.fiber = nil
			if n := e.nextNewFiber(); n != nil {
				// The next task starts a fiber: run it here (a Spawn
				// reuses the goroutine of the task that just finished).
				n.co, n.state = c, fiberRunning
				c.fiber, e.fiber = n, n
				continue
			}
			if !yield(struct{}{}) {
				return
			}
		}
	})
	return c
}

// runFiberBody runs the body; a panic that escapes it is reported, and the
// goroutine stays usable. A body that calls runtime.Goexit cannot be
// stopped: the body is told (Goexiter), the panic handler gets ErrGoexit,
// and e.goexited records the fiber, whose goroutine is about to end, for
// the loop goroutine (see leave).
func (e *Loop) runFiberBody(f *Fiber) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if v := recover(); v != nil {
			e.handlePanic(v, debug.Stack())
			return
		}
		e.goexited = f
		if g, ok := f.body.(Goexiter); ok {
			g.Goexited()
		}
		e.handlePanic(ErrGoexit, debug.Stack())
		if e.hub != nil {
			// Run by a hub: iter.Pull would pass the Goexit on to the
			// hub's goroutine and end it too. Switch back to the hub as
			// a suspension would; the loop goroutine resumes this one
			// (Run), and the Goexit reaches the loop goroutine instead.
			e.hubExit = f.co
			f.co.yield(struct{}{})
		}
	}()
	f.body.RunFiber()
	returned = true
}

// forgetGoexited clears what the loop knew of the fiber whose body called
// runtime.Goexit: its goroutine has ended, so it is done and its coroutine
// is not reused.
func (e *Loop) forgetGoexited() {
	f := e.goexited
	e.goexited = nil
	f.state = fiberDone
	if f.co != nil {
		e.CoroG.CompareAndSwap(f.co.g, 0)
		f.co = nil
	}
	e.fiber = nil
	e.Cur, e.curID = nil, 0
}

// fiberList is an intrusive doubly linked list of suspended fibers.
type fiberList struct {
	head *Fiber
	n    int
}

func (l *fiberList) push(f *Fiber) {
	f.prev, f.next = nil, l.head
	if l.head != nil {
		l.head.prev = f
	}
	l.head = f
	l.n++
}

func (l *fiberList) remove(f *Fiber) {
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		l.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	}
	f.prev, f.next = nil, nil
	l.n--
}

func (l *fiberList) each(fn func(*Fiber)) {
	for f := l.head; f != nil; {
		next := f.next
		fn(f)
		f = next
	}
}
