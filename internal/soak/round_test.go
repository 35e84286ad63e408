package soak

// One round: a fresh executor, eight workers, a close at a random moment,
// and the checks of docs/design.md point 7.
//
// Who touches what:
//   - the round's fields set in newRound and run (ex, mode, chans, the
//     random configuration) are written before the workers start and only
//     read afterwards;
//   - mu guards pool, submits, sends and recvd, which workers and tasks
//     append to;
//   - counters and flags are atomics;
//   - closed is closed by the driver (run) once Close has returned; the
//     workers' post-close operations start after it.
//
// A hang is never waited out: every wait of the driver has a watchdog.
// When one fires, the check fails and abort stops what the harness itself
// started (ctx ends, so every wait of a worker or task ends, and the loops
// that never stop on their own see aborted), so that the round still ends.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/shard"
)

const (
	workers = 8
	postOps = 16 // operations each worker makes after Close returned
)

// mode is how a round ends.
type mode int

const (
	closeGo      mode = iota // Close from a goroutine
	closeLoop                // Close from a callback on the loop
	shutdownGo               // Shutdown from a goroutine, then Close
	shutdownLoop             // Shutdown from the loop and from a goroutine, then Close
	nModeKinds
)

var modeNames = [nModeKinds]string{"close", "close-from-loop", "shutdown", "shutdown-from-loop"}

// An outcome is a mode, and for a Shutdown whether it drained the queue or
// its ctx ended first (then it became a Close).
const nModes = 6

var outcomeNames = [nModes]string{"close", "close-from-loop", "shutdown-drained", "shutdown-expired", "shutdown-from-loop-drained", "shutdown-from-loop-expired"}

type round struct {
	index    int
	seed     uint64
	rec      *recorder
	rng      *rand.Rand    // the driver's
	watchdog time.Duration // longest wait for what the contract says ends

	ex           *executor.Executor
	mode         mode
	shutdownWait time.Duration // Shutdown's deadline
	closeAfter   time.Duration // close by then at the latest
	closeAt      int64         // close when this many operations have begun
	pingPong     bool          // two tasks exchange items for ever
	spinner      bool          // a task loops on Yield for ever
	chans        []*channel.Chan[int64]
	group        *shard.Group          // two shards, closed with the executor
	svc          *shard.Sharded[int64] // shard i's instance holds i+1

	ctx     context.Context // ends only on abort
	cancel  context.CancelFunc
	aborted atomic.Bool

	ops       atomic.Int64
	finished  atomic.Int64 // workers done with their operations before the close
	closeNow  chan struct{}
	closeOnce sync.Once
	closed    chan struct{} // Close has returned
	isClosed  atomic.Bool
	drained   atomic.Bool // Shutdown returned nil: the queue ran dry
	doing     [workers]atomic.Pointer[string]

	items   atomic.Int64
	nextID  atomic.Int64
	bodies  atomic.Int64 // task bodies running
	mu      sync.Mutex
	pool    []handed
	submits []*submitRec
	sends   map[int64]bool // item -> its send was withdrawn (failed)
	recvd   map[int64]int

	n tally
}

func newRound(index int, seed uint64, rec *recorder, wd time.Duration) *round {
	rng := rand.New(rand.NewPCG(seed, 0))
	r := &round{
		index:        index,
		seed:         seed,
		rec:          rec,
		rng:          rng,
		watchdog:     wd,
		mode:         mode(rng.IntN(int(nModeKinds))),
		shutdownWait: time.Duration(1+rng.IntN(300)) * time.Millisecond,
		closeAfter:   time.Duration(10+rng.IntN(400)) * time.Millisecond,
		pingPong:     rng.IntN(2) == 0,
		spinner:      rng.IntN(2) == 0,
		closeNow:     make(chan struct{}),
		closed:       make(chan struct{}),
		sends:        map[int64]bool{},
		recvd:        map[int64]int{},
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

func (r *round) fail(check, format string, args ...any) { r.rec.fail(check, r, format, args...) }

func (r *round) describe() string {
	return fmt.Sprintf("%s, ping-pong %v, spinner %v", modeNames[r.mode], r.pingPong, r.spinner)
}

// outcome indexes outcomeNames.
func (r *round) outcome() int {
	switch r.mode {
	case closeGo, closeLoop:
		return int(r.mode)
	case shutdownGo:
		return 2 + b2i(!r.drained.Load())
	}
	return 4 + b2i(!r.drained.Load())
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// run plays the round and checks it. It returns false if a hang could not
// be undone: then goroutines are left and no further round should run.
func (r *round) run(ignore goleak.Option) bool {
	defer r.cancel()
	r.ex = executor.New(executor.WithName(fmt.Sprintf("soak-%d", r.index)),
		executor.WithPanicHandler(func(any) { r.n.inc(cPanicHandler) }))
	r.ex.Start()
	for _, c := range []int{0, 1, 4} {
		r.chans = append(r.chans, channel.New[int64](r.ex, c))
	}
	r.group = shard.New(2, executor.WithName(fmt.Sprintf("soak-%d-shard", r.index)))
	r.group.Start()
	r.svc = shard.NewSharded(r.group, func(i int) *int64 { v := int64(i + 1); return &v })
	r.startForever()
	maxOps := 100 + r.rng.IntN(1500)
	r.closeAt = 1 + r.rng.Int64N(int64(workers*maxOps))
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go r.worker(i, rand.New(rand.NewPCG(r.seed, uint64(i+1))), maxOps, &wg)
	}
	timer := time.NewTimer(r.closeAfter)
	select {
	case <-r.closeNow:
	case <-timer.C:
	}
	timer.Stop()
	if !r.close() {
		return false
	}
	r.checkAtClose()
	r.isClosed.Store(true)
	close(r.closed)
	if !r.join(&wg) {
		return false
	}
	r.checkAfter()
	if err := goleak.Find(ignore); err != nil {
		r.fail("no-goroutine-left", "%v", err)
	}
	return true
}

// triggerClose asks the driver to close now.
func (r *round) triggerClose() { r.closeOnce.Do(func() { close(r.closeNow) }) }

// close ends the round's executor as its mode says and reports whether the
// closing call returned, within the watchdog or once the round was aborted.
func (r *round) close() bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.doClose()
	}()
	if r.within(done, r.watchdog) {
		return true
	}
	r.fail("close-returns", "%s did not return within %v; running task bodies %d, queued %d, suspended %d",
		modeNames[r.mode], r.watchdog, r.bodies.Load(), r.ex.Stats().Queued, r.ex.Stats().Suspended)
	r.abort()
	if r.within(done, r.watchdog) {
		return true
	}
	r.fail("close-returns", "still not returned %v after the abort", r.watchdog)
	return false
}

func (r *round) doClose() {
	ex := r.ex
	switch r.mode {
	case closeGo:
	case closeLoop:
		if ex.Submit(func() { _ = ex.Close() }) == nil {
			<-ex.Done()
		}
	case shutdownGo, shutdownLoop:
		ctx, cancel := context.WithTimeout(context.Background(), r.shutdownWait)
		defer cancel()
		if r.mode == shutdownLoop {
			_ = ex.Submit(func() { _ = ex.Shutdown(ctx) })
		}
		r.drained.Store(ex.Shutdown(ctx) == nil)
	}
	_ = ex.Close() // after a Shutdown, as with http.Server: Close if it did not finish
	_ = r.group.Close()
}

// within waits for done at most d.
func (r *round) within(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// abort stops everything the harness started: every wait of a worker or a
// task ends (its ctx derives from r.ctx) and the loops that never end on
// their own stop.
func (r *round) abort() {
	r.aborted.Store(true)
	r.cancel()
}

// join waits for the workers: each Await they made has returned.
func (r *round) join(wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	if r.within(done, r.watchdog) {
		return true
	}
	r.fail("awaits-return", "workers still busy %v after Close returned: %s", r.watchdog, r.busyWorkers())
	r.abort()
	if r.within(done, r.watchdog) {
		return true
	}
	r.fail("awaits-return", "workers still busy %v after the abort: %s", r.watchdog, r.busyWorkers())
	return false
}

func (r *round) busyWorkers() string {
	var b strings.Builder
	for i := range r.doing {
		if s := r.doing[i].Load(); s != nil {
			fmt.Fprintf(&b, " w%d:%s", i, *s)
		}
	}
	return b.String()
}

// checkAtClose checks, at once after Close returned, that no task body
// runs and that the executor refuses new work with already failed futures.
func (r *round) checkAtClose() {
	if n := r.bodies.Load(); n != 0 {
		r.fail("task-bodies-returned", "%d task bodies still running when Close returned", n)
	}
	ex := r.ex
	var ran atomic.Bool
	body := func() { ran.Store(true) }
	failedAtOnce(r, "Call", future.Call(ex, func() (int, error) { body(); return 0, nil }))
	failedAtOnce(r, "Spawn", future.Spawn(ex, func(context.Context) (int, error) { body(); return 0, nil }))
	failedAtOnce(r, "Sleep", future.Sleep(ex, time.Hour))
	failedAtOnce(r, "Then", future.Then(future.Resolved(ex, 1), func(int) (int, error) { body(); return 0, nil }))
	failedAtOnce(r, "Transform", future.Transform(future.Resolved(ex, 1), func(int, error) (int, error) { body(); return 0, nil }))
	if err := ex.Submit(body); !errors.Is(err, executor.ErrClosed) {
		r.fail("closed-fails-at-once:Submit", "Submit after Close: %v, want executor.ErrClosed", err)
	}
	if ran.Load() {
		r.fail("closed-fails-at-once:ran", "work handed to the closed executor ran")
	}
}

// failedAtOnce checks that f, made after Close returned, is already failed
// with executor.ErrClosed.
func failedAtOnce[T any](r *round, what string, f *future.Future[T]) {
	check := "closed-fails-at-once:" + what
	if !f.Ready() {
		r.fail(check, "%s after Close: the future is pending, want it failed with executor.ErrClosed", what)
		return
	}
	if _, err := f.Await(context.Background()); !errors.Is(err, executor.ErrClosed) {
		r.fail(check, "%s after Close: %v, want executor.ErrClosed", what, err)
	}
}

// checkAfter checks, once the workers are done, the submits, the futures
// handed between goroutines and the channels' items.
func (r *round) checkAfter() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkSubmits()
	r.checkHanded()
	if !r.aborted.Load() { // an abort leaves sends whose outcome nobody saw
		r.checkItems()
	}
}

func (r *round) checkSubmits() {
	for i, s := range r.submits {
		runs := s.runs.Load()
		switch {
		case s.err != nil && !errors.Is(s.err, executor.ErrClosed):
			r.fail("submit-outcome", "submit %d: %v, want nil or executor.ErrClosed", i, s.err)
		case s.err != nil && runs != 0:
			r.fail("submit-rejected-not-run", "submit %d returned %v and ran %d times", i, s.err, runs)
		case s.err == nil && s.afterClose:
			r.fail("submit-after-close-rejected", "submit %d, made after Close returned, was accepted", i)
		case s.err == nil && r.drained.Load() && runs != 1:
			r.fail("submit-exactly-once", "submit %d accepted before a Shutdown that drained ran %d times", i, runs)
		case s.err == nil && runs > 1:
			r.fail("submit-at-most-once", "submit %d ran %d times", i, runs)
		case s.err == nil && runs == 0:
			r.n.inc(cSubmitDropped)
		}
	}
}

// checkHanded checks that every future handed between goroutines is
// complete once Close or Shutdown has returned: everything that waited on
// the loop has been released (docs/design.md, execution model point 7).
func (r *round) checkHanded() {
	for _, h := range r.pool {
		if !h.ready() {
			r.fail("future-ready-after-close", "%s: pending after Close", h.what())
		} else if !h.observed() {
			r.fail("oncomplete-ran", "%s: complete, but its OnComplete callback did not run", h.what())
		}
	}
}

func (r *round) checkItems() {
	for item, n := range r.recvd {
		if n > 1 {
			r.fail("channel-items", "item %d received %d times", item, n)
		}
		if r.sends[item] {
			r.fail("channel-items", "item %d received, but its send was withdrawn", item)
		}
	}
}

// line is the round's log line.
func (r *round) line() string {
	return fmt.Sprintf("round %d seed %#x %s (%s): %s", r.index, r.seed, outcomeNames[r.outcome()], r.describe(), r.n.summary())
}
