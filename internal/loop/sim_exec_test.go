package loop_test

// Executors under the simulation (package sim): random Submit, Post,
// future.Call, panics, futures with many waiters (callbacks and suspended
// tasks), Yield, stalls, and Shutdown or Close of executors mid-run from
// their own loop, another loop or the driver, checked against what the
// executor promises:
//
//   - Submit's callbacks run on the target's loop exactly once, in the
//     order the calls were made (one goroutine, the driver's, makes them
//     all), unless Close dropped them: then what ran is a prefix; after
//     Shutdown or Close began, Submit returns ErrClosed; a Shutdown runs
//     everything accepted before it;
//   - Post's callbacks run in order, exactly once, unless Close dropped
//     them;
//   - future.Call completes exactly once: with fn's value if fn ran, a
//     *PanicError if fn panicked, ErrClosed if it did not run (then its
//     executor was closing);
//   - a panic in a callback goes to the panic handler, once, and the loop
//     goes on;
//   - the waiters of a future (OnComplete, Then, tasks in Await) each run
//     once, on the future's loop (a task on its own), never before the
//     call that registered them returned, and callbacks in the order they
//     were registered;
//   - every spawned task's future completes exactly once.
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
	"github.com/spindle-rt/spindle/internal/testkit/simtest"
	"github.com/spindle-rt/spindle/sim"
)

func TestSimExecutors(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) { runExecSim(t, w) })
}

func TestSimExecutorsReplay(t *testing.T) {
	simtest.Replays(t, runExecSim)
}

const (
	exOpen = iota
	exDraining
	exClosed
)

type xloop struct {
	ex       *executor.Executor
	state    int  // exOpen, exDraining (Shutdown began), exClosed (Close began)
	dropped  bool // Close began: queued work may be dropped
	accepted []int
	ran      []int // Submit seqs in the order their callbacks ran
	posted   []int
	postRan  []int
	panics   []string // values the panic handler got
}

type xcall struct {
	id      int
	to      int
	ran     int
	panics  bool
	refused bool // Submit refused it (ErrClosed at once)
	done    int
	v       int
	err     error
}

type xwaiter struct {
	task   bool // a task in Await (otherwise a callback)
	order  int  // registration order among the callbacks of its future
	regd   bool // the registering call returned
	ran    int
	v      int
	err    error
	loopOK bool
}

type xfut struct {
	id      int
	on      int // the executor the promise is bound to
	p       *future.Promise[int]
	waiters []*xwaiter
	cbRan   []int // registration orders of the callbacks, as they ran
	done    bool
}

type execSim struct {
	t        *testing.T
	w        *sim.World
	loops    []*xloop
	calls    []*xcall
	futs     []*xfut
	budget   int
	seq      int
	planted  []string // panics planted in Submit callbacks that ran
	tasks    int
	tasksEnd int
}

func runExecSim(t *testing.T, w *sim.World) {
	rng := w.Rand()
	s := &execSim{t: t, w: w, budget: 500 + rng.Intn(500)}
	h := w.Host("h")
	for i := range 2 + rng.Intn(3) {
		l := &xloop{}
		l.ex = h.Executor(executor.WithName(fmt.Sprint("ex", i)), executor.WithPanicHandler(func(v any) {
			if !l.ex.OnLoop() {
				t.Errorf("%s: the panic handler ran off the loop", l.ex.Name())
			}
			l.panics = append(l.panics, fmt.Sprint(v))
			w.Record('p', uint64(i), 0, []byte(fmt.Sprint(v)))
		}))
		s.loops = append(s.loops, l)
	}
	for li := range s.loops {
		for range 1 + rng.Intn(3) {
			s.submit(li, func() { s.ops(li, 4) })
		}
	}
	// The driver feeds the loops still open with work, and now and then
	// shuts one down or closes it, between steps.
	for s.budget > 0 {
		at := w.Now() + time.Duration(rng.Intn(10))*time.Millisecond
		w.RunUntil(func() bool { return w.Now() >= at }, time.Hour)
		var open []int
		for li, l := range s.loops {
			if l.state == exOpen {
				open = append(open, li)
			}
		}
		if len(open) == 0 {
			break
		}
		li := open[rng.Intn(len(open))]
		s.submit(li, func() { s.ops(li, 4) })
		if rng.Intn(20) == 0 {
			s.stop(rng.Intn(len(s.loops)), "driver")
		}
	}
	w.RunUntil(func() bool { return false }, time.Hour)
	s.final()
}

// submit submits fn (a step of the workload) to loop to, with a sequence
// number checked for order.
func (s *execSim) submit(to int, fn func()) {
	l := s.loops[to]
	s.seq++
	seq := s.seq
	err := l.ex.Submit(func() {
		if !l.ex.OnLoop() {
			s.t.Errorf("%s: Submit's callback ran off the loop", l.ex.Name())
		}
		l.ran = append(l.ran, seq)
		s.w.Record('u', uint64(to), uint64(seq), nil)
		fn()
	})
	s.w.Record('U', uint64(to), uint64(seq), []byte(fmt.Sprint(err)))
	switch {
	case err == nil && l.state != exOpen:
		s.t.Errorf("Submit to %s accepted after Shutdown or Close began", l.ex.Name())
	case err != nil && l.state == exOpen:
		s.t.Errorf("Submit to open %s: %v", l.ex.Name(), err)
	case err != nil && !errors.Is(err, executor.ErrClosed):
		s.t.Errorf("Submit to %s: %v, want ErrClosed", l.ex.Name(), err)
	case err == nil:
		l.accepted = append(l.accepted, seq)
	}
}

// ops runs up to n random operations on loop li, from its loop.
func (s *execSim) ops(li, n int) {
	rng := s.w.Rand()
	l := s.loops[li]
	for range 1 + rng.Intn(n) {
		if s.budget <= 0 || l.state == exClosed {
			return
		}
		s.budget--
		switch k := rng.Intn(24); {
		case k < 5:
			j := rng.Intn(len(s.loops))
			s.submit(j, func() { s.ops(j, 3) })
		case k < 8:
			s.post(li)
		case k < 11:
			s.call(li)
		case k < 12:
			// A panic with no future to carry it: the handler's.
			j := rng.Intn(len(s.loops))
			v := fmt.Sprintf("planted %d", s.seq+1)
			s.submit(j, func() {
				s.planted = append(s.planted, v)
				panic(v)
			})
		case k < 16:
			s.future(li)
		case k < 19:
			s.task(li)
		case k < 20:
			j := rng.Intn(len(s.loops))
			s.w.Stall(s.loops[j].ex, time.Duration(1+rng.Intn(5))*time.Millisecond)
		case k < 21:
			if rng.Intn(16) == 0 {
				s.stop(rng.Intn(len(s.loops)), l.ex.Name())
			}
		default:
			l.ex.AfterFunc(time.Duration(rng.Intn(5))*time.Millisecond, func() { s.ops(li, 2) })
		}
	}
}

// post posts a step on li, with a sequence number checked for order.
func (s *execSim) post(li int) {
	l := s.loops[li]
	s.seq++
	seq := s.seq
	l.posted = append(l.posted, seq)
	s.w.Record('P', uint64(li), uint64(seq), nil)
	l.ex.Post(func() {
		l.postRan = append(l.postRan, seq)
		s.w.Record('q', uint64(li), uint64(seq), nil)
	})
}

// stop shuts down or closes loop j, from the loop or the driver named by.
func (s *execSim) stop(j int, by string) {
	l := s.loops[j]
	if l.state == exClosed {
		return
	}
	closing := s.w.Rand().Intn(2) == 0
	s.w.Record('X', uint64(j), simtest.Bit(closing), []byte(by))
	if closing {
		l.state, l.dropped = exClosed, true
		_ = l.ex.Close()
		return
	}
	if l.state == exOpen {
		l.state = exDraining
	}
	if err := l.ex.Shutdown(context.Background()); err != nil {
		s.t.Errorf("Shutdown of %s from %s: %v", l.ex.Name(), by, err)
	}
}

// call makes a future.Call from li to a random loop, checked once it
// completes.
func (s *execSim) call(li int) {
	rng := s.w.Rand()
	c := &xcall{id: len(s.calls), to: rng.Intn(len(s.loops)), panics: rng.Intn(8) == 0}
	s.calls = append(s.calls, c)
	to := s.loops[c.to]
	open := to.state == exOpen
	f := future.Call(to.ex, func() (int, error) {
		c.ran++
		if !to.ex.OnLoop() {
			s.t.Errorf("call %d ran off the loop of %s", c.id, to.ex.Name())
		}
		if c.panics {
			panic(fmt.Sprint("call ", c.id))
		}
		return c.id * 3, nil
	})
	c.refused = !open
	f.OnComplete(func(v int, err error) {
		c.done++
		c.v, c.err = v, err
		s.w.Record('c', uint64(c.id), uint64(v), []byte(fmt.Sprint(err)))
	})
}

// future makes a promise on a random loop with waiters from li (callbacks
// and tasks), completed later by a timer of li or by a step of another
// loop.
func (s *execSim) future(li int) {
	rng := s.w.Rand()
	l := s.loops[li]
	xf := &xfut{id: len(s.futs), on: rng.Intn(len(s.loops))}
	on := s.loops[xf.on]
	xf.p = future.NewPromise[int](on.ex)
	s.futs = append(s.futs, xf)
	order := 0
	for range 1 + rng.Intn(5) {
		if rng.Intn(3) == 0 && on.state == exOpen {
			// A task on the future's loop that awaits it.
			wt := &xwaiter{task: true}
			xf.waiters = append(xf.waiters, wt)
			s.spawn(xf.on, func(ctx context.Context) {
				v, err := xf.p.Future().Await(ctx)
				wt.ran++
				wt.v, wt.err, wt.loopOK = v, err, on.ex.OnLoop()
				s.w.Record('w', uint64(xf.id), uint64(v), []byte(fmt.Sprint(err)))
			})
			continue
		}
		wt := &xwaiter{order: order}
		order++
		xf.waiters = append(xf.waiters, wt)
		cb := func(v int, err error) {
			wt.ran++
			wt.v, wt.err, wt.loopOK = v, err, on.ex.OnLoop() || on.ex.Closed()
			if !wt.regd {
				s.t.Errorf("future %d: a callback ran before the call that registered it returned", xf.id)
			}
			xf.cbRan = append(xf.cbRan, wt.order)
			s.w.Record('b', uint64(xf.id), uint64(wt.order), nil)
		}
		if rng.Intn(2) == 0 {
			xf.p.Future().OnComplete(cb)
		} else {
			future.Transform(xf.p.Future(), func(v int, err error) (int, error) {
				cb(v, err)
				return v, err
			})
		}
		wt.regd = true
	}
	complete := func() {
		if !xf.done {
			xf.done = true
			xf.p.Resolve(xf.id)
		}
	}
	// Completed on its own loop (so that a task awaiting it either resumes
	// or unwinds when that loop stops), by a timer or a step submitted
	// there.
	d := time.Duration(rng.Intn(10)) * time.Millisecond
	switch {
	case li == xf.on && rng.Intn(2) == 0:
		l.ex.AfterFunc(d, complete)
	case rng.Intn(2) == 0:
		s.submit(xf.on, func() { on.ex.AfterFunc(d, complete) })
	default:
		s.submit(xf.on, complete)
	}
}

// spawn starts a tracked task on loop li.
func (s *execSim) spawn(li int, body func(ctx context.Context)) {
	s.tasks++
	id := s.tasks
	f := future.Spawn(s.loops[li].ex, func(ctx context.Context) (int, error) {
		body(ctx)
		return id, nil
	})
	ended := 0
	f.OnComplete(func(v int, err error) {
		ended++
		s.tasksEnd++
		if ended > 1 {
			s.t.Errorf("task %d completed %d times", id, ended)
		}
		if err == nil && v != id {
			s.t.Errorf("task %d completed with %d", id, v)
		}
		s.w.Record('k', uint64(id), uint64(v), []byte(fmt.Sprint(err)))
	})
}

// task spawns a task on li that yields, sleeps, calls other loops and
// awaits them, checking it resumes on its loop.
func (s *execSim) task(li int) {
	rng := s.w.Rand()
	l := s.loops[li]
	steps := 1 + rng.Intn(4)
	s.spawn(li, func(ctx context.Context) {
		for range steps {
			var err error
			switch rng.Intn(3) {
			case 0:
				err = future.Yield(ctx)
			case 1:
				_, err = future.Sleep(l.ex, time.Duration(rng.Intn(3))*time.Millisecond).Await(ctx)
			default:
				j := rng.Intn(len(s.loops))
				want := s.seq
				s.seq++
				var v int
				v, err = future.Call(s.loops[j].ex, func() (int, error) { return want, nil }).Await(ctx)
				if err == nil && v != want {
					s.t.Errorf("a task on %s awaited a call to %s: %d, want %d", l.ex.Name(), s.loops[j].ex.Name(), v, want)
				}
			}
			if err != nil {
				if !errors.Is(err, executor.ErrClosed) && !errors.Is(err, context.Canceled) {
					s.t.Errorf("a task on %s: %v", l.ex.Name(), err)
				}
				return
			}
			if !l.ex.OnLoop() {
				s.t.Errorf("a task of %s resumed off its loop", l.ex.Name())
			}
			s.ops(li, 2)
		}
	})
}

// final checks everything once the world is quiet.
func (s *execSim) final() {
	t := s.t
	for li, l := range s.loops {
		name := l.ex.Name()
		if !l.dropped && !slices.Equal(l.ran, l.accepted) {
			t.Errorf("%s: Submit's callbacks ran %v, want %v (accepted)", name, l.ran, l.accepted)
		}
		if l.dropped && (len(l.ran) > len(l.accepted) || !slices.Equal(l.ran, l.accepted[:len(l.ran)])) {
			t.Errorf("%s (closed): Submit's callbacks ran %v, not a prefix of %v (accepted)", name, l.ran, l.accepted)
		}
		if !l.dropped && !slices.Equal(l.postRan, l.posted) {
			t.Errorf("%s: Post's callbacks ran %v, want %v", name, l.postRan, l.posted)
		}
		if l.dropped && (len(l.postRan) > len(l.posted) || !slices.Equal(l.postRan, l.posted[:len(l.postRan)])) {
			t.Errorf("%s (closed): Post's callbacks ran %v, not a prefix of %v", name, l.postRan, l.posted)
		}
		s.w.Record('L', uint64(li), uint64(len(l.ran)), []byte(fmt.Sprint(len(l.postRan), l.panics)))
	}
	var got []string
	for _, l := range s.loops {
		got = append(got, l.panics...)
	}
	slices.Sort(got)
	want := slices.Clone(s.planted)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the panic handlers got %q, want the planted panics that ran: %q", got, want)
	}
	for _, c := range s.calls {
		to := s.loops[c.to]
		what := fmt.Sprintf("future.Call %d to %s", c.id, to.ex.Name())
		switch {
		case c.done != 1:
			t.Errorf("%s completed %d times", what, c.done)
		case c.ran > 1:
			t.Errorf("%s: fn ran %d times", what, c.ran)
		case c.ran == 1 && c.panics:
			var pe *future.PanicError
			if !errors.As(c.err, &pe) || pe.Value != fmt.Sprint("call ", c.id) {
				t.Errorf("%s panicked: %v, want a *PanicError", what, c.err)
			}
		case c.ran == 1 && (c.err != nil || c.v != c.id*3):
			t.Errorf("%s ran: %d, %v; want %d", what, c.v, c.err, c.id*3)
		case c.ran == 0 && !errors.Is(c.err, executor.ErrClosed):
			t.Errorf("%s did not run: %v, want ErrClosed", what, c.err)
		case c.ran == 0 && !c.refused && !to.dropped:
			t.Errorf("%s was accepted but did not run, and its executor was not closed", what)
		}
	}
	for _, xf := range s.futs {
		on := s.loops[xf.on]
		what := fmt.Sprintf("future %d on %s", xf.id, on.ex.Name())
		for i, wt := range xf.waiters {
			switch {
			case wt.ran > 1:
				t.Errorf("%s: waiter %d ran %d times", what, i, wt.ran)
			case wt.ran == 0 && xf.done && !on.dropped:
				t.Errorf("%s (completed %v): waiter %d (task %v) never ran", what, xf.done, i, wt.task)
			case wt.ran == 1 && !wt.loopOK:
				t.Errorf("%s: waiter %d (task %v) ran off the future's loop", what, i, wt.task)
			case wt.ran == 1 && wt.err == nil && wt.v != xf.id:
				t.Errorf("%s: waiter %d got %d", what, i, wt.v)
			case wt.ran == 1 && wt.err != nil && !errors.Is(wt.err, executor.ErrClosed):
				t.Errorf("%s: waiter %d got %v", what, i, wt.err)
			}
		}
		if !slices.IsSorted(xf.cbRan) {
			t.Errorf("%s: callbacks ran in the order %v, not the order they were registered", what, xf.cbRan)
		}
	}
	if s.tasksEnd != s.tasks {
		t.Errorf("%d of %d tasks completed", s.tasksEnd, s.tasks)
	}
	s.w.Record('F', uint64(len(s.calls)), uint64(s.tasks), nil)
}
