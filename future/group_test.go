package future_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

var errGroup = errors.New("group: failed")

// Beyond the limit, tasks start in the order they were given, and no more
// than the limit run at once, however the running ones finish.
func TestGroupLimitFIFO(t *testing.T) {
	for _, limit := range []int{1, 2, 3} {
		t.Run(fmt.Sprint("limit=", limit), func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			const n = 10
			var started, live []int // live: started and not finished, oldest first
			most := 0
			gates := make([]*future.Promise[struct{}], n)
			g := future.NewGroup(context.Background(), ex)
			g.SetLimit(limit)
			ex.Drive(func() {
				for i := range n {
					gates[i] = future.NewPromise[struct{}](ex)
					g.Go(func(ctx context.Context) error {
						started = append(started, i)
						live = append(live, i)
						most = max(most, len(live))
						_, err := gates[i].Future().Await(ctx)
						live = slices.DeleteFunc(live, func(j int) bool { return j == i })
						return err
					})
				}
			})
			for len(live) > 0 { // let the running tasks finish newest first
				gates[live[len(live)-1]].Resolve(struct{}{})
				ex.RunUntilIdle()
			}
			var err error
			ex.Drive(func() { err = g.Wait(context.Background()) })
			if err != nil {
				t.Fatal(err)
			}
			if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(started, want) {
				t.Errorf("started %v, want %v", started, want)
			}
			if most != limit {
				t.Errorf("at most %d ran at once, want %d", most, limit)
			}
		})
	}
}

// The first error (or panic) is Wait's; it cancels the others' context
// with itself as the cause. A later panic is reported, not lost.
func TestGroupFirstErrorCancelsSiblings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  func() error
		check func(error) bool
	}{
		{"error", func() error { return errGroup }, func(err error) bool { return errors.Is(err, errGroup) }},
		{"panic", func() error { panic("boom") }, func(err error) bool {
			var pe *future.PanicError
			return errors.As(err, &pe) && pe.Value == "boom"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reported := make(chan any, 2)
			ex := executor.New(executor.WithPanicHandler(func(v any) { reported <- v }))
			ex.Start()
			defer ex.Close()
			g := future.NewGroup(context.Background(), ex)
			var siblingErr, siblingCause error
			g.Go(func(ctx context.Context) error {
				err := waitCtx(ex, ctx)
				siblingErr, siblingCause = ctx.Err(), context.Cause(ctx)
				return err
			})
			g.Go(func(ctx context.Context) error {
				_ = waitCtx(ex, ctx) // started before the failure, it panics after it
				panic("second")
			})
			g.Go(func(context.Context) error { return tc.fail() })
			if err := g.Wait(spindletest.Context(t)); !tc.check(err) {
				t.Fatalf("Wait: %v", err)
			}
			if !errors.Is(siblingErr, context.Canceled) || !tc.check(siblingCause) {
				t.Errorf("sibling's ctx: %v, cause %v", siblingErr, siblingCause)
			}
			if v := spindletest.Recv(t, reported); v != "second" {
				t.Errorf("reported panic %v, want second", v)
			}
		})
	}
}

// waitCtx suspends a task until ctx ends and returns ctx.Err().
func waitCtx(ex *executor.Executor, ctx context.Context) error {
	_, err := future.NewPromise[struct{}](ex).Future().Await(ctx)
	return err
}

// When the group's parent context ends, every task's context ends.
func TestGroupParentCancelsTasks(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	g := future.NewGroup(parent, ex)
	started := make(chan struct{}, 3)
	for range 3 {
		g.Go(func(ctx context.Context) error {
			if ctx.Value(key{}) != "v" {
				return errors.New("the parent's value is not visible")
			}
			started <- struct{}{}
			return waitCtx(ex, ctx)
		})
	}
	for range 3 {
		spindletest.Recv(t, started)
	}
	cancel()
	if err := g.Wait(spindletest.Context(t)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after the parent ended: %v", err)
	}
}

// Wait waits as Await does: a task suspends, a goroutine parks, the loop
// outside a task gets ErrDeadlock unless every task has returned; a ctx
// that ends first gives its error.
func TestGroupWait(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	gate := future.NewPromise[struct{}](ex)
	g := future.NewGroup(context.Background(), ex)
	g.Go(func(ctx context.Context) error {
		_, err := gate.Future().Await(ctx)
		return err
	})
	onLoop := func() error {
		v, _ := spindletest.Await(t, future.Call(ex, func() (error, error) { return g.Wait(context.Background()), nil }))
		return v
	}
	if err := onLoop(); !errors.Is(err, future.ErrDeadlock) {
		t.Errorf("Wait on the loop with a task running: %v, want ErrDeadlock", err)
	}
	short, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Wait(short); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with an ended ctx: %v, want context.Canceled", err)
	}
	inTask := future.Spawn(ex, func(ctx context.Context) (int, error) {
		return ex.Stats().Suspended, g.Wait(ctx) // suspends
	})
	parked := make(chan error, 1)
	go func() { parked <- g.Wait(context.Background()) }()
	gate.Resolve(struct{}{})
	if _, err := spindletest.Await(t, inTask); err != nil {
		t.Errorf("Wait in a task: %v", err)
	}
	if err := spindletest.Recv(t, parked); err != nil {
		t.Errorf("Wait on a goroutine: %v", err)
	}
	if err := onLoop(); err != nil {
		t.Errorf("Wait on the loop once all returned: %v", err)
	}
	// Waited on again after more tasks.
	g.Go(func(context.Context) error { return errGroup })
	if err := g.Wait(spindletest.Context(t)); !errors.Is(err, errGroup) {
		t.Errorf("second Wait: %v, want %v", err, errGroup)
	}
}

// Tasks of a group run concurrently: one that suspends does not hold back
// those given after it, with or without a limit above one.
func TestGroupTasksSuspend(t *testing.T) {
	for _, limit := range []int{0, 2} {
		t.Run(fmt.Sprint("limit=", limit), func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			g := future.NewGroup(context.Background(), ex)
			g.SetLimit(limit)
			p := future.NewPromise[int](ex)
			var order []string
			ex.Drive(func() {
				g.Go(func(ctx context.Context) error {
					order = append(order, "a waits")
					v, err := p.Future().Await(ctx)
					order = append(order, fmt.Sprint("a got ", v))
					return err
				})
				g.Go(func(ctx context.Context) error {
					order = append(order, "b yields")
					if err := future.Yield(ctx); err != nil {
						return err
					}
					if _, err := future.Sleep(ex, 0).Await(ctx); err != nil {
						return err
					}
					p.Resolve(1)
					order = append(order, "b resolved")
					return nil
				})
			})
			var err error
			ex.Drive(func() { err = g.Wait(context.Background()) })
			want := []string{"a waits", "b yields", "b resolved", "a got 1"}
			if err != nil || !slices.Equal(order, want) {
				t.Fatalf("order %q, %v; want %q", order, err, want)
			}
		})
	}
}

// Many tasks that never suspend run on few task goroutines, in order, and
// let other work on the loop run in between.
func TestGroupManyShortTasks(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	g := future.NewGroup(context.Background(), ex)
	const n = 1000
	var ran []int
	other := -1
	ex.Drive(func() {
		for i := range n {
			g.Go(func(context.Context) error { ran = append(ran, i); return nil })
		}
		ex.Post(func() { other = len(ran) })
	})
	var err error
	ex.Drive(func() { err = g.Wait(context.Background()) })
	if err != nil || len(ran) != n || !slices.IsSorted(ran) {
		t.Fatalf("ran %d tasks (sorted %v), %v", len(ran), slices.IsSorted(ran), err)
	}
	if other <= 0 || other >= n {
		t.Errorf("a callback posted behind the tasks ran after %d of them, want between", other)
	}
}

// Go may be called from many goroutines at once.
func TestGroupGoFromGoroutines(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	g := future.NewGroup(context.Background(), ex)
	g.SetLimit(3)
	count := 0 // loop-owned
	spindletest.Parallel(8, func(int) {
		for range 100 {
			g.Go(func(ctx context.Context) error {
				count++
				return future.Yield(ctx)
			})
		}
	})
	if err := g.Wait(spindletest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if n, _ := spindletest.Await(t, future.Call(ex, func() (int, error) { return count, nil })); n != 800 {
		t.Fatalf("ran %d tasks, want 800", n)
	}
}

// Each task runs under the async-local frame of its call to Go.
func TestGroupAsyncLocal(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	g := future.NewGroup(context.Background(), ex)
	g.SetLimit(1)
	var got []string
	ex.Drive(func() {
		for _, req := range []string{"a", "b", "c"} {
			goReq.Run(ex, req, func() {
				g.Go(func(ctx context.Context) error {
					v, _ := goReq.Get(ex)
					if err := future.Yield(ctx); err != nil {
						return err
					}
					w, _ := goReq.Get(ex)
					got = append(got, v+w)
					return nil
				})
			})
		}
	})
	if want := []string{"aa", "bb", "cc"}; !slices.Equal(got, want) {
		t.Fatalf("tasks saw %q, want %q", got, want)
	}
}

// When the executor closes, suspended tasks resume with ErrClosed, their
// context ends, waiting ones never run, and Go does nothing more.
func TestGroupClose(t *testing.T) {
	ex := executor.New()
	ex.Start()
	g := future.NewGroup(context.Background(), ex)
	g.SetLimit(1)
	started := make(chan struct{})
	var ctxErr error
	ranSecond := false
	g.Go(func(ctx context.Context) error {
		close(started)
		err := waitCtx(ex, ctx)
		ctxErr = ctx.Err()
		return err
	})
	g.Go(func(context.Context) error { ranSecond = true; return nil })
	spindletest.Recv(t, started)
	parked := make(chan error, 1)
	go func() { parked <- g.Wait(context.Background()) }()
	ex.Close()
	if err := spindletest.Recv(t, parked); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Wait across Close: %v", err)
	}
	if err := g.Wait(context.Background()); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Wait after Close: %v", err)
	}
	if !errors.Is(ctxErr, context.Canceled) || ranSecond {
		t.Errorf("suspended task's ctx %v, second task ran %v", ctxErr, ranSecond)
	}
	g.Go(func(context.Context) error { ranSecond = true; return nil })
	if ranSecond {
		t.Error("Go after Close ran its function")
	}
}

// A task that calls runtime.Goexit fails the group, and the worker it
// took down strands nothing: the functions queued behind it are dropped
// (the group has failed) and Wait returns; the group serves later work.
func TestGroupGoexit(t *testing.T) {
	ex := executor.New(executor.WithPanicHandler(func(any) {})) // told of the Goexit; quiet here
	ex.Start()
	defer ex.Close()
	g := future.NewGroup(context.Background(), ex)
	var after atomic.Bool
	g.Go(func(context.Context) error { runtime.Goexit(); return nil })
	g.Go(func(context.Context) error { after.Store(true); return nil })
	if err := g.Wait(spindletest.Context(t)); err == nil {
		t.Fatal("Wait: nil after a task called runtime.Goexit")
	}
	if after.Load() {
		t.Error("a function queued behind the failure started")
	}
}

// Misuse panics with a message that names the package.
func TestGroupMisuse(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var zero future.Group
	spindletest.MustPanic(t, "future: ", "NewGroup", func() { zero.Go(func(context.Context) error { return nil }) })
	spindletest.MustPanic(t, "future: ", "nil func", func() { future.NewGroup(context.Background(), ex).Go(nil) })
	spindletest.MustPanic(t, "future: ", "nil context", func() {
		//lint:ignore SA1012 passing nil is the mistake under test
		future.NewGroup(nil, ex)
	})
	spindletest.MustPanic(t, "future: ", "nil executor", func() { future.NewGroup(context.Background(), nil) })
}
