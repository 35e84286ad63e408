package future_test

// Futures under the simulation (package sim): All, AllSettled, Any and
// Race of inputs that succeed or fail at distinct times on fake time
// (Sleep, Then, Transform), Then chains, and tasks of another executor
// awaiting them, checked against what package future promises:
//
//   - a combinator completes once, at the time its inputs decide (All at
//     the last input or the first failure, AllSettled at the last, Race at
//     the first, Any at the first success or the last failure), with the
//     outcome they decide, in input order;
//   - the inputs that lost a Race or Any, or were left when All failed,
//     are cancelled (they complete with context.Canceled, not their
//     value);
//   - a Then chain runs each link once, on its loop, in order, and ends at
//     the time of its first future;
//   - a task awaiting any of them resumes at that time, on its own loop,
//     with the same outcome.
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

func TestSimCombinators(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) { runFutureSim(t, w) })
}

// One seed, one trace: the same seed run twice gives the same trace.
func TestSimCombinatorsReplay(t *testing.T) {
	simtest.Replays(t, runFutureSim)
}

// errInput is the error of input i.
type errInput struct{ i int }

func (e *errInput) Error() string { return fmt.Sprintf("input %d failed", e.i) }

// input is one input of a combinator: it succeeds (with its index) or
// fails at d.
type input struct {
	d     time.Duration
	fails bool
	f     *future.Future[int]
}

type futSim struct {
	t     *testing.T
	w     *sim.World
	exs   []*executor.Executor
	cases int
	done  int
	lost  []*future.Future[int] // inputs that must end cancelled
}

func runFutureSim(t *testing.T, w *sim.World) {
	rng := w.Rand()
	h := w.Host("h")
	fail := executor.WithPanicHandler(func(v any) { t.Errorf("panic: %v", v) })
	s := &futSim{t: t, w: w}
	for i := range 2 + rng.Intn(2) {
		s.exs = append(s.exs, h.Executor(executor.WithName(fmt.Sprint("ex", i)), fail))
	}
	for range 20 + rng.Intn(20) {
		ex := s.exs[rng.Intn(len(s.exs))]
		kind := rng.Intn(6)
		if err := ex.Submit(func() { s.start(ex, kind) }); err != nil {
			t.Fatal(err)
		}
		at := w.Now() + time.Duration(rng.Intn(10))*time.Millisecond
		w.RunUntil(func() bool { return w.Now() >= at }, time.Hour)
	}
	w.RunUntil(func() bool { return false }, time.Hour)
	if s.done != s.cases {
		t.Errorf("%d of %d cases completed", s.done, s.cases)
	}
	for _, f := range s.lost {
		if r, ok := f.Peek(); !ok || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("a losing input ended with %v (ready %v), want context.Canceled", r, ok)
		}
	}
	w.Record('F', uint64(s.cases), uint64(len(s.lost)), nil)
}

func (s *futSim) now() time.Duration { return s.w.Now() }

// inputs makes k inputs on ex that complete at distinct times.
func (s *futSim) inputs(ex *executor.Executor, k int) []*input {
	rng := s.w.Rand()
	ds := rng.Perm(3 * k)[:k]
	in := make([]*input, k)
	for i := range in {
		in[i] = &input{d: time.Duration(1+ds[i]) * time.Millisecond, fails: rng.Intn(3) == 0}
		f := future.Sleep(ex, in[i].d)
		if in[i].fails {
			in[i].f = future.Transform(f, func(struct{}, error) (int, error) { return 0, &errInput{i} })
		} else {
			in[i].f = future.Then(f, func(struct{}) (int, error) { return i, nil })
		}
	}
	return in
}

// expect checks that what completed at got was due at want.
func (s *futSim) expect(what string, want, got time.Duration, wantOut, gotOut string) {
	s.done++
	s.w.Record('o', uint64(s.done), uint64(got), []byte(gotOut))
	if got != want || gotOut != wantOut {
		s.t.Errorf("%s: %s at %v, want %s at %v", what, gotOut, got, wantOut, want)
	}
}

// outcome is what a case's future (which never fails itself) completed
// with.
func outcome(got string, err error) string {
	if err != nil {
		return fmt.Sprint("failed: ", err)
	}
	return got
}

// start runs one case on ex's loop.
func (s *futSim) start(ex *executor.Executor, kind int) {
	rng := s.w.Rand()
	t0 := s.now()
	s.cases++
	if kind == 5 {
		s.chain(ex, t0)
		return
	}
	in := s.inputs(ex, 1+rng.Intn(5))
	fs := make([]*future.Future[int], len(in))
	for i, x := range in {
		fs[i] = x.f
	}
	byTime := slices.Clone(in)
	slices.SortFunc(byTime, func(a, b *input) int { return int(a.d - b.d) })
	last := byTime[len(byTime)-1].d
	var firstFail, firstOK *input
	for _, x := range byTime {
		if x.fails && firstFail == nil {
			firstFail = x
		}
		if !x.fails && firstOK == nil {
			firstOK = x
		}
	}
	// The inputs that come after the deciding one are cancelled.
	lose := func(at time.Duration) {
		for _, x := range in {
			if x.d > at {
				s.lost = append(s.lost, x.f)
			}
		}
	}
	var f *future.Future[string]
	var want string
	var at time.Duration
	var what string
	switch kind {
	case 0:
		what = "All"
		f = future.Transform(future.All(fs...), func(vs []int, err error) (string, error) { return fmt.Sprint(vs, err), nil })
		if firstFail != nil {
			at, want = firstFail.d, fmt.Sprint([]int(nil), &errInput{slices.Index(in, firstFail)})
			lose(at)
		} else {
			vs := make([]int, len(in))
			for i := range vs {
				vs[i] = i
			}
			at, want = last, fmt.Sprint(vs, nil)
		}
	case 1:
		what = "AllSettled"
		f = future.Then(future.AllSettled(fs...), func(rs []future.Result[int]) (string, error) { return fmt.Sprint(rs), nil })
		rs := make([]future.Result[int], len(in))
		for i, x := range in {
			if x.fails {
				rs[i].Err = &errInput{i}
			} else {
				rs[i].Value = i
			}
		}
		at, want = last, fmt.Sprint(rs)
	case 2:
		what = "Race"
		f = future.Transform(future.Race(fs...), func(v int, err error) (string, error) { return fmt.Sprint(v, err), nil })
		first := byTime[0]
		at = first.d
		if first.fails {
			want = fmt.Sprint(0, &errInput{slices.Index(in, first)})
		} else {
			want = fmt.Sprint(slices.Index(in, first), nil)
		}
		lose(at)
	default:
		what = "Any"
		f = future.Transform(future.Any(fs...), func(v int, err error) (string, error) { return fmt.Sprint(v, err), nil })
		if firstOK != nil {
			at, want = firstOK.d, fmt.Sprint(slices.Index(in, firstOK), nil)
			lose(at)
		} else {
			var errs []error
			for i := range in {
				errs = append(errs, &errInput{i})
			}
			at, want = last, fmt.Sprint(0, errors.Join(errs...))
		}
	}
	what = fmt.Sprintf("%s of %d inputs on %s at %v", what, len(in), ex.Name(), t0)
	f.OnComplete(func(got string, err error) {
		if !ex.OnLoop() {
			s.t.Errorf("%s: completed off its loop", what)
		}
		s.expect(what, t0+at, s.now(), want, outcome(got, err))
	})
	// A task of another executor awaits it too.
	other := s.exs[rng.Intn(len(s.exs))]
	s.cases++
	future.Spawn(other, func(ctx context.Context) (struct{}, error) {
		got, err := f.Await(ctx)
		if !other.OnLoop() {
			s.t.Errorf("%s: a task of %s resumed off its loop", what, other.Name())
		}
		s.expect(what+", awaited from "+other.Name(), t0+at, s.now(), want, outcome(got, err))
		return struct{}{}, nil
	})
}

// chain checks a Then chain from a Sleep.
func (s *futSim) chain(ex *executor.Executor, t0 time.Duration) {
	rng := s.w.Rand()
	d := time.Duration(rng.Intn(10)) * time.Millisecond
	n := 1 + rng.Intn(8)
	var ran []int
	f := future.Then(future.Sleep(ex, d), func(struct{}) (int, error) { return 0, nil })
	for i := range n {
		registered := false
		f = future.Then(f, func(v int) (int, error) {
			if !registered {
				s.t.Errorf("link %d ran before Then returned", i)
			}
			if !ex.OnLoop() {
				s.t.Errorf("link %d ran off its loop", i)
			}
			ran = append(ran, i)
			return v + 1, nil
		})
		registered = true
	}
	what := fmt.Sprintf("a chain of %d on %s at %v", n, ex.Name(), t0)
	f.OnComplete(func(v int, err error) {
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(ran, want) {
			s.t.Errorf("%s: links ran %v", what, ran)
		}
		s.expect(what, t0+d, s.now(), fmt.Sprint(n, nil), fmt.Sprint(v, err))
	})
}
