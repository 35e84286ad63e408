package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/semaphore"
)

// The units taken by Go follow the function's real return: callers whose
// deadline passes stop waiting (and cancel the work), but work that does
// not stop at once keeps its slot, so no more than the semaphore's size
// run at once. Acquire, defer Release and a timed-out Await gave the slot
// back as the caller left, and more ran at once than the size allowed.
func TestGoHoldsUnitsUntilReturn(t *testing.T) {
	const size, jobs = 4, 40
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	s := semaphore.New(ex, size)
	gate := make(chan struct{}) // holds every call until the first ones have timed out
	var running, most, ran atomic.Int64
	timedOut := make(chan struct{}, jobs)
	g := future.NewGroup(context.Background(), ex)
	for range jobs {
		g.Go(func(ctx context.Context) error {
			call := semaphore.Go(ctx, s, 1, func(context.Context) (int, error) {
				ran.Add(1)
				cur := running.Add(1)
				for m := most.Load(); cur > m && !most.CompareAndSwap(m, cur); m = most.Load() {
				}
				<-gate // a driver that does not watch its ctx
				running.Add(-1)
				return 1, nil
			})
			_, err := future.WithTimeout(call, time.Millisecond).Await(ctx)
			if errors.Is(err, future.ErrTimeout) {
				timedOut <- struct{}{}
			}
			return nil
		})
	}
	for range size { // the first calls time out and are abandoned, still running
		spindletest.Recv(t, timedOut)
	}
	close(gate)
	if err := g.Wait(spindletest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(spindletest.Context(t), size); err != nil { // every call has returned
		t.Fatal(err)
	}
	s.Release(size)
	if m := most.Load(); m > size {
		t.Errorf("%d calls ran at once, the semaphore allows %d", m, size)
	}
	if n := ran.Load(); n < size || n > jobs {
		t.Errorf("%d calls ran, want %d to %d", n, size, jobs)
	}
}

// Go fails, holding nothing, when the units cannot be taken, and gives them
// back when fn never starts.
func TestGoFailures(t *testing.T) {
	ex := executor.New()
	ex.Start()
	s := semaphore.New(ex, 2)
	fn := func(context.Context) (int, error) { return 1, nil }

	if _, err := spindletest.Await(t, semaphore.Go(context.Background(), s, 3, fn)); !errors.Is(err, semaphore.ErrTooLarge) {
		t.Errorf("too large: %v", err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	started := false
	f := semaphore.Go(ended, s, 2, func(context.Context) (int, error) { started = true; return 1, nil })
	if _, err := spindletest.Await(t, f); !errors.Is(err, context.Canceled) || started {
		t.Errorf("ended ctx: %v, started %v", err, started)
	}
	if !s.TryAcquire(2) { // free units are taken even under an ended ctx: they came back
		t.Fatal("the units of a call that never started were not given back")
	}
	s.Release(2)

	// On the loop outside a task, Go cannot wait.
	s.TryAcquire(2)
	deadlock, err := spindletest.Await(t, future.Call(ex, func() (*future.Future[int], error) {
		return semaphore.Go(context.Background(), s, 1, fn), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spindletest.Await(t, deadlock); !errors.Is(err, future.ErrDeadlock) {
		t.Errorf("on the loop: %v, want ErrDeadlock", err)
	}
	s.Release(2)

	_ = ex.Close()
	if _, err := spindletest.Await(t, semaphore.Go(context.Background(), s, 1, fn)); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	spindletest.MustPanic(t, "semaphore: ", "nil func", func() { semaphore.Go[int](context.Background(), s, 1, nil) })
	//lint:ignore SA1012 passing nil is the mistake under test
	spindletest.MustPanic(t, "semaphore: ", "nil context", func() { semaphore.Go(nil, s, 1, fn) })
}

// Go in a task: the units are held while the call runs and given back when
// it returns.
func ExampleGo() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	db := semaphore.New(ex, 2) // at most two queries at once

	query := func(ctx context.Context) (string, error) { return "row", nil } // blocking, off the loop
	row := future.Spawn(ex, func(ctx context.Context) (string, error) {
		// Even if the caller stops waiting, the slot is held until query returns.
		return future.WithTimeout(semaphore.Go(ctx, db, 1, query), time.Second).Await(ctx)
	})
	v, err := row.Await(context.Background())
	fmt.Println(v, err)
	// Output: row <nil>
}
