package executor

import (
	"context"
	"time"

	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/loop"
)

// ErrClosed is returned by Submit once Shutdown or Close has begun, and is
// the error with which goroutines blocked in Await and suspended tasks are
// released when the executor closes. It matches channel.ErrClosed
// (errors.Is), since every channel of a closed executor is closed too.
var ErrClosed = loop.ErrClosed

// ErrRunning is returned by Run when the loop is already running.
var ErrRunning = loop.ErrRunning

// Waker is what a poll-based operation wakes when it may make progress: a
// channel's PollRecv wakes it when an item arrives or the channel closes.
type Waker interface {
	// Wake signals that the operation polled with this waker may now make
	// progress. It may be called from any goroutine, more than once.
	Wake()
}

// Executor is a single-threaded event loop: one goroutine runs its queue of
// continuations one at a time, in FIFO order. Create one with New, run it
// with Run or Start, and stop it with Shutdown or Close. The zero value is
// not usable: its methods panic with a message that says so.
type Executor loop.Loop

// lp is the loop behind e.
func (e *Executor) lp() *loop.Loop { return (*loop.Loop)(e) }

// New returns an executor that is not yet running. Work submitted before Run
// or Start waits in its queue.
func New(opts ...Option) *Executor {
	cfg := loop.Config{
		Alloc:          loop.Allocation(DefaultAllocation),
		StallThreshold: DefaultStallThreshold,
		ProbeInterval:  defaultProbeInterval,
		ProbeWindow:    defaultProbeWindow,
	}
	for _, o := range opts {
		if o == nil {
			panic("executor: New with nil Option")
		}
		o.apply(&cfg)
	}
	return (*Executor)(loop.New(cfg))
}

// Name returns the executor's name (WithName; "spindle" by default).
func (e *Executor) Name() string { return e.lp().Name() }

// OnLoop reports whether the calling goroutine holds the loop: it is running
// a callback or task body of this executor. Loop-only methods (Post,
// AfterFunc, channel and merge operations) may be called only when OnLoop
// is true.
func (e *Executor) OnLoop() bool { return e.lp().OnLoop() }

// Done returns a channel that is closed once the executor has closed and
// released everything that waited on it.
func (e *Executor) Done() <-chan struct{} { return e.lp().Done() }

// Closed reports whether the executor has stopped running work: every
// operation that would wait on the loop now fails with ErrClosed.
func (e *Executor) Closed() bool { return e.lp().Closed() }

// Post queues fn to run on the loop after the work already queued. It is the
// cheapest way to schedule work and may be called only from code that holds
// the loop (a callback or task body); elsewhere it panics, and Submit is the
// call to use. fn runs under the async-local frame that is current when Post
// is called.
func (e *Executor) Post(fn func()) { e.lp().Post(fn) }

// Submit queues fn to run on the loop. It may be called from any goroutine;
// the calls of one goroutine run in the order they were made. fn runs under
// the async-local frame of the caller when the caller holds the loop, and
// under the empty frame otherwise. Once Shutdown or Close has begun, Submit
// returns ErrClosed and fn will not run.
func (e *Executor) Submit(fn func()) error { return e.lp().Submit(fn) }

// CurrentID returns the id of the resource whose continuation is running,
// or 0 at top level, when no hooks are registered, or when the caller does
// not hold the loop.
func (e *Executor) CurrentID() hooks.ID { return e.lp().CurrentID() }

// AddHooks registers h with the executor and returns a func that removes it
// again (idempotent). Both may be called from any goroutine, the loop
// included. Resources created while no hooks are registered have id 0 and
// are never reported; a hook registered later is not told about resources
// that already exist, except through their later events.
//
// From the loop, the change applies from the next hook call on: after
// remove returns, the hook is not called again, except for the After of a
// continuation whose Before it already got. From another goroutine it
// applies as soon as the loop sees the new registrations (at once for
// resources created afterwards, from the next continuation on for
// Before/After).
func (e *Executor) AddHooks(h hooks.Hooks) (remove func()) { return e.lp().AddHooks(h) }

// Run runs the loop on the calling goroutine until the executor is closed by
// Shutdown or Close (then it returns nil) or ctx ends (then the executor
// closes at once, without draining, and Run returns ctx.Err()). It returns
// ErrRunning if the loop already runs and ErrClosed if the executor has
// already closed.
func (e *Executor) Run(ctx context.Context) error { return e.lp().Run(ctx) }

// Start runs the loop in a new goroutine, as Run(context.Background()). It
// panics if the loop is already running or the executor has closed. Close
// waits for that goroutine to finish.
func (e *Executor) Start() { e.lp().Start() }

// RunUntilIdle runs the loop on the calling goroutine until no task is ready:
// the queue and the inbox are empty and no timer is due. It returns the number
// of tasks run. It is how tests and benchmarks drive an executor step by step
// without a loop goroutine. It panics if the loop runs elsewhere; on a closed
// executor it runs nothing.
func (e *Executor) RunUntilIdle() int { return e.lp().RunUntilIdle() }

// Drive runs fn on the calling goroutine as loop code, so that it may do
// what only code holding the loop may (Post, channel operations, AfterFunc
// with the current frame), and then runs the loop until idle as
// RunUntilIdle does. Work submitted before Drive runs before what fn posts. fn is not counted
// as a task; Drive returns the number of tasks run. It panics if the loop
// runs elsewhere; on a closed executor it does not call fn and returns 0. A
// panic in fn propagates to the caller after the loop has been given up.
func (e *Executor) Drive(fn func()) int { return e.lp().Drive(fn) }

// Shutdown stops the executor gracefully: Submit starts returning ErrClosed,
// the loop runs the queue (tasks and the continuations they schedule) until
// it is empty, stops the timers (a pending future.Sleep fails with
// ErrClosed), and then releases everything still waiting: suspended tasks
// resume with ErrClosed and unwind, and goroutines blocked in Await get
// ErrClosed. Shutdown waits for that and returns nil. If ctx ends first, the
// shutdown becomes a Close: Shutdown waits for it and returns ctx.Err().
// If nobody runs the loop, Shutdown drains it on the calling goroutine.
// Called from the loop itself, or from the stall handler (WithStallHandler),
// it begins the shutdown and returns nil without waiting. Shutdown may be
// called any number of times, from any goroutine.
func (e *Executor) Shutdown(ctx context.Context) error { return e.lp().Shutdown(ctx) }

// Close closes the executor at once, like http.Server.Close: queued work is
// dropped (a future it would have completed fails with ErrClosed, so nothing
// that waits on the loop is left pending), timers stop, every spawned task's
// ctx is cancelled, every suspended task resumes with ErrClosed and unwinds,
// and goroutines blocked in Await get ErrClosed. Close returns once every
// task body has returned; it never waits for work that keeps producing work
// (future.Yield returns ErrClosed as soon as closing begins). Called from
// the loop itself, or from the stall handler (WithStallHandler), it begins
// closing and returns without waiting. If nobody runs the loop, Close
// closes it on the calling goroutine. It is idempotent, may be called from
// any goroutine, and always returns nil.
// Once closed, everything that would need the loop fails at once with
// ErrClosed.
func (e *Executor) Close() error { return e.lp().Close() }

// Stats is a snapshot of an executor's counters.
type Stats struct {
	// TasksRun counts the tasks the loop has run: callbacks, continuations,
	// timer callbacks and each slice of a spawned task.
	TasksRun uint64
	// Queued is the number of tasks waiting to run, submitted ones included.
	Queued int
	// Timers is the number of timers that are pending (not fired, not
	// stopped).
	Timers int
	// Suspended is the number of spawned tasks suspended in Await or Yield.
	Suspended int
	// Busy is the time the loop has spent awake (running tasks and passing
	// between them) and Idle the time it has spent waiting for work (asleep,
	// or yielding its P once before it sleeps), both summed over every Run or Start of the executor and up to date
	// when Stats is called; Busy/(Busy+Idle) is the loop's utilization
	// (Stats.Utilization). RunUntilIdle and Drive are not timed.
	Busy, Idle time.Duration
	// Stalls counts the stalls reported so far (WithStallHandler).
	Stalls uint64
	// Delay is how long scheduled work has waited before it ran, as
	// sampled by a periodic probe over a recent window (WithDelayProbe).
	Delay Delay
}

// Stats returns the executor's counters. It may be called from any
// goroutine. From code on the loop they are exact; from other goroutines
// TasksRun, Queued and Suspended are as of the loop's last pass between
// batches (or its last return from Run or RunUntilIdle), and the health
// figures (Busy, Idle, Stalls, Delay) are current.
func (e *Executor) Stats() Stats { return Stats(loop.StatsAs[Delay](e.lp())) }
