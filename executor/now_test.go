package executor_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// On a loop of the program's own, Now is time.Now: read off the loop and
// on it, it lies between two readings of time.Now taken around it, and a
// timer of d fires once Now has moved by at least d (the timers run on the
// same clock).
func TestNowIsTimeNow(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	between := func(where string, before, now, after time.Time) {
		t.Helper()
		if now.Before(before) || now.After(after) {
			t.Errorf("%s: Now = %v, not between %v and %v", where, now, before, after)
		}
	}
	before := time.Now()
	now := ex.Now()
	between("off the loop", before, now, time.Now())

	type reading struct{ before, now, after time.Time }
	r, err := spindletest.Await(t, future.Call(ex, func() (reading, error) {
		b := time.Now()
		n := ex.Now()
		return reading{b, n, time.Now()}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	between("on the loop", r.before, r.now, r.after)

	const d = 20 * time.Millisecond
	p := future.NewPromise[time.Duration](ex)
	ex.Submit(func() {
		start := ex.Now()
		ex.AfterFunc(d, func() { p.Resolve(ex.Now().Sub(start)) })
	})
	el, err := spindletest.Await(t, p.Future())
	if err != nil {
		t.Fatal(err)
	}
	if el < d {
		t.Errorf("a timer of %v fired after %v of Now", d, el)
	}
}

// fakeClock is a loop clock the test moves by hand.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) Now() int64 { return c.ns.Load() }

// On a loop with a clock of its own (what package sim installs), Now is
// that clock's reading from midnight UTC, 1 January 2000, and moves only
// with it.
func TestNowFollowsTheLoopsClock(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	c := &fakeClock{}
	(*loop.Loop)(ex).SetClock(c, nil)
	epoch := time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Duration{0, time.Nanosecond, 90 * time.Minute, 24 * 365 * time.Hour} {
		c.ns.Store(int64(at))
		if got, want := ex.Now(), epoch.Add(at); !got.Equal(want) {
			t.Errorf("clock at %v: Now = %v, want %v", at, got, want)
		}
	}
	c.ns.Store(0)
	var fired time.Time
	ex.Drive(func() { ex.AfterFunc(time.Hour, func() { fired = ex.Now() }) })
	if !fired.IsZero() {
		t.Fatalf("an hour's timer fired at %v with the clock still", fired)
	}
	c.ns.Store(int64(time.Hour))
	ex.RunUntilIdle()
	if want := epoch.Add(time.Hour); !fired.Equal(want) {
		t.Errorf("an hour's timer fired at Now = %v, want %v", fired, want)
	}
}
