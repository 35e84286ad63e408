package executor

import (
	"time"

	"github.com/spindle-rt/spindle/internal/loop"
)

// Timer is a callback scheduled by AfterFunc. Stop cancels it. The zero
// value is not a timer: its Stop panics.
type Timer loop.Timer

// AfterFunc schedules fn to run on the loop once d has elapsed (in the next
// pass of the loop when d <= 0), under the async-local frame that is current
// when AfterFunc is called. Timers are kept by the loop (a heap, no goroutine
// or runtime timer per timer) and fire in deadline order. It may be called
// only from code that holds the loop; elsewhere it panics (wrap the call in
// Submit, or use future.Sleep). Once the executor has closed, the timer never
// fires.
func (e *Executor) AfterFunc(d time.Duration, fn func()) *Timer {
	return (*Timer)(e.lp().AfterFunc(d, fn))
}

// Now returns the time on the loop's clock, the one its timers run on.
// On a loop of the program's own it is time.Now() (with its monotonic
// reading, so the difference of two readings is the time elapsed); on a
// loop that package sim steps it is the simulation's fake time, which
// starts at midnight UTC on 1 January 2000 (as testing/synctest's clock
// does) and moves only as the simulation moves it. Code that measures
// timeouts or expiry with Now rather than time.Now runs on fake time
// under the simulation. Any goroutine.
func (e *Executor) Now() time.Time { return e.lp().Time() }

// Stop cancels the timer. It returns true if that stopped the callback from
// running, false if the callback already ran, is running, or the timer was
// stopped before. Stop may be called from any goroutine.
func (t *Timer) Stop() bool { return (*loop.Timer)(t).Stop() }
