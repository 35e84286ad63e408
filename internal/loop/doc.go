// Package loop is the machinery of spindle's event loop: the task queue and
// the inbox, timers, fibers (task bodies that suspend by coroutine switch),
// task waits, hook dispatch, loop-local values, panic recovery, and the
// loop's health (the stall watchdog, busy and idle time, the delay probe).
//
// executor.Executor is a defined type over [Loop] (type Executor loop.Loop)
// that shows users only what they call; packages future, channel and merge
// convert with (*loop.Loop)(ex), which costs nothing, and use the rest:
// [Runnable] and [Loop.PostRunnable], [Loop.Schedule] and
// [Loop.SubmitRunnable] queue continuation objects without allocating;
// [Fiber] runs a spawned task; [TaskWaiter] lets a task wait in place in a
// primitive's own queue; [Loop.NewResource] and [Loop.ResolveHook] report to
// the hooks.
//
// Every file states the invariants of the state it keeps at its top: who
// may touch each field (loop-owned state is read and written only by the
// goroutine that holds the loop, see frame.Holder) and how each state
// machine moves.
//
// # Files
//
//	loop.go        the Loop's state and who may touch it; New, Post, Submit, Schedule, Stats
//	run.go         running the loop: Run, Start, RunUntilIdle, Drive, batches, sleep
//	queue.go       the task queue: due timers, taken inbox blocks, the ring of posts
//	inbox.go       work submitted by goroutines that do not hold the loop
//	blocks.go      block lists, the FIFOs behind the inbox and the hook mailbox
//	timer.go       timers: the min-heap and AfterFunc
//	close.go       Shutdown's drain and Close's drop, and what each releases
//	closewatch.go  close watches and the hold table: what is pending hears that the loop closes
//	fiber.go       fibers: task bodies that suspend by coroutine switch
//	taskwait.go    TaskWaiter: a task waits in place in a primitive's queue
//	hooks.go       hook dispatch: the snapshot, resources, the off-loop mailbox
//	panic.go       panic recovery and the panic handler
//	health.go      health: sessions, busy and idle time, the figures Stats reads
//	watchdog.go    the watchdog goroutine: stall detection and the delay probe
//	flush.go       flushers: callbacks at the batch boundary (package shard, netio, the hold table)
//	io.go          the I/O seam: a loop that serves sockets sleeps in their poller (netio)
//	locals.go      loop-local values (the slabs of package future)
//	alloc.go       Allocation: how packages built on the loop allocate futures
package loop
