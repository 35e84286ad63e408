package future

// Spawned tasks.
//
// A task is an loop.Fiber whose body is the user's function. The task
// object is also the task's context.Context and the future of its result, so
// Spawn costs one allocation, from the executor's slab when it allocates from
// slabs and Spawn is called on the loop (executor.WithAllocation). The
// goroutine comes from the executor's pool of idle task goroutines, or is
// the one of a task that has just finished (loop.Fiber).
//
// Invariants:
//   - the task waits on at most one future at a time, through wl; wl is
//     reused for the next wait only once its completer has called wake on it
//     (consumed), because until then the completer may still hold it. A wait
//     that ends otherwise (ctx ended, cancellation, executor closing, or a
//     wake-up from elsewhere that found the future done before its completer
//     reached wl) replaces wl by a fresh link and never reuses the old one;
//   - every wake-up of the task is a hint: after Suspend returns, the task
//     rechecks what it waits for (the future, the executor, ctx);
//   - cancelled is set once, under mu, together with closing sig.done when
//     it exists, so Done and Err agree; the functions registered with
//     AfterFunc (sig.afters) are taken from the list then and called once,
//     outside mu, and none is added afterwards. sig, guarded by mu, is made
//     by the first Done or AfterFunc: a task whose context nobody watches
//     pays one pointer for it.

import (
	"context"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
	"github.com/spindle-rt/spindle/internal/loop"
)

// taskBase is the untyped part of a task: its fiber, its wait link, and its
// context.
type taskBase struct {
	fiber     loop.Fiber
	wl        *taskLink
	own       taskLink // wl's first storage
	out       *core
	cancelL   link // on the task's own future: notices Cancel
	sig       *taskSignal
	mu        sync.Mutex
	cancelled atomic.Bool
	carried   frame.Carried // the frame Spawn was called under, for Value
}

// taskSignal is how a task's context tells that it has ended: the channel
// of Done and the functions of AfterFunc.
type taskSignal struct {
	done   chan struct{}
	afters []*func()
}

// signal returns t.sig, made if need be. Called with mu held.
func (t *taskBase) signal() *taskSignal {
	if t.sig == nil {
		t.sig = &taskSignal{}
	}
	return t.sig
}

type task[T any] struct {
	taskBase
	res Future[T]
	fn  func(context.Context) (T, error)
}

// Spawn starts fn as a task on e's loop and returns the future of its
// result. The body is straight-line Go that holds the loop while it runs,
// like a callback: inside it, Await on a pending future suspends the task
// and lends the loop to other work, and the task resumes on the loop when
// the future completes. ctx is the task's context: it is cancelled when the
// returned future is cancelled or the executor closes, and it carries the
// async-local values current when Spawn was called (hooks.Storage's
// FromContext reads them, and so does hooks.LogHandler for
// slog.InfoContext(ctx, ...)), for the code the task hands ctx to. A panic in fn fails
// the future with a *PanicError. Spawn may be called from any goroutine;
// when the executor is closing the future fails with executor.ErrClosed.
func Spawn[T any](e *executor.Executor, fn func(ctx context.Context) (T, error)) *Future[T] {
	ex := (*loop.Loop)(e)
	if ex == nil {
		panic("future: Spawn with nil executor")
	}
	if fn == nil {
		panic("future: Spawn with nil func")
	}
	t, w := newObjHere[task[T]](ex)
	t.fn = fn
	t.carried.Frame, _ = ex.Current()
	t.carried.Loop = ex.Name()
	t.res.ex = ex
	t.res.id = newID(ex, hooks.KindTask, 0, t, w)
	t.out = &t.res.core
	t.own.init(&t.taskBase)
	t.wl = &t.own
	t.cancelL.w = (*taskCancel)(&t.taskBase)
	t.res.head.Store(&t.cancelL) // not yet shared: no race
	t.fiber.Init(ex, t, t.res.id)
	if err := t.fiber.Start(); err != nil {
		var zero T
		t.res.complete(zero, err, fromAnywhere)
	}
	return &t.res
}

// SpawnErr is Spawn for a task that has a failure but no result to give,
// the shape of errgroup's functions: the future resolves with struct{}{}
// when fn returns nil and fails with fn's error otherwise, so the body
// needs no struct{}{} in its returns. It costs one allocation more than
// Spawn. SpawnErr may be called from any goroutine, with the rules of
// Spawn.
func SpawnErr(ex *executor.Executor, fn func(ctx context.Context) error) *Future[struct{}] {
	if ex == nil {
		panic("future: SpawnErr with nil executor")
	}
	if fn == nil {
		panic("future: SpawnErr with nil func")
	}
	return Spawn(ex, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
}

// Goexited fails the task's future: its body called runtime.Goexit.
func (t *task[T]) Goexited() {
	var zero T
	t.res.complete(zero, ErrGoexit, fromLoop)
}

// RunFiber runs the body on the task's goroutine.
func (t *task[T]) RunFiber() {
	defer func() {
		if v := recover(); v != nil {
			var zero T
			stack := debug.Stack()
			h, ok := t.res.claim()
			if !ok {
				t.res.ex.ReportPanic(v, stack) // the future was cancelled meanwhile
				t.res.ex.ObservePanic(v)
				return
			}
			t.res.val, t.res.err = zero, &PanicError{Value: v, Stack: stack}
			t.res.publish(h, fromLoop)
			if h == &t.cancelL {
				// Nobody waits on the task: a failure must not be silent.
				t.res.ex.ReportPanic(v, stack)
			}
			t.res.ex.ObservePanic(v)
		}
	}()
	if t.res.settled() { // cancelled before it started
		return
	}
	v, err := t.fn(&t.taskBase)
	t.fn = nil
	h, ok := t.res.claim()
	if !ok {
		return // cancelled meanwhile
	}
	if h == &t.cancelL {
		// Nobody else waits, and the task's own waiter acts on a
		// cancellation only: there is nobody to wake.
		h = nil
	}
	t.res.val, t.res.err = v, err
	t.res.publish(h, fromLoop)
}

// taskLink is a task's entry in the waiters of the future it awaits.
type taskLink struct {
	l     quitLink
	t     *taskBase
	woken atomic.Uint32 // wake calls so far: each means a completer let go of it
	waits uint32        // registrations so far (loop-owned)
}

func (tl *taskLink) init(t *taskBase) {
	tl.t = t
	tl.l.init(tl)
}

// wake resumes the task when the future it waits on completes.
func (tl *taskLink) wake(bool) {
	tl.woken.Add(1)
	tl.t.fiber.Wake()
}

// released reports whether the completer of the latest registration has
// woken tl and so no longer holds it.
func (tl *taskLink) released() bool { return tl.woken.Load() == tl.waits }

// renew gives the task a fresh wait link when the current one may still be
// held by a completer.
func (t *taskBase) renew() {
	tl := &taskLink{}
	tl.init(t)
	t.wl = tl
}

// Interrupt cancels the task's context when the executor closes.
func (t *taskBase) Interrupt(error) { t.cancel() }

// taskCancel is the waiter the task keeps on its own future.
type taskCancel taskBase

func (c *taskCancel) wake(bool) {
	t := (*taskBase)(c)
	if t.out.cancelled() {
		t.cancel()
		t.fiber.Wake()
	}
}

func (t *taskBase) cancel() {
	t.mu.Lock()
	var afters []*func()
	if !t.cancelled.Load() {
		t.cancelled.Store(true)
		if sig := t.sig; sig != nil {
			if sig.done != nil {
				close(sig.done)
			}
			afters, sig.afters = sig.afters, nil
		}
	}
	t.mu.Unlock()
	for _, f := range afters {
		(*f)()
	}
}

// AfterFunc arranges for f to be called once the task's context ends, on
// the goroutine that ends it (on a goroutine of its own if it has ended
// already), and returns a func that stops the call and reports whether it
// did, as context.AfterFunc does. Package context looks for this method on
// a parent context: a context derived from a task's (context.WithCancel,
// context.AfterFunc, future.GoContext) then watches the task without a
// goroutine of its own.
func (t *taskBase) AfterFunc(f func()) (stop func() bool) {
	p := &f
	t.mu.Lock()
	if t.cancelled.Load() {
		t.mu.Unlock()
		go f() // not here: the caller may hold a lock that f takes
		return func() bool { return false }
	}
	sig := t.signal()
	sig.afters = append(sig.afters, p)
	t.mu.Unlock()
	return func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		i := slices.Index(sig.afters, p)
		if i < 0 {
			return false
		}
		sig.afters = slices.Delete(sig.afters, i, i+1)
		return true
	}
}

// Deadline reports no deadline: a task's context ends by cancellation only.
func (t *taskBase) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns a channel closed when the task is cancelled or its executor
// closes.
func (t *taskBase) Done() <-chan struct{} {
	t.mu.Lock()
	sig := t.signal()
	if sig.done == nil {
		sig.done = make(chan struct{})
		if t.cancelled.Load() {
			close(sig.done)
		}
	}
	d := sig.done
	t.mu.Unlock()
	return d
}

// Err returns context.Canceled once the task is cancelled or its executor
// has closed, nil before.
func (t *taskBase) Err() error {
	if t.cancelled.Load() || t.fiber.Loop().Closed() {
		return context.Canceled
	}
	return nil
}

type taskKey struct{}

// Value returns the task for the package's own key and nil otherwise.
func (t *taskBase) Value(key any) any {
	switch key {
	case taskKey{}:
		return t
	case frame.ContextKey{}:
		return &t.carried
	}
	return nil
}

// String names the context for debugging.
func (t *taskBase) String() string { return "spindle task context" }

// suspendUntil suspends the running task fib until c completes. It returns
// nil once c is done, executor.ErrClosed if the executor closes first, or
// ctx's error if ctx ends first.
func suspendUntil(fib *loop.Fiber, c *core, ctx context.Context) error {
	t := fib.Body().(taskBody).base()
	ex := c.ex
	if ex != fib.Loop() {
		return awaitOther(fib, t, c, ctx)
	}
	own := ctx == context.Context(t)
	if err := waitErr(ex, t, ctx, own); err != nil {
		return err
	}
	tl := t.wl
	tl.waits++
	if !c.addWaiter(&tl.l.link) {
		tl.waits-- // never linked: nobody will wake it for this wait
		return nil
	}
	var stop func() bool
	if !own && ctx.Done() != nil {
		stop = context.AfterFunc(ctx, fib.Wake)
	}
	for {
		if err := waitErr(ex, t, ctx, own); err != nil {
			if stop != nil {
				stop()
			}
			if c.withdraw(&tl.l) {
				t.renew() // tl stays in c's stack until it is dropped
				return err
			}
			// c's completer claimed tl first: c is done.
			if !tl.released() {
				t.renew()
			}
			return nil
		}
		fib.Suspend()
		if c.ready() {
			if !tl.released() {
				t.renew() // c's completer has not reached tl yet
			}
			if stop != nil {
				stop()
			}
			return nil
		}
	}
}

// waitErr says why a wait must end early, if it must.
func waitErr(ex *loop.Loop, t *taskBase, ctx context.Context, own bool) error {
	if ex.Closed() {
		return executor.ErrClosed
	}
	if t.cancelled.Load() {
		return context.Canceled
	}
	if own {
		return nil
	}
	return ctx.Err()
}

// awaitOther waits, inside a task, for a future bound to another executor:
// its completion is handed to this task's loop by a one-off waiter.
func awaitOther(fib *loop.Fiber, t *taskBase, c *core, ctx context.Context) error {
	w := &wakeFiber{fib: fib}
	w.l.init(w)
	if !c.addWaiter(&w.l.link) {
		return nil
	}
	if ctx != context.Context(t) && ctx.Done() != nil {
		defer context.AfterFunc(ctx, fib.Wake)()
	}
	// The future's executor closing releases the wait, as it releases a
	// goroutine parked on the future.
	if c.ex.Watch(&w.watch, w) {
		defer c.ex.Unwatch(&w.watch)
	}
	for {
		if c.ready() {
			return nil
		}
		err := waitErr(fib.Loop(), t, ctx, ctx == context.Context(t))
		if err == nil && c.ex.Closed() {
			err = executor.ErrClosed
		}
		if err != nil {
			if c.withdraw(&w.l) {
				return err
			}
			return nil // the completer claimed w first: c is done
		}
		fib.Suspend()
	}
}

type wakeFiber struct {
	l     quitLink
	fib   *loop.Fiber
	watch loop.CloseWatch // on the future's executor
}

func (w *wakeFiber) wake(bool) { w.fib.Wake() }

// Interrupt wakes the task: the future's executor has closed.
func (w *wakeFiber) Interrupt(error) { w.fib.Wake() }

type taskBody interface{ base() *taskBase }

func (t *taskBase) base() *taskBase { return t }

// TaskContext returns the task's own context: the loop's waits compare a
// ctx with it (loop.TaskContext).
func (t *taskBase) TaskContext() context.Context { return t }

// currentTask returns the task that ctx belongs to if the caller is that
// task's body, else nil.
func currentTask(ctx context.Context) *taskBase {
	t := taskOf(ctx)
	if t == nil || t.fiber.Loop().CurrentFiber() != &t.fiber {
		return nil
	}
	return t
}

// taskOf returns the task that ctx belongs to, or nil, whoever calls it.
func taskOf(ctx context.Context) *taskBase {
	t, _ := ctx.(*taskBase)
	if t == nil {
		t, _ = ctx.Value(taskKey{}).(*taskBase)
	}
	return t
}

// Yield lets the other work queued on the loop run and then resumes the
// calling task: a long task calls it to stay fair. ctx must be the task's
// context (or derived from it) and Yield must be called from the task's
// body; elsewhere it panics. It returns executor.ErrClosed once Shutdown or
// Close has begun (a task that loops on Yield must stop then), or the
// context's error if the task was cancelled.
func Yield(ctx context.Context) error {
	t := currentTask(ctx)
	if t == nil {
		panic("future: Yield called outside the body of the task that owns ctx")
	}
	if t.fiber.Loop().Closing() {
		return executor.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t.fiber.Yield()
	if t.fiber.Loop().Closing() {
		return executor.ErrClosed
	}
	return ctx.Err()
}
