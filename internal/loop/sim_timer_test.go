package loop_test

// The loop's timers under the simulation (package sim): random AfterFunc,
// Stop, future.Sleep, Timeout and WithTimeout from callbacks and tasks of
// several executors and shard groups, with stalls and an executor closed
// mid-run, checked against what the loop promises:
//
//   - a timer fires on its loop's clock (Executor.Now, the world's clock)
//     never before its deadline, and at its deadline unless its loop was
//     stalled then (then when the stall ends);
//   - on one loop, timers fire in the order of (deadline, start): ties in
//     the order they were started;
//   - a timer fires exactly once, unless Stop returned true (then never)
//     or its executor closed first (then never); Stop returns false only
//     for a timer that fired or is due;
//   - Sleep, Timeout and WithTimeout complete once, on time, with the
//     outcome their deadlines decide.
//
// Every observation is recorded in the world's trace.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/testkit/simtest"
	"github.com/spindle-rt/spindle/sim"
)

func TestSimTimers(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) { runTimerSim(t, w) })
}

// One seed, one trace: the same seed run twice gives the same trace.
func TestSimTimersReplay(t *testing.T) {
	simtest.Replays(t, runTimerSim)
}

// simNow is ex's clock as a time since the world began.
func simNow(ex *executor.Executor) time.Duration { return ex.Now().Sub(loop.Epoch) }

// stall is one World.Stall of a loop: it was set at set, to last until end.
type stall struct{ set, end time.Duration }

type tloop struct {
	ex      *executor.Executor
	closer  bool // an executor of its own (not a shard), which may be closed
	closed  bool // closed by the test
	stalls  []stall
	started uint64    // AfterFunc timers started on this loop so far
	pending []*ttimer // its timers, less some that fired or were stopped
	seg     uint64    // callbacks of the test run on the loop so far
}

type ttimer struct {
	id       int
	li       int
	start    time.Duration
	deadline time.Duration // start + d, before start for d < 0 (heap order)
	order    uint64        // start order on its loop
	seg      uint64        // the callback of its loop that started it
	h        *executor.Timer
	fired    int
	stopped  bool // Stop returned true
	after    func()
}

type timerSim struct {
	t      *testing.T
	w      *sim.World
	loops  []*tloop
	timers []*ttimer
	budget int
	// Sleep, Timeout and WithTimeout waits: started and completed.
	waits, waited int
}

func runTimerSim(t *testing.T, w *sim.World) {
	rng := w.Rand()
	s := &timerSim{t: t, w: w, budget: 300 + rng.Intn(400)}
	h := w.Host("h")
	fail := executor.WithPanicHandler(func(v any) { t.Errorf("panic: %v", v) })
	for i := range 1 + rng.Intn(3) {
		s.loops = append(s.loops, &tloop{ex: h.Executor(executor.WithName(fmt.Sprint("ex", i)), fail), closer: true})
	}
	for gi := range 1 + rng.Intn(2) {
		g := h.Group(1+rng.Intn(3), executor.WithName(fmt.Sprint("g", gi)), fail)
		for i := range g.Len() {
			s.loops = append(s.loops, &tloop{ex: g.Shard(i)})
		}
	}
	for li, l := range s.loops {
		for range 1 + rng.Intn(3) {
			if err := l.ex.Submit(func() { s.ops(li, 3) }); err != nil {
				t.Fatalf("Submit: %v", err)
			}
		}
	}
	closeAt := time.Duration(-1)
	if rng.Intn(3) == 0 {
		closeAt = time.Duration(rng.Intn(30)) * time.Millisecond
	}
	w.RunUntil(func() bool { return closeAt >= 0 && w.Now() >= closeAt }, time.Hour)
	if closeAt >= 0 {
		// Close an executor from the driver, between steps: its pending
		// timers must never fire and its sleeps fail with ErrClosed.
		l := s.loops[rng.Intn(len(s.loops))]
		if l.closer && !l.closed {
			l.closed = true
			w.Record('C', uint64(w.Now()), 0, []byte(l.ex.Name()))
			_ = l.ex.Close()
		}
		w.RunUntil(func() bool { return false }, time.Hour)
	}
	s.final()
}

// now is the time on loop li, checked against the world's.
func (s *timerSim) now(li int) time.Duration {
	n := simNow(s.loops[li].ex)
	if n != s.w.Now() {
		s.t.Errorf("%s: Executor.Now reads %v, the world's clock %v", s.loops[li].ex.Name(), n, s.w.Now())
	}
	return n
}

// stalledAt reports whether a stall of loop li, set before at, ends at
// at: the only reason a due timer of li may run after its deadline.
func (s *timerSim) stallEnds(li int, at time.Duration) bool {
	for _, st := range s.loops[li].stalls {
		if st.end == at && st.set < at {
			return true
		}
	}
	return false
}

// stalledDuring reports whether a stall of loop li overlapped [a, b].
func (s *timerSim) stalledDuring(li int, a, b time.Duration) bool {
	for _, st := range s.loops[li].stalls {
		if st.set <= b && st.end >= a {
			return true
		}
	}
	return false
}

// onTime checks that something started at start and due at deadline on
// loop li (waited for on loop wi) happened at now: never before, and later
// only at the end of a stall of one of them.
func (s *timerSim) onTime(what string, li, wi int, start, deadline, now time.Duration) {
	switch {
	case now < deadline:
		s.t.Errorf("%s ran at %v, %v before its deadline %v", what, now, deadline-now, deadline)
	case now > deadline && !s.stallEnds(li, now) && !s.stallEnds(wi, now):
		s.t.Errorf("%s ran at %v, %v after its deadline %v, with no stall ending then", what, now, now-deadline, deadline)
	}
}

// ops runs up to n random operations on loop li, from its loop.
func (s *timerSim) ops(li, n int) {
	rng := s.w.Rand()
	l := s.loops[li]
	if !l.ex.OnLoop() {
		s.t.Errorf("%s: ops off its loop", l.ex.Name())
		return
	}
	l.seg++
	for range 1 + rng.Intn(n) {
		if s.budget <= 0 || l.closed {
			return
		}
		s.budget--
		switch k := rng.Intn(20); {
		case k < 8:
			s.start(li, s.delay(li), nil)
		case k < 11:
			s.stop()
		case k < 13:
			s.sleep(li)
		case k < 15:
			s.timeout(li)
		case k < 16:
			j := rng.Intn(len(s.loops))
			d := time.Duration(1+rng.Intn(8)) * time.Millisecond
			s.stallLoop(j, d)
		case k < 18:
			// Work for another loop, which starts timers there.
			j := rng.Intn(len(s.loops))
			if err := s.loops[j].ex.Submit(func() { s.ops(j, 2) }); err != nil && !s.loops[j].closed {
				s.t.Errorf("Submit to %s: %v", s.loops[j].ex.Name(), err)
			}
		default:
			// A burst of timers with one deadline: ties.
			d := s.delay(li)
			for range 2 + rng.Intn(4) {
				s.start(li, d, nil)
			}
		}
	}
}

func (s *timerSim) stallLoop(j int, d time.Duration) {
	now := s.w.Now()
	s.loops[j].stalls = append(s.loops[j].stalls, stall{now, now + d})
	s.w.Stall(s.loops[j].ex, d)
}

// delay draws a timer's duration: often one that ties with another timer
// of the loop.
func (s *timerSim) delay(li int) time.Duration {
	rng := s.w.Rand()
	switch k := rng.Intn(10); {
	case k < 1:
		return -time.Duration(rng.Intn(3)) * time.Millisecond // due at once
	case k < 4:
		return time.Duration(rng.Intn(4)) * time.Millisecond
	case k < 7:
		// The deadline of a pending timer of this loop.
		now := s.now(li)
		var pend []time.Duration
		for _, tm := range s.timers {
			if tm.li == li && tm.fired == 0 && !tm.stopped && tm.deadline >= now {
				pend = append(pend, tm.deadline)
			}
		}
		if len(pend) > 0 {
			// The same deadline, or one a nanosecond either side.
			return pend[rng.Intn(len(pend))] - now + time.Duration(rng.Intn(5)/2-1)
		}
		return time.Millisecond
	case k < 9:
		return time.Duration(rng.Intn(40000)) * time.Microsecond
	default:
		return time.Duration(rng.Int63n(int64(40 * time.Millisecond)))
	}
}

// start starts a timer of d on loop li (from its loop); after, if not
// nil, runs when it fires.
func (s *timerSim) start(li int, d time.Duration, after func()) *ttimer {
	l := s.loops[li]
	now := s.now(li)
	l.started++
	tm := &ttimer{id: len(s.timers), li: li, start: now, deadline: now + d, order: l.started, seg: l.seg, after: after}
	s.timers = append(s.timers, tm)
	l.pending = append(l.pending, tm)
	s.w.Record('a', uint64(tm.id), uint64(tm.deadline), nil)
	tm.h = l.ex.AfterFunc(d, func() { s.fire(tm) })
	return tm
}

// fire is the callback of timer tm.
func (s *timerSim) fire(tm *ttimer) {
	l := s.loops[tm.li]
	what := fmt.Sprintf("timer %d of %s (started at %v, order %d)", tm.id, l.ex.Name(), tm.start, tm.order)
	if !l.ex.OnLoop() {
		s.t.Errorf("%s fired off its loop", what)
	}
	l.seg++
	now := s.now(tm.li)
	tm.fired++
	s.w.Record('f', uint64(tm.id), uint64(now), nil)
	if tm.fired > 1 {
		s.t.Errorf("%s fired %d times", what, tm.fired)
		return
	}
	if tm.stopped {
		s.t.Errorf("%s fired after Stop returned true", what)
	}
	if l.closed {
		s.t.Errorf("%s fired after its executor was closed", what)
	}
	s.onTime(what, tm.li, tm.li, tm.start, max(tm.deadline, tm.start), now)
	// Every timer of the loop still pending with an earlier (deadline,
	// start order) that was in the heap when tm was taken from it (started
	// before tm came due, or in the same callback as tm) should have fired
	// first. One started later may still come first: tm may already be
	// queued to run.
	due := max(tm.deadline, tm.start)
	for _, p := range l.pending {
		if p != tm && p.fired == 0 && !p.stopped && (p.start < due || p.seg == tm.seg) &&
			(p.deadline < tm.deadline || p.deadline == tm.deadline && p.order < tm.order) {
			s.t.Errorf("%s (deadline %v) fired before timer %d (deadline %v, order %d)", what, tm.deadline, p.id, p.deadline, p.order)
		}
	}
	l.pending = slices.DeleteFunc(l.pending, func(p *ttimer) bool { return p.fired > 0 || p.stopped })
	if tm.after != nil {
		tm.after()
	}
	// Timers started from inside a timer's callback.
	if s.w.Rand().Intn(3) == 0 {
		s.ops(tm.li, 3)
	}
}

// stop stops a random timer of any loop, from the calling loop.
func (s *timerSim) stop() {
	if len(s.timers) == 0 {
		return
	}
	tm := s.timers[s.w.Rand().Intn(len(s.timers))]
	if tm.after != nil {
		return // the timer of a Timeout check: its outcome is checked
	}
	was := tm.stopped
	ok := tm.h.Stop()
	s.w.Record('S', uint64(tm.id), simtest.Bit(ok), nil)
	what := fmt.Sprintf("Stop of timer %d of %s", tm.id, s.loops[tm.li].ex.Name())
	switch {
	case ok && (was || tm.fired > 0):
		s.t.Errorf("%s returned true, but it had fired (%d) or was stopped (%v)", what, tm.fired, was)
	case ok:
		tm.stopped = true
	case !was && tm.fired == 0 && !s.loops[tm.li].closed && s.now(tm.li) < max(tm.deadline, tm.start):
		s.t.Errorf("%s returned false for a pending timer due at %v (now %v)", what, tm.deadline, s.now(tm.li))
	}
}

// sleep spawns a task on loop li that sleeps on a random loop's executor
// and checks when it resumes.
func (s *timerSim) sleep(li int) {
	rng := s.w.Rand()
	wi := li
	if rng.Intn(3) == 0 {
		wi = rng.Intn(len(s.loops))
	}
	d := time.Duration(rng.Intn(20)) * time.Millisecond
	l, wl := s.loops[li], s.loops[wi]
	future.Spawn(l.ex, func(ctx context.Context) (struct{}, error) {
		l.seg++
		id := s.waits
		s.waits++
		start := s.now(li)
		_, err := future.Sleep(wl.ex, d).Await(ctx)
		l.seg++
		if l.closed || (wl.closed && errors.Is(err, executor.ErrClosed)) {
			s.waited++
			return struct{}{}, nil
		}
		now := s.now(li)
		s.waited++
		s.w.Record('z', uint64(id), uint64(now), nil)
		what := fmt.Sprintf("Sleep(%s, %v) from %s at %v", wl.ex.Name(), d, l.ex.Name(), start)
		if err != nil {
			s.t.Errorf("%s: %v", what, err)
			return struct{}{}, nil
		}
		s.onTime(what, wi, li, start, start+d, now)
		s.ops(li, 2)
		return struct{}{}, nil
	})
}

// timeout checks Timeout or WithTimeout of d on a future that a timer of
// d2 resolves: the earlier of the two decides, at its time.
func (s *timerSim) timeout(li int) {
	rng := s.w.Rand()
	l := s.loops[li]
	d := time.Duration(1+rng.Intn(20)) * time.Millisecond
	d2 := d + time.Duration(rng.Intn(7)-3)*time.Millisecond
	if d2 == d {
		d2 += time.Millisecond
	}
	d2 = max(d2, 0)
	cancelling := rng.Intn(2) == 0
	future.Spawn(l.ex, func(ctx context.Context) (struct{}, error) {
		l.seg++
		id := s.waits
		s.waits++
		start := s.now(li)
		p := future.NewPromise[int](l.ex)
		s.start(li, d2, func() { p.Resolve(id) })
		var f *future.Future[int]
		if cancelling {
			f = future.WithTimeout(p.Future(), d)
		} else {
			f = future.Timeout(p.Future(), d)
		}
		v, err := f.Await(ctx)
		l.seg++
		s.waited++
		if l.closed {
			return struct{}{}, nil
		}
		now := s.now(li)
		s.w.Record('o', uint64(id), uint64(now), []byte(fmt.Sprint(v, err)))
		what := fmt.Sprintf("Timeout(%v, cancelling %v) of a future resolved after %v, from %s at %v", d, cancelling, d2, l.ex.Name(), start)
		if s.stalledDuring(li, start, start+max(d, d2)) {
			// Both may come due in one stall; then either may win.
			if err == nil && v != id || err != nil && !errors.Is(err, future.ErrTimeout) {
				s.t.Errorf("%s: %v, %v", what, v, err)
			}
			return struct{}{}, nil
		}
		switch {
		case d2 < d && (err != nil || v != id):
			s.t.Errorf("%s: %v, %v; want %d", what, v, err, id)
		case d2 < d:
			s.onTime(what, li, li, start, start+d2, now)
		case !errors.Is(err, future.ErrTimeout):
			s.t.Errorf("%s: %v, %v; want ErrTimeout", what, v, err)
		default:
			s.onTime(what, li, li, start, start+d, now)
			if got := p.Future().Ready(); got != cancelling {
				s.t.Errorf("%s: the inner future is ready %v at the timeout", what, got)
			}
		}
		return struct{}{}, nil
	})
}

// final checks, once the world is quiet, that every timer fired exactly
// once unless stopped or closed, and every wait ended.
func (s *timerSim) final() {
	for _, tm := range s.timers {
		l := s.loops[tm.li]
		switch {
		case tm.stopped && tm.fired > 0:
			s.t.Errorf("timer %d of %s: stopped and fired", tm.id, l.ex.Name())
		case !tm.stopped && tm.fired == 0 && !l.closed:
			s.t.Errorf("timer %d of %s (deadline %v): never fired (now %v)", tm.id, l.ex.Name(), tm.deadline, s.w.Now())
		}
	}
	if s.waited != s.waits {
		s.t.Errorf("%d of %d waits (Sleep, Timeout) ended", s.waited, s.waits)
	}
	fired := slices.IndexFunc(s.timers, func(tm *ttimer) bool { return tm.fired > 0 })
	if len(s.timers) > 0 && fired < 0 {
		s.t.Errorf("none of %d timers fired", len(s.timers))
	}
	s.w.Record('F', uint64(len(s.timers)), uint64(s.waits), nil)
}
