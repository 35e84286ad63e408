package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/semaphore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// op is one step of a scripted scenario, run on the loop.
type op struct {
	name string
	do   func(s *semaphore.Semaphore) string
}

func try(n int64) op {
	return op{fmt.Sprint("try ", n), func(s *semaphore.Semaphore) string { return fmt.Sprint(s.TryAcquire(n)) }}
}

func release(n int64) op {
	return op{fmt.Sprint("release ", n), func(s *semaphore.Semaphore) string { s.Release(n); return "" }}
}

// Requests are served in order with no barging: a waiting request (large
// or small) holds back later ones, TryAcquire fails while anyone waits, and
// released units go to the head first.
func TestSemaphoreFIFO(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int64
		waiters []int64 // tasks that Acquire these, in order, after the script's first step
		script  []op
		want    []string // results of the script's steps, then the grant order
	}{
		{
			name: "no barging", size: 2, waiters: []int64{2},
			script: []op{try(1), try(1), release(1)},
			// the waiter for 2 holds back try(1) although one unit is free
			want: []string{"true", "false", "", "granted [0]"},
		},
		{
			name: "large before small", size: 10, waiters: []int64{5, 1},
			script: []op{try(8), try(1), release(3), try(1), release(5)},
			// 2 free: the 5 waits and the 1 behind it too; 3 more free: the
			// 5 goes, the 1 still waits (none free); 5 back: the 1 goes
			want: []string{"true", "false", "", "false", "", "granted [0 1]"},
		},
		{
			name: "several at once, in order", size: 3, waiters: []int64{1, 1, 1, 3},
			script: []op{try(3), release(3)},
			want:   []string{"true", "", "granted [0 1 2]"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			s := semaphore.New(ex, tc.size)
			var got []string
			var granted []int
			ex.Drive(func() { got = append(got, tc.script[0].do(s)) })
			for i, n := range tc.waiters {
				future.Spawn(ex, func(ctx context.Context) (int, error) {
					err := s.Acquire(ctx, n)
					granted = append(granted, i)
					return 0, err
				})
				ex.RunUntilIdle()
			}
			for _, step := range tc.script[1:] {
				ex.Drive(func() { got = append(got, step.do(s)) })
			}
			got = append(got, fmt.Sprint("granted ", granted))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Acquire waits as Await does: a task suspends, a goroutine parks, the loop
// outside a task gets ErrDeadlock when it would have to wait (and the units
// when they are free).
func TestSemaphoreWaitPaths(t *testing.T) {
	ex := executor.New() // driven by the test: nobody runs its loop
	defer ex.Close()
	s := semaphore.New(ex, 1)
	onLoop := func() (err error) {
		ex.Drive(func() { err = s.Acquire(context.Background(), 1) })
		return err
	}
	if err := onLoop(); err != nil {
		t.Fatalf("Acquire on the loop with the unit free: %v", err)
	}
	if err := onLoop(); !errors.Is(err, future.ErrDeadlock) {
		t.Fatalf("Acquire on the loop that must wait: %v, want ErrDeadlock", err)
	}
	task := future.Spawn(ex, func(ctx context.Context) (int, error) { return 0, s.Acquire(ctx, 1) })
	spindletest.DriveUntil(t, ex, func() bool { return ex.Stats().Suspended == 1 && semaphore.Waiting(s) == 1 })
	parked := make(chan error, 1)
	go func() { parked <- s.Acquire(context.Background(), 1) }()
	spindletest.DriveUntil(t, ex, func() bool { return semaphore.Waiting(s) == 2 })
	s.Release(1) // to the task, first in line
	if _, err := outcome(t, ex, task); err != nil {
		t.Fatalf("task: %v", err)
	}
	s.Release(1) // to the goroutine
	if err := recvStepping(t, ex, parked); err != nil {
		t.Fatalf("goroutine: %v", err)
	}
	if s.TryAcquire(1) {
		t.Fatal("TryAcquire succeeded with the unit held")
	}
	s.Release(1)
}

// A wait that ends early (its ctx, or its task cancelled) returns the
// error, holds nothing, leaves nothing behind, and lets the requests behind
// it move up.
func TestSemaphoreGiveUp(t *testing.T) {
	type acquire func(ex *executor.Executor, s *semaphore.Semaphore, ctx context.Context) *future.Future[int]
	inTask := func(own bool) acquire {
		return func(ex *executor.Executor, s *semaphore.Semaphore, ctx context.Context) *future.Future[int] {
			return future.Spawn(ex, func(tctx context.Context) (int, error) {
				if own {
					ctx = tctx
				}
				return 0, s.Acquire(ctx, 3)
			})
		}
	}
	onGoroutine := func(ex *executor.Executor, s *semaphore.Semaphore, ctx context.Context) *future.Future[int] {
		return future.Go(ex, func(context.Context) (int, error) { return 0, s.Acquire(ctx, 3) })
	}
	cancelCtx := func(cancel context.CancelFunc, _ *future.Future[int]) { cancel() }
	cancelTask := func(_ context.CancelFunc, f *future.Future[int]) { f.Cancel() }
	for _, tc := range []struct {
		name    string
		acquire acquire
		end     func(cancel context.CancelFunc, f *future.Future[int])
	}{
		{"task cancelled", inTask(true), cancelTask},
		{"task, ctx ends", inTask(false), cancelCtx},
		{"goroutine, ctx ends", onGoroutine, cancelCtx},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New() // driven by the test
			defer ex.Close()
			s := semaphore.New(ex, 3)
			if !s.TryAcquire(2) {
				t.Fatal("TryAcquire(2) on a fresh semaphore failed")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			big := tc.acquire(ex, s, ctx)
			spindletest.DriveUntil(t, ex, func() bool { return semaphore.Waiting(s) == 1 })
			small := future.Spawn(ex, func(ctx context.Context) (int, error) { return 0, s.Acquire(ctx, 1) })
			spindletest.DriveUntil(t, ex, func() bool { return semaphore.Waiting(s) == 2 }) // held back by the big one
			tc.end(cancel, big)
			if _, err := outcome(t, ex, small); err != nil {
				t.Fatalf("small request behind the one that gave up: %v", err)
			}
			if _, err := outcome(t, ex, big); !errors.Is(err, context.Canceled) {
				t.Fatalf("request that gave up: %v, want context.Canceled", err)
			}
			if n := semaphore.Waiting(s); n != 0 {
				t.Fatalf("%d waiters left behind", n)
			}
			s.Release(3) // 2 + 1: the one that gave up holds nothing
			if !s.TryAcquire(3) {
				t.Fatal("units missing after the wait that gave up")
			}
		})
	}
}

// 100,000 Acquires that give up leave nothing behind: the queue is empty
// after each, the free list of waiter nodes stays bounded, and an Acquire
// afterwards succeeds at once.
func TestSemaphoreAbandonedAcquiresLeaveNothing(t *testing.T) {
	ex := executor.New() // driven by the test
	defer ex.Close()
	s := semaphore.New(ex, 1)
	if !s.TryAcquire(1) {
		t.Fatal("TryAcquire failed")
	}
	n := 100_000
	if spindletest.RaceEnabled {
		n = 20_000
	}
	var bad error
	task := future.Spawn(ex, func(tctx context.Context) (int, error) {
		for i := range n {
			ctx, cancel := context.WithCancel(tctx)
			ex.Post(cancel) // ends the wait once the task has suspended
			err := s.Acquire(ctx, 1)
			cancel()
			if !errors.Is(err, context.Canceled) {
				return i, fmt.Errorf("Acquire %d: %v, want context.Canceled", i, err)
			}
			if w, sp := semaphore.Waiting(s), semaphore.Spare(s); w != 0 || sp > 1 {
				return i, fmt.Errorf("after %d abandoned Acquires: %d waiting, %d spare nodes", i+1, w, sp)
			}
		}
		return n, nil
	})
	if _, err := outcome(t, ex, task); err != nil {
		t.Fatal(err)
	}
	// The same from goroutines, which wait on a promise each.
	for range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Acquire(ctx, 1) }()
		spindletest.DriveUntil(t, ex, func() bool { return semaphore.Waiting(s) == 1 })
		cancel()
		if err := recvStepping(t, ex, done); !errors.Is(err, context.Canceled) {
			bad = err
		}
	}
	if bad != nil || semaphore.Waiting(s) != 0 {
		t.Fatalf("goroutines: %v, %d waiting", bad, semaphore.Waiting(s))
	}
	s.Release(1)
	// On the loop outside a task, Acquire fails with ErrDeadlock if it would
	// have to wait: nil says that it got the unit at once.
	var err error
	ex.Drive(func() { err = s.Acquire(context.Background(), 1) })
	if err != nil {
		t.Fatalf("Acquire after the abandoned ones: %v", err)
	}
}

// When the executor closes, waiting requests are released with ErrClosed
// and later Acquires fail with it.
func TestSemaphoreClose(t *testing.T) {
	ex := executor.New() // driven by the test
	s := semaphore.New(ex, 1)
	if err := s.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	task := future.Spawn(ex, func(ctx context.Context) (error, error) { return s.Acquire(ctx, 1), nil })
	parked := make(chan error, 1)
	go func() { parked <- s.Acquire(context.Background(), 1) }()
	spindletest.DriveUntil(t, ex, func() bool { return semaphore.Waiting(s) == 2 })
	ex.Close()
	if err, _ := task.Peek(); !errors.Is(err.Value, executor.ErrClosed) {
		t.Errorf("waiting task: %v, want ErrClosed", err.Value)
	}
	if err := spindletest.Recv(t, parked); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("waiting goroutine: %v, want ErrClosed", err)
	}
	s.Release(1)
	if err := s.Acquire(context.Background(), 1); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Acquire after Close: %v, want ErrClosed", err)
	}
}

// A task of another executor waits by suspending, as Await does with the
// task's ctx: its own loop goes on.
func TestSemaphoreTaskOfAnotherExecutor(t *testing.T) {
	a, b := executor.New(), executor.New() // both driven by the test
	defer a.Close()
	defer b.Close()
	s := semaphore.New(a, 1)
	if !s.TryAcquire(1) {
		t.Fatal("TryAcquire failed")
	}
	task := future.Spawn(b, func(ctx context.Context) (int, error) { return 0, s.Acquire(ctx, 1) })
	spindletest.DriveUntil(t, b, func() bool { return b.Stats().Suspended == 1 })
	ran := false
	if b.Drive(func() { b.Post(func() { ran = true }) }); !ran {
		t.Fatal("b's loop is blocked by its task's wait")
	}
	s.Release(1)
	spindletest.DriveUntil(t, b, func() bool { a.RunUntilIdle(); return task.Ready() })
	if _, err := outcome(t, b, task); err != nil {
		t.Fatal(err)
	}
}

// Size is the number of units given to New, whatever is held or waited
// for.
func TestSemaphoreSize(t *testing.T) {
	ex := executor.New() // driven by the test
	defer ex.Close()
	for _, n := range []int64{0, 1, 3, 1 << 40} {
		s := semaphore.New(ex, n)
		if got := s.Size(); got != n {
			t.Errorf("New(ex, %d).Size() = %d", n, got)
		}
		if n == 0 {
			continue
		}
		if !s.TryAcquire(n) {
			t.Fatalf("TryAcquire(%d) of a fresh semaphore failed", n)
		}
		task := future.Spawn(ex, func(ctx context.Context) (int, error) { return 0, s.Acquire(ctx, 1) })
		spindletest.DriveUntil(t, ex, func() bool { return semaphore.Waiting(s) == 1 })
		if got := s.Size(); got != n {
			t.Errorf("Size() = %d with every unit held and a request waiting, want %d", got, n)
		}
		s.Release(n)
		if _, err := outcome(t, ex, task); err != nil {
			t.Fatal(err)
		}
		s.Release(1)
	}
}

// Sizes and counts that cannot work fail at once or panic.
func TestSemaphoreBadCounts(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	s := semaphore.New(ex, 2)
	if err := s.Acquire(context.Background(), 3); !errors.Is(err, semaphore.ErrTooLarge) {
		t.Errorf("Acquire(3) of 2: %v, want ErrTooLarge", err)
	}
	if s.TryAcquire(3) {
		t.Error("TryAcquire(3) of 2 succeeded")
	}
	spindletest.MustPanic(t, "semaphore: ", "more than", func() { s.Release(1) })
	spindletest.MustPanic(t, "semaphore: ", "negative", func() { s.TryAcquire(-1) })
	spindletest.MustPanic(t, "semaphore: ", "out of range", func() { semaphore.New(ex, -1) })
	spindletest.MustPanic(t, "semaphore: ", "nil executor", func() { semaphore.New(nil, 1) })
	spindletest.MustPanic(t, "semaphore: ", "New", func() { new(semaphore.Semaphore).Release(0) })
}

// Tasks and goroutines share a semaphore: never more than its size is
// held, and every request is served.
func TestSemaphoreConcurrent(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	const size, rounds = 3, 200
	s := semaphore.New(ex, size)
	var held, most atomic.Int64
	use := func(n int64) {
		h := held.Add(n)
		for m := most.Load(); h > m && !most.CompareAndSwap(m, h); m = most.Load() {
		}
		held.Add(-n)
	}
	g := future.NewGroup(context.Background(), ex)
	var wg sync.WaitGroup
	for i := range 4 {
		n := int64(i%size + 1)
		g.Go(func(ctx context.Context) error {
			for range rounds {
				if err := s.Acquire(ctx, n); err != nil {
					return err
				}
				use(n)
				if err := future.Yield(ctx); err != nil {
					return err
				}
				s.Release(n)
			}
			return nil
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if r%3 == 0 && s.TryAcquire(n) { // the fast path, racing the waiters
					use(n)
					s.Release(n)
					continue
				}
				if err := s.Acquire(context.Background(), n); err != nil {
					t.Error(err)
					return
				}
				use(n)
				s.Release(n)
			}
		}()
	}
	wg.Wait()
	if err := g.Wait(spindletest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if most.Load() > size {
		t.Fatalf("%d units held at once, size %d", most.Load(), size)
	}
	if !s.TryAcquire(size) {
		t.Fatal("units missing at the end")
	}
}

// outcome steps ex's loop until f is complete and returns its result.
func outcome[T any](t *testing.T, ex *executor.Executor, f *future.Future[T]) (T, error) {
	t.Helper()
	spindletest.DriveUntil(t, ex, f.Ready)
	r, _ := f.Peek()
	return r.Value, r.Err
}

// recvStepping steps ex's loop until ch delivers: a goroutine parked in
// Acquire is woken through the loop.
func recvStepping[T any](t *testing.T, ex *executor.Executor, ch <-chan T) (v T) {
	t.Helper()
	spindletest.DriveUntil(t, ex, func() bool {
		select {
		case v = <-ch:
			return true
		default:
			return false
		}
	})
	return v
}
