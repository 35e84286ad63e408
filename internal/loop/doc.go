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
package loop
