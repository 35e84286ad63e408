package loop

// Stepping: the hooks a simulation needs to run loops itself.
//
// A simulation (package sim) runs every loop of a program on one
// goroutine, one batch of one loop at a time, in an order its seed
// decides, on a clock of its own. The loop gives it three things: a clock
// for its timers (SetClock), one step (Step: a batch of tasks and the
// batch boundary, then what the I/O has ready), and what it would do next
// (Ready, NextTimer), so the driver knows which loops to step and how far
// to move its clock when none is ready.
//
// Invariants:
//   - clock and sim are set before the loop first runs and never changed,
//     so every reader sees them without a lock; a loop without a clock
//     reads the monotonic clock, at the cost of one branch per timer start
//     and per look at the timers;
//   - Step, Ready and NextTimer run on the driver's goroutine while no
//     other goroutine runs the loop; a stepped loop runs no session (no
//     watchdog, no busy or idle time, no trim timer), so nothing of its own
//     runs on another goroutine;
//   - stepOnce is set only for the length of a Step;
//   - a stepped loop drains in steps: once Shutdown has begun (from one of
//     its tasks) and its queue has run dry, a Step whose drainers still owe
//     work ends with one look at the I/O (stepDrain) where a running loop
//     would sleep, and the loop finishes in the step that finds nothing
//     owed. Run by a Shutdown off the driver, nothing would move the
//     network or the clock the drainers wait for, so the drain ends at
//     once instead.

import (
	"context"
	"time"
)

// Clock is a source of time for a loop's timers.
type Clock interface {
	// Now returns the time in nanoseconds, never less than before.
	Now() int64
}

// now returns the time on the loop's clock, in nanoseconds.
func (e *Loop) now() int64 {
	if e.clock != nil {
		return e.clock.Now()
	}
	return mono()
}

// Now returns the time on the loop's clock, in nanoseconds from an
// arbitrary start: its timers' clock, the simulated one under SetClock.
// Any goroutine.
func (e *Loop) Now() int64 { return e.now() }

// Epoch is the instant a loop's own clock (SetClock) reads zero at: Time
// on such a loop is Epoch plus the clock's reading. It is midnight UTC on
// 1 January 2000, where testing/synctest's fake clock starts too.
var Epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// Time returns the time on the loop's clock: time.Now() on a loop without
// a clock of its own, Epoch plus the clock's reading under SetClock (a
// simulation's fake time). Any goroutine.
func (e *Loop) Time() time.Time {
	if e.clock != nil {
		return Epoch.Add(time.Duration(e.clock.Now()))
	}
	return time.Now()
}

// SetClock makes the loop's timers run on c, and records sim (the
// simulation that steps the loop, for packages that serve it differently,
// as netio does). Call it before the loop first runs and before any timer
// is started; it panics otherwise.
func (e *Loop) SetClock(c Clock, sim any) {
	e.mustMade("SetClock")
	if c == nil {
		panic("executor: SetClock with nil Clock")
	}
	if e.clock != nil || e.running.Load() || e.ran != 0 || e.timers.Len() > 0 {
		panic("executor: SetClock on a loop that has run, has a clock or has timers")
	}
	e.clock, e.sim = c, sim
}

// Sim returns the simulation given to SetClock, or nil. Any goroutine.
func (e *Loop) Sim() any { return e.sim }

// Step runs one batch of the loop on the calling goroutine: the tasks
// queued (at most a batch of them), then the batch boundary (flushers,
// submitted work, due timers); a loop that has nothing queued then polls
// its IO, and what that finds runs in the next step. It reports whether
// the loop has work ready for another step. It panics if another
// goroutine runs the loop.
func (e *Loop) Step() bool {
	e.mustMade("Step")
	if e.phase.Load() == phaseClosed {
		return false
	}
	if !e.running.CompareAndSwap(false, true) {
		panic("executor: Step while the loop is already running")
	}
	e.stepOnce = true
	_ = e.loop(context.Background(), true, nil)
	e.stepOnce = false
	return e.Ready()
}

// stepDrain is a Step's end while the loop drains and its drainers still
// owe work (drain.go): what they wait for (bytes leaving, a peer's end, a
// linger) comes only as the driver moves the network and the clock, so
// the step looks at the I/O once (what it has ready runs in the next
// step, as in an open loop's Step) and returns instead of sleeping; the
// driver steps the loop again when its I/O has events or a timer is due.
// The loop finishes as soon as a look finds nothing owed. Loop only.
func (e *Loop) stepDrain() {
	e.ioPoll()
	e.flush()
	if e.q.Len() == 0 && !e.hasInbox.Load() && !e.drainOwed() {
		e.finish(false)
	}
}

// Ready reports whether the loop has tasks queued or submitted, or due
// timers. Only while no goroutine runs the loop.
func (e *Loop) Ready() bool {
	if e.phase.Load() == phaseClosed {
		return false
	}
	if e.q.Len() > 0 || e.hasInbox.Load() {
		return true
	}
	d, ok := e.timers.next(e.now())
	return ok && d <= 0
}

// NextTimer returns how long until the loop's earliest pending timer is
// due on its clock, and false if it has none. Only while no goroutine runs
// the loop.
func (e *Loop) NextTimer() (time.Duration, bool) {
	if e.phase.Load() == phaseClosed {
		return 0, false
	}
	return e.timers.next(e.now())
}
