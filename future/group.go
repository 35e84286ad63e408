package future

// Task groups.
//
// A Group runs tasks on one loop and waits for them together: errgroup for
// spawned tasks. A function given to Go is queued in the group (a ring of
// function and frame, no object per task) and run by a worker: a spawned
// task (a fiber) whose body takes functions from the queue and runs them one
// after another on its own goroutine, as its own context. A function that
// returns without suspending costs no coroutine switch and no allocation:
// the worker goes straight on to the next. A function that suspends (Await,
// Yield, Sleep) keeps its worker, and a kick queued on the loop behind it
// starts another worker for the functions still queued, so they run
// concurrently exactly as spawned tasks do. A worker runs at most
// workerBatch functions in a row before it lets the rest of the loop run.
//
// Invariants:
//   - the queue, active, workers, idle, kicked and limit are loop-owned. Go
//     from another goroutine hands its function to the loop (groupSubmit),
//     SetLimit its limit;
//   - n (atomic) counts the functions given to Go that have not returned:
//     Go counts one before it returns, so a Wait that follows it waits for
//     it. active of them run on a worker, the others are queued or on their
//     way to the loop. A worker that goes straight on to its next function
//     counts the one that returned out later (owed), together with the
//     others of its run, when it stops taking functions: n cannot reach 0
//     while the worker runs one anyway, so this saves an atomic add per
//     function and changes nothing anyone can see;
//   - active <= limit when limit > 0: a worker takes the head of the queue
//     only while a slot is free, so the queue is served in order;
//   - no function starts once the period's ctx has ended (a failure, the
//     parent's end): enqueue counts it out instead of queueing it, and a
//     worker about to take one drops the whole queue (skip);
//   - workers counts the workers alive, idle those of them that are not
//     running a function (started and not yet run, between two functions,
//     or ending);
//   - whenever the queue is not empty and a slot is free, some worker will
//     take the head: an idle worker exists, or a kick is queued, or the
//     caller starts one. A worker that takes a function while others are
//     queued queues the kick (once: kicked), which starts a worker if that
//     function suspended with the queue still waiting;
//   - err, done, ctx and cancel are guarded by mu; ctx and cancel are
//     written only on the loop, which may read them without mu. err is the
//     first error, set once, and setting it cancels ctx with err as the
//     cause;
//   - ctx is the context of the current busy period: made on the loop when
//     a function is queued and there is none, cancelled and dropped when n
//     returns to 0 with no error, so an idle Group holds no registration in
//     its parent (once err is set, the cancelled ctx stays). A queued
//     function always belongs to the current period, since n > 0 while it
//     waits. A worker serves one period: its ctx is set when it takes its
//     first function and never changes, and it ends rather than take a
//     function of a later period;
//   - done is the promise Wait awaits: made by Wait while n > 0, resolved
//     and dropped when n returns to 0. The queue's buffer goes to the
//     loop's shelf then (one buffer per loop, of at most maxShelved
//     entries), where the next group to queue a function takes it.

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/ring"
)

// workerBatch bounds how many tasks a worker runs before it lets the rest
// of the loop's queue run.
const workerBatch = 128

// Group runs tasks on one executor's loop and waits for them together (it
// is not shard.Group, which runs one executor per core), in the manner of
// errgroup.Group: every task gets a context derived from the
// one given to NewGroup, the first task to fail cancels the others' context,
// and Wait returns that first error. Tasks are spawned tasks: they may
// Await, Yield and Sleep, hold the loop while they run, and start in the
// order they were given.
//
// SetLimit bounds how many tasks run at once; beyond it, Go never blocks:
// tasks wait their turn in the order they were given.
//
// Once the group's context has ended (the first failure, or the end of the
// context given to NewGroup), functions that have not started never start:
// those still waiting for a slot are dropped, and so is any later Go, as
// asyncio's TaskGroup cancels its tasks that have not begun. This is where
// a Group differs from errgroup, which starts every function given to Go,
// each with a cancelled ctx. Wait then returns the first failure, or, when
// the parent ended and no task failed, context.Cause of the parent.
//
// Go, SetLimit and Wait may be called from any goroutine. A Group may be
// waited on again after more calls to Go. Create one with NewGroup; the zero
// value is not usable.
//
// The tasks of a group share a few task goroutines (one per task suspended
// at a time, plus one), and the hooks see those as the group's task
// resources (hooks.KindTask) rather than each function given to Go.
type Group struct {
	ex     *loop.Loop
	parent context.Context
	kick   groupKick
	n      atomic.Int64

	// Loop-owned.
	q             ring.Ring[groupEntry]
	limit         int
	active        int
	workers, idle int
	kicked        bool

	mu     sync.Mutex
	err    error
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   *Promise[struct{}]
}

// NewGroup returns a Group whose tasks run on ex's loop with contexts
// derived from ctx: when ctx ends, every task's context ends too.
func NewGroup(ctx context.Context, ex *executor.Executor) *Group {
	if ctx == nil {
		panic("future: NewGroup with nil context")
	}
	if ex == nil {
		panic("future: NewGroup with nil executor")
	}
	g := &Group{ex: (*loop.Loop)(ex), parent: ctx}
	g.kick.g = g
	return g
}

// SetLimit limits the number of tasks of g that run at once to n; n <= 0
// removes the limit. Tasks given to Go beyond the limit wait their turn, in
// order. A raised limit starts waiting tasks at once; a lowered one lets
// running tasks finish. Called from a goroutine that does not hold the
// loop, the limit is handed to the loop, ahead of the caller's later calls
// to Go.
func (g *Group) SetLimit(n int) {
	g.check()
	if !g.ex.OnLoop() {
		_ = g.ex.Submit(func() { g.SetLimit(n) }) // fails once closing has begun: the limit stays
		return
	}
	g.limit = n
	g.fill()
}

// Go queues fn to run as a task of g on the group's loop (see Spawn; unlike
// the function Go, which runs a goroutine off the loop): as
// soon as the limit allows, in the order given. It never blocks, and fn
// never runs before Go returns. fn's ctx is derived from the group's
// context: it ends when a task of g fails, when the group's context ends,
// or when the executor closes; once it has ended, a function that has not
// started never does. An error returned by fn, or its panic (a
// *PanicError), is the group's error if it is the first; a panic that is
// not is reported to the executor's panic handler. fn runs under the
// async-local frame of the call to Go. Go may be called from any
// goroutine; when fn can no longer run because the executor is closing
// (or has closed), Go only makes executor.ErrClosed the group's error if
// it had none.
func (g *Group) Go(fn func(ctx context.Context) error) {
	g.check()
	if fn == nil {
		panic("future: Group.Go with nil func")
	}
	ex := g.ex
	fr, onLoop := ex.Current()
	if ex.Closed() {
		g.fail(executor.ErrClosed)
		return
	}
	g.n.Add(1)
	if onLoop {
		g.enqueue(groupEntry{fn, fr})
		return
	}
	if err := ex.SubmitRunnable(&groupSubmit{g, fn}, nil, 0); err != nil {
		g.fail(err)
		g.returned(false)
	}
}

// Wait waits until every task given to Go so far has returned, and returns
// the group's first error, or nil. It waits as Await does: in a task it
// suspends the task, on another goroutine it parks; on the loop outside a
// task it returns ErrDeadlock unless every task has returned. If ctx ends
// first it returns ctx.Err(), and if the executor closes first,
// executor.ErrClosed; the tasks go on either way.
func (g *Group) Wait(ctx context.Context) error {
	g.check()
	g.mu.Lock()
	if g.n.Load() == 0 {
		err := g.err
		g.mu.Unlock()
		return err
	}
	if g.done == nil {
		g.done = NewPromise[struct{}]((*executor.Executor)(g.ex))
	}
	done := g.done.Future()
	g.mu.Unlock()
	if _, err := done.Await(ctx); err != nil {
		return err
	}
	g.mu.Lock()
	err := g.err
	g.mu.Unlock()
	return err
}

func (g *Group) check() {
	if g == nil || g.ex == nil {
		panic("future: Group used without NewGroup")
	}
}

// fail records err as the group's error if it is the first, and reports
// whether it was. Any goroutine.
func (g *Group) fail(err error) bool {
	g.mu.Lock()
	first := g.err == nil
	if first {
		g.err = err
		if g.cancel != nil {
			g.cancel(err)
		}
	}
	g.mu.Unlock()
	return first
}

// returned counts a task out; the last one of a busy period releases Wait
// and, on the loop, the period's context.
func (g *Group) returned(onLoop bool) { g.returnedN(1, onLoop) }

// returnedN counts k tasks out (see returned).
func (g *Group) returnedN(k int64, onLoop bool) {
	if g.n.Add(-k) != 0 {
		return
	}
	var cancel context.CancelCauseFunc
	g.mu.Lock()
	if g.n.Load() != 0 {
		g.mu.Unlock()
		return // a new task came in meanwhile: the period goes on
	}
	done := g.done
	g.done = nil
	if onLoop && g.err == nil {
		cancel = g.cancel
		g.ctx, g.cancel = nil, nil
	}
	g.mu.Unlock()
	if onLoop {
		g.shelve()
	}
	if cancel != nil {
		cancel(nil) // the busy period is over: release the parent
	}
	if done != nil {
		done.Resolve(struct{}{})
	}
}

// enqueue queues e on the loop and makes sure a worker will take it.
func (g *Group) enqueue(e groupEntry) {
	if g.ctx == nil {
		g.mu.Lock()
		g.ctx, g.cancel = context.WithCancelCause(g.parent)
		if g.err != nil {
			g.cancel(g.err)
		}
		g.mu.Unlock()
	}
	if g.ctx.Err() != nil { // the group has failed, or its parent ended
		g.fail(context.Cause(g.ctx))
		g.returned(true)
		return
	}
	if g.q.Cap() == 0 {
		g.unshelve()
	}
	g.q.Push(e)
	g.fill()
}

// queueShelf is the loop-local key of the loop's spare queue buffer: the
// queue of an idle group goes there, for the next group (or busy period)
// to take instead of growing a buffer of its own again.
type queueShelf struct{}

// maxShelved bounds the capacity of the buffer the loop keeps.
const maxShelved = 4096

// shelf returns the loop's spare queue. Loop only.
func (g *Group) shelf() *ring.Ring[groupEntry] {
	if q, ok := g.ex.Local(queueShelf{}).(*ring.Ring[groupEntry]); ok {
		return q
	}
	q := new(ring.Ring[groupEntry])
	g.ex.SetLocal(queueShelf{}, q)
	return q
}

// shelve puts the empty queue of a group that has gone idle on the loop's
// shelf, if it is larger than the one there and not too large. Loop only.
func (g *Group) shelve() {
	if c := g.q.Cap(); c > 0 && c <= maxShelved {
		if q := g.shelf(); q.Cap() < c {
			*q = g.q
		}
	}
	g.q = ring.Ring[groupEntry]{}
}

// unshelve takes the loop's spare queue buffer, if there is one. Loop only.
func (g *Group) unshelve() {
	if q := g.shelf(); q.Cap() > 0 {
		g.q, *q = *q, ring.Ring[groupEntry]{}
	}
}

// groupSubmit hands a function given to Go by a goroutine that does not
// hold the loop to the loop.
type groupSubmit struct {
	g  *Group
	fn func(context.Context) error
}

// Run queues the function.
func (s *groupSubmit) Run() { s.g.enqueue(groupEntry{fn: s.fn}) }

// fill starts a worker if a queued function may start and no worker will
// take it. Loop only.
func (g *Group) fill() {
	if g.q.Len() == 0 || g.idle > 0 || !g.free() {
		return
	}
	g.workers++
	g.idle++
	ex := g.ex
	w := newObj[groupWorker](ex, true)
	w.g = g
	w.own.init(&w.taskBase)
	w.wl = &w.own
	w.id = newID(ex, hooks.KindTask, 0, w, where{known: true, onLoop: true})
	w.fiber.Init(ex, w, w.id)
	if err := w.fiber.Start(); err != nil { // on the loop: cannot fail
		panic("future: starting a group worker: " + err.Error())
	}
}

// free reports whether a function may start. Loop only.
func (g *Group) free() bool { return g.limit <= 0 || g.active < g.limit }

// next takes the return of w's function (when ran) with err and, with take,
// the next function for w: ok is false when w must end. Without take, w
// stays idle and takes nothing. first reports whether err became the
// group's error. Loop only.
func (g *Group) next(w *groupWorker, ran bool, err error, take bool) (e groupEntry, ok, first bool) {
	if ran {
		g.active--
		g.idle++
		if err != nil {
			first = g.fail(err)
		}
		w.owed++
	}
	if g.ex.Closed() {
		g.drop()
	}
	if take {
		if g.q.Len() > 0 && g.ctx.Err() != nil {
			g.skip()
		}
		if g.q.Len() > 0 && g.free() && (w.ctx == nil || w.ctx == g.ctx) {
			e, _ = g.q.Pop()
			w.ctx = g.ctx
			if g.q.Len() > 0 && !g.kicked {
				g.kicked = true
				g.ex.PostRunnable(&g.kick, nil, 0)
			}
			g.active++
			g.idle--
			return e, true, first // w runs e: n stays above 0, owed can wait
		}
	}
	if k := w.owed; k > 0 {
		w.owed = 0
		g.returnedN(k, true)
	}
	if !take {
		return e, false, first
	}
	g.idle--
	g.workers--
	g.fill() // a function of a later period: a new worker serves it
	return e, false, first
}

// drop fails the queued functions, which will never run, once the executor
// has closed. Loop only.
func (g *Group) drop() {
	for g.q.Len() > 0 {
		g.q.Pop()
		g.fail(executor.ErrClosed)
		g.returned(true)
	}
}

// skip drops the queued functions, which must not start once the group's
// context has ended: the group's error is the first failure, or else why
// the context ended. Loop only.
func (g *Group) skip() {
	cause := context.Cause(g.ctx)
	for g.q.Len() > 0 {
		g.q.Pop()
		g.fail(cause)
		g.returned(true)
	}
}

// groupKick starts a worker, on the loop, if a task suspended while others
// were queued.
type groupKick struct{ g *Group }

// Run starts the worker.
func (k *groupKick) Run() {
	k.g.kicked = false
	k.g.fill()
}

// groupWorker is a task that runs the group's queued functions. It is the
// context they get: the group's context, and the task for Await and Yield.
type groupWorker struct {
	taskBase
	g    *Group
	ctx  context.Context // the busy period's context; set once, before the first function
	id   hooks.ID
	owed int64 // functions of w that returned and are not yet counted out of n
}

// groupEntry is a queued function and the frame of its call to Go.
type groupEntry struct {
	fn func(context.Context) error
	fr *frame.Frame
}

// RunFiber runs queued functions until none may start, letting the rest of
// the loop run after every workerBatch of them.
func (w *groupWorker) RunFiber() {
	g := w.g
	running := false // a function runs: set when RunFiber unwinds through it
	defer func() {
		if running { // it ended the goroutine (runtime.Goexit), and w with it
			g.next(w, true, errGoexit, false)
			g.idle--
			g.workers--
			g.fill()
		}
		g.ex.ResolveHook(w.id)
	}()
	e, ok, _ := g.next(w, false, nil, true)
	for ran := 1; ok; ran++ {
		running = true
		err := w.run(e)
		running = false
		take := ran%workerBatch != 0
		var first bool
		e, ok, first = g.next(w, true, err, take)
		if pe, isPanic := err.(*PanicError); isPanic && !first {
			g.ex.ReportPanic(pe.Value, pe.Stack) // not the group's error: never silent
		}
		if !take {
			w.fiber.Yield()
			e, ok, _ = g.next(w, false, nil, true)
		}
	}
}

// run calls e's function under the frame of its call to Go and returns its
// error, or a *PanicError if it panics.
func (w *groupWorker) run(e groupEntry) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	w.g.ex.Cur = e.fr
	return e.fn(w)
}

// Interrupt cancels the worker when the executor closes, and with it the
// group's context.
func (w *groupWorker) Interrupt(err error) {
	w.taskBase.Interrupt(err)
	if cancel := w.g.cancel; cancel != nil {
		cancel(err)
	}
}

// Deadline returns the group context's deadline.
func (w *groupWorker) Deadline() (time.Time, bool) { return w.ctx.Deadline() }

// Done returns the group context's Done channel.
func (w *groupWorker) Done() <-chan struct{} { return w.ctx.Done() }

// Err returns the group context's error.
func (w *groupWorker) Err() error { return w.ctx.Err() }

// AfterFunc is context.AfterFunc of the group's context: the worker's
// context ends with it, not with the worker's task.
func (w *groupWorker) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(w.ctx, f) }

// Value returns the worker's task for the package's own key, and the group
// context's value otherwise.
func (w *groupWorker) Value(key any) any {
	if key == (taskKey{}) {
		return &w.taskBase
	}
	return w.ctx.Value(key)
}

// String names the context for debugging.
func (w *groupWorker) String() string { return "spindle group task context" }
