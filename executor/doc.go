// Package executor is spindle's event loop: a single-threaded reactor that
// runs a FIFO queue of continuations on one goroutine.
//
// # The loop
//
// One goroutine runs an executor's loop, with Run or Start. Every callback
// bound to the executor (Post and Submit callbacks, timers, the
// continuations of futures, the bodies of spawned tasks) runs on that
// goroutine, one at a time, in the order it was scheduled. State that only
// loop code touches therefore needs no lock.
//
//	ex := executor.New(executor.WithName("api"))
//	ex.Start()
//	defer ex.Close()
//	ex.Submit(func() { fmt.Println("on the loop") })
//
// # Scheduling
//
// [Executor.Post] is the cheapest way to queue work and is for code already
// on the loop; [Executor.Submit] may be called from any goroutine, and the
// calls of one goroutine run in the order they were made. The loop runs
// queued work in batches and, between batches, takes in submitted work and
// fires due timers, so a long burst of local work starves neither.
// [Executor.AfterFunc] starts a timer kept by the loop itself (a heap; no
// goroutine per timer).
//
// [Executor.Now] reads the loop's clock, the one its timers run on:
// time.Now on a loop of the program's own, the simulation's fake time on a
// loop that package sim steps. Loop code that measures timeouts or expiry
// with it runs on fake time under the simulation.
//
// [Executor.OnLoop] tells whether the caller holds the loop. The loop-only
// methods (Post, AfterFunc, and the operations of the channel and merge
// packages) panic when called from a goroutine that does not hold it, with a
// message that names the call to use instead (Submit): a misplaced call is
// never silently lost.
//
// # Lifecycle
//
// The lifecycle mirrors net/http.Server. [Executor.Shutdown] drains: Submit
// returns [ErrClosed] from then on, and the loop runs its queue until it is
// empty (or ctx ends, which turns the shutdown into a Close). [Executor.Close]
// closes at once: queued work is dropped, and a future it would have
// completed fails with ErrClosed. Either way the timers stop, every spawned
// task's ctx is cancelled, suspended tasks resume with ErrClosed and unwind,
// goroutines blocked in Await get ErrClosed, and the call returns once every
// task body has returned. Once closed, everything that needs the loop fails
// at once with ErrClosed. Both are idempotent and may be called from any
// goroutine, the loop included, and no goroutine of the executor outlives
// them. When the ctx given to Run ends, the executor closes as Close does.
//
// [Executor.RunUntilIdle] and [Executor.Drive] drive an executor on the
// calling goroutine until nothing is ready; tests and benchmarks use them to
// step a loop deterministically.
//
// # Health
//
// A task that holds the loop stops every other task of it, so the loop
// reports on itself. While a task (a callback, or one slice of a spawned
// task) holds the loop longer than the stall threshold, a watchdog goroutine
// reports it, once, with the stack of the goroutine holding the loop: by
// default stalls over a second are logged with log/slog, and
// [WithStallHandler] sets the threshold and the handler. [Executor.Stats]
// says how busy the loop is (Busy and Idle time, [Stats.Utilization]) and
// how long scheduled work waits for it ([Delay], sampled by a probe; see
// [WithDelayProbe]). The loop goroutine and the task goroutines carry the
// pprof label [ProfileLabel] with the executor's name, so CPU profiles
// split by loop. docs/health.md explains the figures, how to read a stall
// report and what to do about one.
//
// # Testing loop code with synctest
//
// An executor made and started inside a testing/synctest bubble (Go 1.25
// and later) runs on the bubble's fake clock: its timers, Sleep and Timeout
// fire at their fake times at once, nothing of the loop's own (the stall
// watchdog, the delay probe) wakes a sleeping loop, and a future awaited
// but never completed is reported by synctest as a deadlock instead of
// hanging the test. Make the executor inside the bubble, use it only there,
// and close it before the bubble function returns:
//
//	synctest.Test(t, func(t *testing.T) {
//		ex := executor.New()
//		ex.Start()
//		defer ex.Close()
//		future.Sleep(ex, 24*time.Hour).Await(ctx) // no real time
//	})
//
// docs/testing.md walks through a whole test (executor/synctest_test.go,
// runnable) and the rules.
//
// # Panics
//
// A panic in a callback is recovered by the loop, which keeps running. A
// future's continuation turns it into the future's error; a panic with no
// future to carry it goes to the panic handler ([WithPanicHandler]; by
// default it is logged with log/slog).
package executor
