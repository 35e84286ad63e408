package future_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// inputs makes n pending promises on ex, each counting its OnCancel runs.
func inputs(ex *executor.Executor, n int) ([]*future.Promise[int], []*future.Future[int], []int) {
	ps := make([]*future.Promise[int], n)
	fs := make([]*future.Future[int], n)
	cancels := make([]int, n)
	for i := range ps {
		ps[i] = future.NewPromise[int](ex)
		ps[i].OnCancel(func() { cancels[i]++ })
		fs[i] = ps[i].Future()
	}
	return ps, fs, cancels
}

// checkCancelled checks that the inputs listed in want were cancelled (Ready
// with context.Canceled, OnCancel run once) and the others were not.
func checkCancelled(t *testing.T, fs []*future.Future[int], cancels []int, want ...int) {
	t.Helper()
	for i, f := range fs {
		if slices.Contains(want, i) {
			if _, err := result(t, f); !errors.Is(err, context.Canceled) {
				t.Errorf("input %d = %v, want context.Canceled", i, err)
			}
			if cancels[i] != 1 {
				t.Errorf("input %d: OnCancel ran %d times, want 1", i, cancels[i])
			}
		} else if cancels[i] != 0 {
			t.Errorf("input %d: OnCancel ran %d times, want 0", i, cancels[i])
		}
	}
}

func TestAllInInputOrder(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ps, fs, cancels := inputs(ex, 5)
	all := future.All(fs...)
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].Resolve(i * 10)
		ex.RunUntilIdle()
		if all.Ready() != (i == 0) {
			t.Fatalf("All ready=%v after %d of 5 inputs", all.Ready(), 5-i)
		}
	}
	vs, err := result(t, all)
	if err != nil || !slices.Equal(vs, []int{0, 10, 20, 30, 40}) {
		t.Fatalf("All = (%v, %v)", vs, err)
	}
	checkCancelled(t, fs, cancels)
}

// All fails with the first error and cancels the inputs still pending.
func TestAllFailFast(t *testing.T) {
	for failing := range 3 {
		t.Run(fmt.Sprintf("input%d", failing), func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			ps, fs, cancels := inputs(ex, 4)
			ps[3].Resolve(3) // one input done before the failure
			all := future.All(fs...)
			ex.RunUntilIdle()
			ps[failing].Reject(fmt.Errorf("input %d: %w", failing, errA))
			ex.RunUntilIdle()
			// A later error does not replace the first.
			for i := range 3 {
				if i != failing && ps[i].Reject(errB) {
					t.Fatalf("input %d was not cancelled", i)
				}
			}
			ex.RunUntilIdle()
			_, err := result(t, all)
			if !errors.Is(err, errA) || errors.Is(err, errB) {
				t.Fatalf("All = %v, want the first error", err)
			}
			var rest []int
			for i := range 3 {
				if i != failing {
					rest = append(rest, i)
				}
			}
			checkCancelled(t, fs, cancels, rest...)
		})
	}
}

func TestAllSettled(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ps, fs, cancels := inputs(ex, 4)
	set := future.AllSettled(fs...)
	ps[2].Reject(errC)
	ps[0].Resolve(1)
	ex.RunUntilIdle()
	if set.Ready() {
		t.Fatal("AllSettled ready before every input completed")
	}
	ps[1].Reject(errA)
	fs[3].Cancel()
	ex.RunUntilIdle()
	rs, err := result(t, set)
	if err != nil {
		t.Fatalf("AllSettled failed: %v", err)
	}
	want := []struct {
		v   int
		err error
	}{{1, nil}, {0, errA}, {0, errC}, {0, context.Canceled}}
	if len(rs) != len(want) {
		t.Fatalf("%d results, want %d", len(rs), len(want))
	}
	for i, w := range want {
		if rs[i].Value != w.v || !errors.Is(rs[i].Err, w.err) || (w.err == nil) != (rs[i].Err == nil) {
			t.Fatalf("result %d = %+v, want {%v %v}", i, rs[i], w.v, w.err)
		}
	}
	checkCancelled(t, fs, cancels, 3) // the one cancelled by the test only
}

// Race completes like the first input to complete, value or error, and
// cancels the rest.
func TestRace(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			ps, fs, cancels := inputs(ex, 4)
			race := future.Race(fs...)
			ex.RunUntilIdle()
			if race.Ready() {
				t.Fatal("Race ready with no input complete")
			}
			var err2 error
			if fail {
				err2 = errA
			}
			ps[2].Complete(22, err2)
			ps[1].Resolve(11) // later in the same turn: loses
			ex.RunUntilIdle()
			v, err := result(t, race)
			if fail && (!errors.Is(err, errA)) || !fail && (v != 22 || err != nil) {
				t.Fatalf("Race = (%v, %v)", v, err)
			}
			checkCancelled(t, fs, cancels, 0, 3)
		})
	}
}

// Any resolves with the first success, ignoring earlier failures, and
// cancels the rest; if all fail it fails with all their errors.
func TestAny(t *testing.T) {
	t.Run("first_success", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		ps, fs, cancels := inputs(ex, 4)
		anyf := future.Any(fs...)
		ps[0].Reject(errA)
		ps[3].Reject(errB)
		ex.RunUntilIdle()
		if anyf.Ready() {
			t.Fatal("Any ready after failures only")
		}
		ps[2].Resolve(2)
		ex.RunUntilIdle()
		if v, err := result(t, anyf); v != 2 || err != nil {
			t.Fatalf("Any = (%v, %v), want (2, nil)", v, err)
		}
		if ps[1].Resolve(1) {
			t.Fatal("the input still pending was not cancelled")
		}
		checkCancelled(t, fs, cancels, 1)
	})

	t.Run("all_fail", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		ps, fs, cancels := inputs(ex, 3)
		anyf := future.Any(fs...)
		ps[1].Reject(errB)
		ps[2].Reject(errC)
		ps[0].Reject(errA)
		ex.RunUntilIdle()
		_, err := result(t, anyf)
		for _, e := range []error{errA, errB, errC} {
			if !errors.Is(err, e) {
				t.Fatalf("Any error %v does not contain %v", err, e)
			}
		}
		if want := "error A\nerror B\nerror C"; err.Error() != want {
			t.Fatalf("Any error %q, want the errors in input order %q", err.Error(), want)
		}
		checkCancelled(t, fs, cancels)
	})
}

// Combinators of futures that are already complete are complete when they
// are returned.
func TestCombinatorsOfCompletedFutures(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ok := []*future.Future[int]{future.Resolved(ex, 1), future.Resolved(ex, 2)}
	mixed := []*future.Future[int]{future.Failed[int](ex, errA), future.Resolved(ex, 2), future.Failed[int](ex, errB)}
	bad := []*future.Future[int]{future.Failed[int](ex, errA), future.Failed[int](ex, errB)}

	if vs, err := result(t, future.All(ok...)); err != nil || !slices.Equal(vs, []int{1, 2}) {
		t.Fatalf("All = (%v, %v)", vs, err)
	}
	if _, err := result(t, future.All(mixed...)); !errors.Is(err, errA) {
		t.Fatalf("All of failed = %v", err)
	}
	rs, err := result(t, future.AllSettled(mixed...))
	if err != nil || len(rs) != 3 || rs[0].Err != errA || rs[1].Value != 2 || rs[2].Err != errB {
		t.Fatalf("AllSettled = (%+v, %v)", rs, err)
	}
	if v, err := result(t, future.Race(ok...)); v != 1 || err != nil {
		t.Fatalf("Race = (%v, %v)", v, err)
	}
	if v, err := result(t, future.Any(mixed...)); v != 2 || err != nil {
		t.Fatalf("Any = (%v, %v)", v, err)
	}
	if _, err := result(t, future.Any(bad...)); !errors.Is(err, errA) || !errors.Is(err, errB) {
		t.Fatalf("Any of failures = %v", err)
	}

	// One input done among pending ones decides Race at once and cancels the
	// others.
	_, pend, cancels := inputs(ex, 2)
	race := future.Race(pend[0], future.Resolved(ex, 5), pend[1])
	if v, err := result(t, race); v != 5 || err != nil {
		t.Fatalf("Race with a ready input = (%v, %v)", v, err)
	}
	ex.RunUntilIdle()
	checkCancelled(t, pend, cancels, 0, 1)
}

// Cancelling a combinator's future cancels its pending inputs.
func TestCancelCombinatorCancelsInputs(t *testing.T) {
	type canceller interface{ Cancel() bool }
	kinds := []struct {
		name string
		mid  func(ex *executor.Executor) *future.Future[int] // a completed input that does not decide
		mk   func(fs []*future.Future[int]) canceller
	}{
		{"All", func(ex *executor.Executor) *future.Future[int] { return future.Resolved(ex, 1) },
			func(fs []*future.Future[int]) canceller { return future.All(fs...) }},
		{"AllSettled", func(ex *executor.Executor) *future.Future[int] { return future.Failed[int](ex, errA) },
			func(fs []*future.Future[int]) canceller { return future.AllSettled(fs...) }},
		{"Race", nil, func(fs []*future.Future[int]) canceller { return future.Race(fs...) }},
		{"Any", func(ex *executor.Executor) *future.Future[int] { return future.Failed[int](ex, errA) },
			func(fs []*future.Future[int]) canceller { return future.Any(fs...) }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			_, fs, cancels := inputs(ex, 3)
			in := slices.Clone(fs)
			if k.mid != nil {
				in[1] = k.mid(ex)
			}
			out := k.mk(in)
			ex.RunUntilIdle()
			if !out.Cancel() {
				t.Fatal("Cancel of the pending combinator returned false")
			}
			ex.RunUntilIdle()
			if k.mid != nil {
				checkCancelled(t, fs, cancels, 0, 2)
			} else {
				checkCancelled(t, fs, cancels, 0, 1, 2)
			}
		})
	}
}

// Race cancels a losing spawned task: it resumes with context.Canceled.
func TestRaceCancelsLosingTask(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Start()
	p := future.NewPromise[int](ex)
	loserErr := make(chan error, 1)
	loser := future.Spawn(ex, func(ctx context.Context) (int, error) {
		_, err := p.Future().Await(ctx)
		loserErr <- err
		return 0, err
	})
	// The loser has started and is suspended.
	if _, err := spindletest.Await(t, future.Call(ex, func() (int, error) { return 0, nil })); err != nil {
		t.Fatal(err)
	}
	winner := future.Spawn(ex, func(ctx context.Context) (int, error) { return 7, nil })
	if v, err := spindletest.Await(t, future.Race(loser, winner)); v != 7 || err != nil {
		t.Fatalf("Race = (%v, %v)", v, err)
	}
	select {
	case err := <-loserErr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("losing task resumed with %v, want context.Canceled", err)
		}
	case <-time.After(spindletest.Safety):
		t.Fatal("losing task was not resumed")
	}
	if _, err := spindletest.Await(t, loser); !errors.Is(err, context.Canceled) {
		t.Fatalf("losing task = %v", err)
	}
}

// All of many tasks spawned from a foreign goroutine, awaited off the loop.
func TestAllOfTasks(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Start()
	fs := make([]*future.Future[int], 100)
	for i := range fs {
		fs[i] = future.Spawn(ex, func(ctx context.Context) (int, error) {
			if err := future.Yield(ctx); err != nil {
				return 0, err
			}
			return i * i, nil
		})
	}
	vs, err := spindletest.Await(t, future.All(fs...))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if v != i*i {
			t.Fatalf("All[%d] = %d", i, v)
		}
	}
}

func TestCombinatorBadInput(t *testing.T) {
	ex1 := executor.New()
	defer ex1.Close()
	ex2 := executor.New()
	defer ex2.Close()
	a, b := future.Resolved(ex1, 1), future.Resolved(ex2, 2)
	type call func(fs ...*future.Future[int])
	kinds := map[string]call{
		"All":        func(fs ...*future.Future[int]) { future.All(fs...) },
		"AllSettled": func(fs ...*future.Future[int]) { future.AllSettled(fs...) },
		"Race":       func(fs ...*future.Future[int]) { future.Race(fs...) },
		"Any":        func(fs ...*future.Future[int]) { future.Any(fs...) },
	}
	for name, k := range kinds {
		t.Run(name+"/nil", func(t *testing.T) { spindletest.MustPanic(t, "", "nil", func() { k(a, nil) }) })
		t.Run(name+"/mixed", func(t *testing.T) { spindletest.MustPanic(t, "", "different executors", func() { k(a, b) }) })
	}
}

// noInput is what a combinator of no futures gave: its outcome, its
// executor, and two things to do with it.
type noInput struct {
	ready  bool
	res    any
	err    error
	ex     *executor.Executor
	cancel func() bool
	then   func() // registers a continuation on it
}

func madeOfNone[T any](f *future.Future[T], then func()) noInput {
	v, err := f.Await(context.Background())
	return noInput{f.Ready(), v, err, f.Executor(), f.Cancel, then}
}

// TestCombinatorsOfNoFutures checks what the combinators make of no
// input, as JavaScript's Promise.all([]), allSettled([]) and any([]) do,
// and Race like Any rather than a future pending for ever: complete at
// once, never a panic, bound to the loop the caller holds, or to none.
func TestCombinatorsOfNoFutures(t *testing.T) {
	kinds := []struct {
		name string
		make func() noInput
	}{
		{"All", func() noInput {
			f := future.All[int]()
			return madeOfNone(f, func() { future.Then(f, func([]int) (int, error) { return 0, nil }) })
		}},
		{"AllSettled", func() noInput {
			f := future.AllSettled[int]()
			return madeOfNone(f, func() { f.OnComplete(func([]future.Result[int], error) {}) })
		}},
		{"Race", func() noInput {
			f := future.Race[int]()
			return madeOfNone(f, func() { future.Transform(f, func(int, error) (int, error) { return 0, nil }) })
		}},
		{"Any", func() noInput {
			f := future.Any[int]()
			return madeOfNone(f, func() { future.Timeout(f, time.Second) })
		}},
	}
	check := func(t *testing.T, name string, got noInput) {
		t.Helper()
		if !got.ready {
			t.Fatalf("%s() is pending, want complete at once", name)
		}
		switch name {
		case "All":
			if v := got.res.([]int); v == nil || len(v) != 0 || got.err != nil {
				t.Errorf("All() = %#v, %v; want []int{}, nil", v, got.err)
			}
		case "AllSettled":
			if v := got.res.([]future.Result[int]); v == nil || len(v) != 0 || got.err != nil {
				t.Errorf("AllSettled() = %#v, %v; want []Result{}, nil", v, got.err)
			}
		default:
			if got.res.(int) != 0 || !errors.Is(got.err, future.ErrNoFutures) {
				t.Errorf("%s() = %v, %v; want 0, ErrNoFutures", name, got.res, got.err)
			}
		}
		if got.cancel() {
			t.Errorf("Cancel() = true on a complete future")
		}
	}
	for _, k := range kinds {
		t.Run(k.name+"/off_loop", func(t *testing.T) {
			got := k.make()
			check(t, k.name, got)
			if got.ex != nil {
				t.Errorf("Executor() = %v, want nil off any loop", got.ex)
			}
			spindletest.MustPanic(t, "", "bound to no executor", got.then)
		})
		t.Run(k.name+"/on_loop", func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			ran := false
			o := future.Spawn(ex, func(ctx context.Context) (noInput, error) {
				got := k.make()
				got.then() // schedules on ex: no panic
				// A continuation on a combinator of none runs on ex like any other.
				_, err := future.Then(future.All[int](), func([]int) (int, error) { ran = true; return 0, nil }).Await(ctx)
				return got, err
			})
			ex.RunUntilIdle()
			got, err := result(t, o)
			if err != nil {
				t.Fatal(err)
			}
			check(t, k.name, got)
			if got.ex != ex {
				t.Errorf("%s() on the loop is bound to %v, want the loop's executor", k.name, got.ex)
			}
			if !ran {
				t.Errorf("Then on All() made on the loop did not run")
			}
		})
	}
}
