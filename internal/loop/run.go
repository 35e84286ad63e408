package loop

// Running the loop: Run, Start, RunUntilIdle, Drive, and a Shutdown that
// drains an executor nobody runs, all enter through loop.
//
// Invariants:
//   - one goroutine at a time runs the loop: running.CompareAndSwap(false,
//     true) is the only way in and leave the only way out; LoopG is that
//     goroutine's id from run's start to leave, 0 otherwise (frame.Holder:
//     with CoroG it says who holds the loop);
//   - a batch runs at most batchSize tasks with no per-task defer: a
//     panicking task ends the batch and recoverItem reports it; Cur and
//     curID are the running task's frame and resource id, nil and 0
//     between tasks;
//   - between batches poll runs the flushers, polls the IO without
//     blocking while work is queued (io.go), takes the inbox (unless
//     blocks taken earlier are still being consumed), queues due timers at
//     the front of the queue and publishes the health figures;
//   - stopReq (Close, or Run's ctx ending) is read before and after every
//     batch and ends the loop with finish(true), which drops the queue; an
//     empty queue and inbox after Shutdown began ends it with finish(false),
//     the drain;
//   - the loop sleeps only after it yielded once and still found nothing;
//     it sets sleeping under mu after checking hasInbox, phase and stopReq
//     under mu, so a Submit or a close that comes later sees it and sends
//     the wake-up (loop.go); a loop with an IO sleeps in it, and dispatches
//     what it found once it is awake again (io.go);
//   - leave hands the loop on when it must not stop: after a task called
//     runtime.Goexit under Run or Start, to a new goroutine; when a Shutdown
//     began while RunUntilIdle or Drive ran, to the leaving goroutine, which
//     drains it.

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spindle-rt/spindle/internal/gid"
)

// Run: see executor.Executor.Run.
func (e *Loop) Run(ctx context.Context) error {
	if ctx == nil {
		panic("executor: Run with nil context")
	}
	e.mustMade("Run")
	if e.phase.Load() == phaseClosed {
		return ErrClosed
	}
	if !e.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	return e.loop(ctx, false, nil)
}

// Start: see executor.Executor.Start.
func (e *Loop) Start() {
	e.mustMade("Start")
	if e.phase.Load() == phaseClosed {
		panic("executor: Start after the executor closed")
	}
	if !e.running.CompareAndSwap(false, true) {
		panic("executor: Start while the loop is already running")
	}
	go func() { _ = e.loop(context.Background(), false, nil) }()
}

// RunUntilIdle: see executor.Executor.RunUntilIdle. It runs no session
// (health.go): no watchdog, no busy or idle time.
func (e *Loop) RunUntilIdle() int { return e.step("RunUntilIdle", nil) }

// Drive: see executor.Executor.Drive. Work submitted before Drive is taken
// in before fn runs, so it runs before what fn posts.
func (e *Loop) Drive(fn func()) int {
	if fn == nil {
		panic("executor: Drive with nil func")
	}
	return e.step("Drive", fn)
}

// step runs the loop on the calling goroutine until idle, first running
// first (if not nil), for RunUntilIdle and Drive (named op in panics).
func (e *Loop) step(op string, first func()) int {
	e.mustMade(op)
	if e.phase.Load() == phaseClosed {
		return 0
	}
	if !e.running.CompareAndSwap(false, true) {
		panic("executor: " + op + " while the loop is already running")
	}
	before := e.ran
	_ = e.loop(context.Background(), true, first)
	return int(e.ran - before)
}

// Shutdown: see executor.Executor.Shutdown. It moves phase to draining
// under mu and wakes the loop, which finishes once its queue and inbox are
// empty (run); as Close, it does not wait on the loop or its watchdog.
func (e *Loop) Shutdown(ctx context.Context) error {
	if ctx == nil {
		panic("executor: Shutdown with nil context")
	}
	e.mustMade("Shutdown")
	e.mu.Lock()
	if e.phase.Load() == phaseOpen {
		e.phase.Store(phaseDraining)
	}
	e.signal()
	e.mu.Unlock()
	if e.OnLoop() || e.onWatchdog() {
		return nil
	}
	if e.phase.Load() != phaseClosed && e.running.CompareAndSwap(false, true) {
		// Nobody runs the loop: drain it here.
		return e.loop(ctx, false, nil)
	}
	select {
	case <-e.closed:
		return nil
	case <-ctx.Done():
		_ = e.Close() // a Shutdown whose ctx ends becomes a Close
		return ctx.Err()
	}
}

// loop runs the executor on the calling goroutine. e.running is already set.
// With untilIdle it returns as soon as nothing is ready. first, if not nil,
// runs on the loop before anything queued.
func (e *Loop) loop(ctx context.Context, untilIdle bool, first func()) (err error) {
	if e.phase.Load() == phaseClosed {
		// A caller (Close, Shutdown, leave) read the phase before the
		// goroutine that held the loop closed it, and took the loop up
		// after that goroutine let go: the loop is finished already.
		e.running.Store(false)
		return nil
	}
	returned := false
	defer func() { e.leave(ctx, untilIdle, !returned) }()
	err = e.run(ctx, untilIdle, first)
	returned = true
	return err
}

// run is the loop proper; see loop.
func (e *Loop) run(ctx context.Context, untilIdle bool, first func()) (err error) {
	e.LoopG.Store(gid.Current())
	if !untilIdle {
		e.beginSession(ctx) // labels, watchdog, busy and idle time (health.go)
		defer e.endSession()
	}
	ctxDone := ctx.Done()
	if ctxDone != nil {
		stop := context.AfterFunc(ctx, func() {
			e.stopReq.Store(true)
			e.signal()
		})
		defer stop()
	}
	if first != nil {
		if e.hasInbox.Load() {
			e.takeInbox() // work submitted before fn runs before what fn posts
		}
		first()
	}
	yielded := false // since the loop last went to sleep
	for {
		if e.stopReq.Load() { // Close from fn, or before the loop ran
			e.finish(true)
			return ctx.Err()
		}
		e.runBatch()
		e.poll()
		if e.stopReq.Load() {
			e.finish(true)
			return ctx.Err()
		}
		if e.q.Len() > 0 {
			if e.stepOnce {
				return nil // Step: one batch at a time (sim.go)
			}
			continue
		}
		if e.phase.Load() != phaseOpen && !e.hasInbox.Load() {
			if !e.drainOwed() {
				e.finish(false)
				return nil
			}
			if e.q.Len() > 0 {
				continue
			}
			if e.stepOnce {
				e.stepDrain() // the driver moves what the drain waits for (sim.go)
				return nil
			}
			if untilIdle {
				return nil // leave finishes the drain
			}
			if e.clock != nil {
				// A stepped loop run by Shutdown off its driver: nothing
				// moves the network or the clock its drainers wait for,
				// so it finishes now, as at the drain's end.
				e.finish(false)
				return nil
			}
			// Work is owed outside the queue (drain.go): sleep until I/O,
			// a timer or submitted work, then ask again.
			e.drainWait = true
			e.sleep(ctxDone)
			e.drainWait = false
			continue
		}
		if untilIdle {
			if e.stepOnce {
				// Step: what the I/O has ready runs in the next step; what
				// its dispatch did at once (a reader served in place, whose
				// replies wait for a flush) ends with a batch boundary, as
				// it does when the loop runs, since no queued work would
				// bring the driver back to this loop for it.
				e.ioPoll()
				e.flush()
				return nil
			}
			if e.hasInbox.Load() {
				continue
			}
			if e.ioPoll() && e.q.Len() > 0 {
				continue // I/O was ready
			}
			e.idleTrim()
			return nil
		}
		if !yielded {
			yielded = true
			e.yield()
			continue
		}
		yielded = false
		e.idleTrim()
		e.sleep(ctxDone)
	}
}

// yield gives the loop's P up once (runtime.Gosched) before the loop goes
// to sleep, and the loop then looks for work again. The goroutines that the
// last batch woke (callers of future.Do and Await) sit on this P, behind
// the loop; yielding lets them run at once, and the work they submit next
// finds the loop runnable rather than asleep, so it needs no wake-up (a
// channel send, a futex wake). On 64 handler goroutines over 2 cores this
// made BenchmarkService about 15% faster; yielding twice or more gained
// nothing over once (docs/benchmarks.md). The time the loop spends
// yielded counts as idle in its health figures. Loop only.
func (e *Loop) yield() {
	e.idleBegin()
	runtime.Gosched()
	e.idleEnd()
}

// leave gives the loop up. If a Shutdown began while RunUntilIdle ran (and
// so waits for someone to finish the loop), the goroutine leaving finishes
// it. abrupt says that run did not return: a panic is propagating (from
// Drive's fn), or a task body called runtime.Goexit, which the coroutine
// switch passes on to the loop goroutine, or a callback did (goexitItem);
// then the goroutine is gone, and a loop that was running for good (Run,
// Start) is handed on to a new goroutine, so the executor keeps serving.
func (e *Loop) leave(ctx context.Context, untilIdle, abrupt bool) {
	handOn := false
	if abrupt && e.goexited != nil {
		e.forgetGoexited()
		handOn = !untilIdle
	}
	if abrupt && e.cbGoexited {
		e.cbGoexited = false
		handOn = !untilIdle
	}
	e.publish()
	e.LoopG.Store(0)
	e.running.Store(false)
	switch {
	case handOn && e.running.CompareAndSwap(false, true):
		go e.loop(ctx, false, nil)
	case e.phase.Load() == phaseDraining && !e.stepOnce && e.running.CompareAndSwap(false, true):
		_ = e.loop(context.Background(), false, nil)
	}
}

// runBatch runs up to batchSize queued tasks. A panic in a task is recovered
// here, outside the per-task path, so running a task costs no defer: the
// panicking task is reported (to its PanicCatcher or the panic handler) and
// the batch ends early. A task of a hooked resource (id != 0) runs through
// runHooked when Before or After hooks are registered; runHooked reads
// them per task, so that Before and After of one task come from one
// snapshot and a registration change takes effect from the next task. Its
// hooks' panics come here too and recoverItem sorts them out. A task with
// id 0 (every task, while no hooks are registered) costs one branch.
func (e *Loop) runBatch() {
	var cur item
	finished := false
	defer func() {
		e.left = 0
		if finished {
			return
		}
		if v := recover(); v != nil {
			e.recoverItem(cur, v, debug.Stack())
		} else {
			e.goexitItem(cur) // neither returned nor panicked: runtime.Goexit
		}
		e.Cur, e.curID = nil, 0
	}()
	for e.left = batchSize; e.left > 0; e.left-- {
		if e.stopReq.Load() {
			break // Close from the last task, or from anywhere: drop the rest
		}
		var it item
		var ok bool
		if e.q.OnlyBack() {
			it, ok = e.q.PopBack()
		} else {
			it, ok = e.q.Pop()
		}
		if !ok {
			break
		}
		cur = it
		e.ran++
		e.pulse()
		if e.Cur != it.fr {
			e.Cur = it.fr
		}
		e.curID = it.id
		if it.id != 0 && e.hooks.wrapping.Load() {
			e.runHooked(it.r, it.id)
		} else {
			it.r.Run()
		}
	}
	e.Cur, e.curID = nil, 0
	finished = true
}

// poll calls the flushers (flush.go), takes in submitted work and queues
// the callbacks of due timers at the front of the queue, so a long burst of
// local work delays neither by more than a batch.
func (e *Loop) poll() {
	e.flush()
	if e.q.Len() > 0 {
		e.ioPoll() // a busy loop sees I/O without sleeping (io.go)
	}
	if e.hasInbox.Load() {
		e.takeInbox()
	}
	if e.timers.Len() > 0 {
		e.fireTimers()
	}
	e.busy(e.q.Len())
	e.publish()
}

// takeInbox queues the inbox behind the work already queued, keeping its
// order, and gives the inbox back the blocks consumed since the last take.
// While blocks taken earlier are still being consumed the inbox waits, so
// submitted work keeps its place.
func (e *Loop) takeInbox() {
	if e.q.Batching() {
		return
	}
	used := e.q.TakeUsed()
	e.mu.Lock()
	head, n := e.inbox.take()
	e.inbox.recycle(used, unbounded)
	if e.inbox.nfree > inboxFreeBlocks {
		e.bigInbox = true // the inbox grew for a burst: trim it once idle
	}
	e.hasInbox.Store(false)
	e.mu.Unlock()
	e.busy(n)
	e.q.TakeBlocks(head, n)
}

// sleep blocks until work is submitted, the next timer is due, or ctxDone
// closes. Before it blocks it marks the loop as sleeping under mu, so a
// Submit that comes after the check wakes it.
func (e *Loop) sleep(ctxDone <-chan struct{}) {
	e.mu.Lock()
	if e.hasInbox.Load() || (e.phase.Load() != phaseOpen && !e.drainWait) || e.stopReq.Load() {
		e.mu.Unlock()
		return
	}
	e.sleeping = true
	e.mu.Unlock()
	e.idleBegin()
	d, ok := e.timers.next(e.now())
	if !ok {
		d = -1
	} else if d < 0 {
		d = 0
	}
	inIO := e.ioSleep(d) // a loop that serves sockets waits for them too (io.go)
	switch {
	case inIO:
	case ok:
		// One reusable runtime timer: with Go 1.23's timers (go.mod says
		// 1.24) Reset and Stop leave no stale value in its channel.
		if e.sleepTimer == nil {
			e.sleepTimer = time.NewTimer(d)
		} else {
			e.sleepTimer.Reset(d)
		}
		select {
		case <-e.wake:
		case <-e.sleepTimer.C:
		case <-ctxDone:
		}
		e.sleepTimer.Stop()
	default:
		select {
		case <-e.wake:
		case <-ctxDone:
		}
	}
	e.idleEnd()
	e.mu.Lock()
	e.sleeping = false
	e.mu.Unlock()
	if inIO {
		e.ioDispatch()
	}
}
