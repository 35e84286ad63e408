package loop

// The executor's state and who may touch it.
//
// Loop-owned fields (q, timers, frame, curID, fiber, suspended, idle, ran)
// are read and written only by the goroutine that holds the loop: the
// goroutine inside Run (or RunUntilIdle, Drive, or a Shutdown that drains a
// loop nobody runs), or the spawned task it has switched to. Every entry
// point that may be called from anywhere first asks whether its caller holds
// the loop (OnLoop) and reads loop-owned state only then.
//
// Who holds the loop: loopG is the gid of the goroutine running the loop (0
// when none does) and coroG the gid of the task goroutine that the loop last
// switched to. Of these two goroutines only the holder executes at any
// moment: the loop goroutine is blocked in the coroutine switch while a task
// runs, and a task goroutine is blocked in it while the loop (or another
// task) runs. So "the caller's gid is loopG or coroG" is exactly "the caller
// holds the loop", and coroG changes only when the loop switches to a
// different task goroutine than last time. A task goroutine that exits
// clears coroG first, so a goroutine that later reuses its descriptor is not
// mistaken for it.
//
// The inbox (inbox, inbox.go, and sleeping) is guarded by mu. hasInbox is
// set under mu whenever inbox is non-empty, so the loop can look at it
// between batches without taking the lock. phase only moves forward
// (open -> draining -> closed) and is written under mu, so a Submit that
// saw phaseOpen under mu has its item taken in before the loop can finish
// draining.
//
// Wake-ups: the loop sets sleeping under mu before it blocks on wake; a
// submitter that appends while sleeping is set clears it and sends one token
// on wake (capacity 1), so no wake-up is lost and a busy loop costs a
// submitter no channel operation. A loop that serves sockets sleeps in its
// IO instead, and the token goes to IO.Wake (io.go).

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
)

// ErrClosed is executor.ErrClosed (see there). It matches ErrChanClosed
// (closederr.go).
var ErrClosed error = closedError{}

// ErrRunning is executor.ErrRunning (see there).
var ErrRunning = errors.New("executor: Run called while the loop is already running")

// Runnable is a unit of work the loop runs. Post and Submit take plain
// functions; packages built on the executor queue their own continuation
// objects as Runnables so that scheduling them allocates nothing.
type Runnable interface {
	// Run runs the work on the loop.
	Run()
}

// PanicCatcher is implemented by a Runnable that wants a panic raised by its
// Run: the loop hands it the recovered value and the stack instead of the
// executor's panic handler (a future's continuation turns it into the
// future's error).
type PanicCatcher interface {
	// CatchPanic receives the value and stack of a panic raised by Run.
	CatchPanic(v any, stack []byte)
}

const (
	phaseOpen int32 = iota
	phaseDraining
	phaseClosed
)

// batchSize bounds how many tasks the loop runs before it takes in
// submitted work and fires due timers.
const batchSize = 128

// maxIdleCoros bounds the pool of idle task goroutines.
const maxIdleCoros = 256

// item is one queued task: the work, the async-local frame it was
// registered under, and the resource it resolves (for hooks).
type item struct {
	r  Runnable
	fr *frame.Frame
	id hooks.ID
}

type funcRunnable func()

func (f funcRunnable) Run() { f() }

// Loop is a single-threaded event loop: one goroutine runs its queue of
// continuations one at a time, in FIFO order. Create one with New, run it
// with Run or Start, and stop it with Shutdown or Close.
type Loop struct {
	frame.Holder // who holds the loop, and the current frame (loop-owned)

	// Loop-owned.
	q          taskQueue
	timers     timerHeap
	curID      hooks.ID
	fiber      *Fiber
	goexited   *Fiber // a fiber whose body called runtime.Goexit, until leave
	hub        *Fiber // a suspended fiber whose goroutine runs queued fibers in place (hubRun), while one runs
	hubExit    *coro  // a coroutine whose body called runtime.Goexit under the hub, until the loop goroutine resumes it
	cbGoexited bool   // a callback called runtime.Goexit, until leave
	suspended  fiberList
	idle       []*coro
	ran        uint64
	left       int // tasks runBatch may still run in this batch; 0 outside runBatch

	bigInbox   bool        // loop-owned: the inbox kept more than inboxFreeBlocks free blocks at the last take
	spellStart int64       // loop-owned: mono() when idleTrim's spell began (0: none runs)
	spellPeak  int         // loop-owned: the most items the loop had to run at once in the spell
	trimTimer  *time.Timer // loop-owned: wakes an idle loop to give oversized buffers back
	trimArmed  atomic.Bool // trimTimer is running
	sleepTimer *time.Timer // loop-owned: wakes a sleeping loop for the next timer
	stepOnce   bool        // loop-owned: Step runs: the loop returns after one batch (sim.go)

	mu       sync.Mutex
	inbox    inbox
	sleeping bool
	hasInbox atomic.Bool
	// phase sits on a cache line of its own: other shards read it for every
	// message they send (Closed), and the words above are written by every
	// Submit and every take of the inbox.
	_     [64]byte
	phase atomic.Int32
	_     [60]byte
	wake  chan struct{}
	io    ioState // the socket poller the loop sleeps in, once it serves sockets (io.go)
	clock Clock   // the timers' clock; nil: the monotonic clock (sim.go)
	sim   any     // the simulation that steps the loop, nil for none (sim.go)

	running atomic.Bool   // a goroutine runs the loop (Run, Start, RunUntilIdle, draining Shutdown)
	stopReq atomic.Bool   // Run's ctx ended or Shutdown's ctx expired: close without draining
	dead    atomic.Bool   // the loop has finished closing
	closed  chan struct{} // closed once the executor is closed and everything released

	lateMu   sync.Mutex // guards late and lateBusy
	late     []Dropper  // items dropped after the loop closed, not yet dropped
	lateBusy bool       // a goroutine is dropping the late items

	// Published by the loop between batches for Stats from other goroutines.
	pubRan       atomic.Uint64
	pubQueued    atomic.Int64
	pubSuspended atomic.Int64
	timersActive atomic.Int64

	name         string
	panicHandler func(v any)
	alloc        Allocation
	locals       []localEntry                // loop-owned
	localCache   [localCacheSize]localCached // loop-owned: in front of locals (locals.go)
	flushers     []Flusher                   // loop-owned: called at every batch boundary (flush.go)
	drainers     []Drainer                   // loop-owned: asked before a drain finishes (drain.go)
	drainWait    bool                        // loop-owned: a drainer owes work, so a draining loop sleeps
	hooks        hookState
	health       health       // stall detection, busy and idle time, delay (health.go)
	watches      closeWatches // told when the executor closes (closewatch.go)

	// Parked holds the wake-up channels of goroutines that wait off the
	// loop for its work (future's Await and Do), for package future to
	// reuse. It is per loop, not per process: a channel made inside a
	// testing/synctest bubble belongs to that bubble, and a loop lives in
	// one bubble (its own channels and timers do), so no pooled channel
	// reaches a goroutine of another bubble or of none.
	Parked sync.Pool
}

// Config is what New needs to know: the settings of executor.Option.
type Config struct {
	Name         string      // in logs and panics; "spindle" when empty
	PanicHandler func(v any) // nil: log with log/slog
	Alloc        Allocation
	Hooks        []hooks.Hooks // registered from the start

	StallThreshold time.Duration // a task holding the loop longer is a stall; <= 0: no detection
	OnStall        StallFunc     // receives each stall; nil: log with log/slog
	ProbeInterval  time.Duration // period of the delay probe; <= 0: no probe
	ProbeWindow    time.Duration // Delay covers the probes of this long
}

// New returns a loop that is not yet running. Work submitted before Run or
// Start waits in its queue.
func New(cfg Config) *Loop {
	e := &Loop{
		wake:         make(chan struct{}, 1),
		closed:       make(chan struct{}),
		name:         cfg.Name,
		panicHandler: cfg.PanicHandler,
		alloc:        cfg.Alloc,
	}
	if e.name == "" {
		e.name = "spindle"
	}
	e.health.init(cfg, e.name)
	e.Holder.Name = e.name
	frame.Register(&e.Holder) // for the log handler of package hooks
	for _, h := range cfg.Hooks {
		e.hooks.add(h)
	}
	return e
}

// mustMade panics on a loop that New did not make (the zero
// executor.Executor): it has no channels to wake or close, so it could
// neither run nor close, and work given to it would be lost.
func (e *Loop) mustMade(op string) {
	if e == nil || e.closed == nil {
		panic("executor: " + op + " on an Executor not made by New")
	}
}

// Name: see executor.Executor.Name.
func (e *Loop) Name() string { return e.name }

// Post: see executor.Executor.Post. It holds the misuse guards (nil fn, a
// caller that does not hold the loop), as AfterFunc does; PostRunnable, for
// packages built on the loop, trusts its callers.
func (e *Loop) Post(fn func()) {
	if fn == nil {
		panic("executor: Post of nil func")
	}
	if !e.OnLoop() {
		panic("executor: Post called from a goroutine that does not hold the loop; use Submit")
	}
	// The ring push's fast path, written out (post calls Ring.Push, which
	// does not inline): Post is the cheapest way to schedule work, and that
	// call costs it about a tenth of its time. Putting the fast path in post
	// instead made post too large to inline into its other callers, for no
	// measured gain on Chain or Channel.
	it := item{r: funcRunnable(fn), fr: e.Cur}
	if !e.q.TryPush(it) {
		e.q.Push(it)
	}
}

// PostRunnable is Post for a Runnable: it queues r to run on the loop under
// frame fr, reporting Before/After hooks for resource id (0 for none). Loop
// only.
func (e *Loop) PostRunnable(r Runnable, fr *frame.Frame, id hooks.ID) {
	if r == nil {
		panic("executor: PostRunnable of nil Runnable")
	}
	e.post(item{r: r, fr: fr, id: id})
}

// post queues it. Its callers hold the loop, which nobody does once the
// loop has finished closing, so it needs no check of its own.
func (e *Loop) post(it item) { e.q.Push(it) }

// Submit: see executor.Executor.Submit. On the loop it posts (no lock);
// elsewhere it appends to the inbox under mu and wakes a sleeping loop.
func (e *Loop) Submit(fn func()) error {
	if fn == nil {
		panic("executor: Submit of nil func")
	}
	it := item{r: funcRunnable(fn)}
	if e.OnLoop() {
		it.fr = e.Cur
	}
	return e.submit(it, phaseOpen)
}

// Schedule queues r to run on the loop from any goroutine, under frame fr
// with hook resource id. When the caller holds the loop it is Post; otherwise
// the item goes through the inbox. Unlike Submit it is still accepted while
// the executor drains (it carries continuations of work that was accepted);
// it returns ErrClosed once the executor has closed.
func (e *Loop) Schedule(r Runnable, fr *frame.Frame, id hooks.ID) error {
	if r == nil {
		panic("executor: Schedule of nil Runnable")
	}
	if e.OnLoop() {
		e.post(item{r: r, fr: fr, id: id})
		return nil
	}
	return e.ScheduleOffLoop(r, fr, id)
}

// ScheduleOffLoop is Schedule for a caller that never holds the loop (the
// goroutines of a portable I/O backend, which hand their results to the
// loop): it goes through the inbox without asking who the caller is, which
// saves the holder check where that is costly (the purego build of package
// gid).
func (e *Loop) ScheduleOffLoop(r Runnable, fr *frame.Frame, id hooks.ID) error {
	if r == nil {
		panic("executor: Schedule of nil Runnable")
	}
	if err := e.submit(item{r: r, fr: fr, id: id}, phaseDraining); err != nil {
		e.Drop(r)
		return err
	}
	return nil
}

// submit appends it to the inbox while the phase is at most maxPhase.
func (e *Loop) submit(it item, maxPhase int32) error {
	if e.closed == nil {
		e.mustMade("Submit")
	}
	e.mu.Lock()
	if e.phase.Load() > maxPhase {
		e.mu.Unlock()
		return ErrClosed
	}
	e.inbox.push(it)
	if !e.hasInbox.Load() {
		e.hasInbox.Store(true)
	}
	if e.sleeping {
		e.sleeping = false
		e.signal()
	}
	e.mu.Unlock()
	return nil
}

// signal leaves one wake-up token for the loop: in its IO once it has
// one (io.go), on the wake channel otherwise.
func (e *Loop) signal() {
	if s := e.io.p.Load(); s != nil {
		s.io.Wake()
		return
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// SubmitRunnable is Submit for a Runnable, with the frame and hook resource
// id to run it under. It returns ErrClosed once Shutdown or Close has begun.
func (e *Loop) SubmitRunnable(r Runnable, fr *frame.Frame, id hooks.ID) error {
	if r == nil {
		panic("executor: SubmitRunnable of nil Runnable")
	}
	if e.OnLoop() {
		if e.phase.Load() != phaseOpen {
			return ErrClosed
		}
		e.post(item{r: r, fr: fr, id: id})
		return nil
	}
	return e.submit(item{r: r, fr: fr, id: id}, phaseOpen)
}

// Current returns the async-local frame of the running continuation and
// true when the caller holds the loop, and nil and false otherwise: the one
// check that code registering a continuation needs.
func (e *Loop) Current() (fr *frame.Frame, onLoop bool) {
	if !e.OnLoop() {
		return nil, false
	}
	return e.Cur, true
}

// CurrentID: see executor.Executor.CurrentID.
func (e *Loop) CurrentID() hooks.ID {
	if !e.OnLoop() {
		return 0
	}
	return e.curID
}

// StatsOf has the fields of executor.Stats, which documents them, with D
// the type of the Delay field: executor.Stats converts from
// StatsOf[executor.Delay] (StatsAs), and the loop fills its own Stats.
type StatsOf[D any] struct {
	TasksRun                  uint64
	Queued, Timers, Suspended int
	Busy, Idle                time.Duration
	Stalls                    uint64
	Delay                     D
}

// Stats is the loop's StatsOf.
type Stats = StatsOf[Delay]

// StatsAs is Stats with the Delay converted to D, a struct of Delay's
// fields (executor.Delay).
func StatsAs[D ~struct {
	P50, P99, Max time.Duration
	Samples       int
	Window        time.Duration
}](e *Loop) StatsOf[D] {
	s := e.Stats()
	return StatsOf[D]{s.TasksRun, s.Queued, s.Timers, s.Suspended, s.Busy, s.Idle, s.Stalls, D(s.Delay)}
}

// Stats: see executor.Executor.Stats. Off the loop it reads the figures
// the loop publishes between batches (publish) and the health figures.
func (e *Loop) Stats() Stats {
	if e.OnLoop() {
		e.mu.Lock()
		in := e.inbox.n
		e.mu.Unlock()
		s := Stats{
			TasksRun:  e.ran,
			Queued:    e.q.Len() + in,
			Timers:    int(e.timersActive.Load()),
			Suspended: e.suspended.n,
		}
		e.fillHealth(&s)
		return s
	}
	s := Stats{
		TasksRun:  e.pubRan.Load(),
		Queued:    int(e.pubQueued.Load()),
		Timers:    int(e.timersActive.Load()),
		Suspended: int(e.pubSuspended.Load()),
	}
	e.fillHealth(&s)
	return s
}

func (e *Loop) publish() {
	e.pubRan.Store(e.ran)
	e.pubQueued.Store(int64(e.q.Len()))
	e.pubSuspended.Store(int64(e.suspended.n))
}
