package future

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// stackLen counts the links in a pending future's stack of waiters.
func stackLen(c *core) int {
	n := 0
	for l := c.head.Load(); l != nil && l != &claimedLink && l != &compactingLink && !isDone(l); l = l.next {
		n++
	}
	return n
}

// A goroutine's Await whose ctx ends withdraws its link: a pending future
// awaited with a hundred thousand short contexts keeps a handful of links,
// from one goroutine or from eight at once, and still wakes a live waiter.
func TestAbandonedAwaitsLeaveNothingBehind(t *testing.T) {
	for _, goroutines := range []int{1, 8} {
		ex := executor.New()
		ex.Start()
		p := NewPromise[int](ex)
		f := p.Future()
		live := make(chan error, 1)
		go func() { _, err := f.Await(context.Background()); live <- err }()
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		spindletest.Parallel(goroutines, func(int) {
			for range 100_000 / goroutines {
				if _, err := f.Await(cancelled); err != context.Canceled {
					t.Errorf("Await with an ended ctx = %v", err)
					return
				}
			}
		})
		if n := stackLen(&f.core); n > 2*8+goroutines+1 {
			t.Errorf("%d goroutines: %d links after 100k abandoned Awaits, want a handful", goroutines, n)
		}
		p.Resolve(7)
		if err := <-live; err != nil {
			t.Errorf("live waiter: %v", err)
		}
		ex.Close()
	}
}

// A task whose wait is abandoned (a ctx of its own ends while it is
// suspended) withdraws its link too.
func TestAbandonedTaskWaitsLeaveNothingBehind(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	p := NewPromise[int](ex)
	f := p.Future()
	const waits = 50_000
	task := Spawn(ex, func(ctx context.Context) (int, error) {
		for range waits {
			wctx, cancel := context.WithCancel(ctx)
			ex.Post(cancel) // ends the wait once the task has suspended
			if _, err := f.Await(wctx); err != context.Canceled {
				return 0, err
			}
		}
		return stackLen(&f.core), nil
	})
	n, err := task.Await(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n > 2*8+1 {
		t.Fatalf("%d links after %d abandoned task waits, want a handful", n, waits)
	}
}

// The bytes a pending future retains per abandoned Await, from a goroutine
// and from a task: they must not grow with the number of abandoned waits.
func TestAbandonedAwaitMemory(t *testing.T) {
	const n = 200_000
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	p := NewPromise[int](ex)
	f := p.Future()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	before := spindletest.HeapInUse()
	for range n {
		f.Await(cancelled)
	}
	goroutine := float64(spindletest.HeapInUse()-before) / n
	before = spindletest.HeapInUse()
	task := Spawn(ex, func(ctx context.Context) (int, error) {
		for range n {
			// A ctx apart from the task's: deriving from the task's own
			// would start a goroutine per wait in package context, whose
			// descriptors the runtime keeps, and measure that instead.
			wctx, cancel := context.WithCancel(context.Background())
			ex.Post(cancel)
			f.Await(wctx)
		}
		return 0, nil
	})
	if _, err := task.Await(context.Background()); err != nil {
		t.Fatal(err)
	}
	taskBytes := float64(spindletest.HeapInUse()-before) / n
	t.Logf("retained per abandoned Await: goroutine %.2f B, task %.2f B (%d each)", goroutine, taskBytes, n)
	if goroutine > 1 || taskBytes > 1 {
		t.Fatalf("abandoned Awaits retain %.2f B (goroutine) and %.2f B (task) each, want under 1", goroutine, taskBytes)
	}
	p.Resolve(1)
}

// A Timeout that expires on a long-lived future leaves nothing in it, from
// goroutines and from tasks: the node of an expired Timeout is dropped
// from the future's waiters.
func TestExpiredTimeoutsLeaveNothingBehind(t *testing.T) {
	const timeouts = 5_000
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	p := NewPromise[int](ex)
	f := p.Future()
	ctx := spindletest.Context(t)
	before := spindletest.HeapInUse()
	for range timeouts {
		if _, err := Timeout(f, time.Microsecond).Await(ctx); err != ErrTimeout {
			t.Fatalf("Await of an expired Timeout from a goroutine = %v", err)
		}
	}
	task := Spawn(ex, func(ctx context.Context) (int, error) {
		for range timeouts {
			if _, err := Timeout(f, time.Microsecond).Await(ctx); err != ErrTimeout {
				return 0, err
			}
		}
		return stackLen(&f.core), nil
	})
	n, err := spindletest.Await(t, task)
	if err != nil {
		t.Fatal(err)
	}
	per := float64(spindletest.HeapInUse()-before) / float64(2*timeouts)
	t.Logf("%d links, %.1f B per expired Timeout", n, per)
	if n > 2 || per > 16 {
		t.Fatalf("%d links and %.1f B per expired Timeout left in the long-lived future, want none", n, per)
	}
	live := Timeout(f, time.Hour)
	p.Resolve(3)
	if v, err := spindletest.Await(t, live); v != 3 || err != nil {
		t.Fatalf("live Timeout = %v, %v", v, err)
	}
}

// A Then or Transform whose derived future is cancelled leaves nothing in
// its long-lived source; a live one still runs.
func TestCancelledThensLeaveNothingBehind(t *testing.T) {
	thens := spindletest.Scale(100_000)
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	p := NewPromise[int](ex)
	f := p.Future()
	live := Then(f, func(v int) (int, error) { return v + 1, nil })
	before := spindletest.HeapInUse()
	spindletest.Parallel(4, func(i int) {
		for range thens / 4 {
			var d *Future[int]
			if i%2 == 0 {
				d = Then(f, func(v int) (int, error) { return v, nil })
			} else {
				d = Transform(f, func(v int, err error) (int, error) { return v, err })
			}
			if !d.Cancel() {
				t.Error("Cancel of a pending derived future = false")
				return
			}
		}
	})
	n := stackLen(&f.core)
	per := float64(spindletest.HeapInUse()-before) / float64(thens)
	t.Logf("%d links, %.1f B per cancelled Then", n, per)
	if n > 4*compactScan+2 || per > 4 {
		t.Fatalf("%d links and %.1f B per cancelled Then left in the long-lived source, want a handful", n, per)
	}
	p.Resolve(1)
	if v, err := spindletest.Await(t, live); v != 2 || err != nil {
		t.Fatalf("live Then = %v, %v", v, err)
	}
}

// Cancels of derived futures race with their continuations: the loop runs
// the Thens (some of which panic) while goroutines cancel them. Each
// derived future ends exactly one way (under -race this also checks that
// Cancel, which reads a node's source, and the continuation, which clears
// it, do not race).
func TestCancelRacesContinuation(t *testing.T) {
	const rounds, thens = 50, 64
	ex := executor.New(executor.WithPanicHandler(func(any) {}))
	ex.Start()
	defer ex.Close()
	for range rounds {
		p := NewPromise[int](ex)
		ds := make([]*Future[int], thens)
		for i := range ds {
			if i%2 == 0 {
				ds[i] = Then(p.Future(), func(v int) (int, error) {
					if i%4 == 0 {
						panic("then")
					}
					return v + 1, nil
				})
			} else {
				ds[i] = Transform(p.Future(), func(v int, err error) (int, error) { return v + 2, err })
			}
		}
		var cancelled [thens]bool
		spindletest.Parallel(3, func(g int) {
			if g == 0 {
				p.Resolve(1)
				return
			}
			for i := g - 1; i < thens; i += 2 {
				cancelled[i] = ds[i].Cancel()
			}
		})
		for i, d := range ds {
			v, err := spindletest.Await(t, d)
			switch {
			case cancelled[i]:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("then %d: cancelled, but got %v, %v", i, v, err)
				}
			case i%4 == 0:
				var pe *PanicError
				if !errors.As(err, &pe) {
					t.Fatalf("then %d: got %v, %v, want its panic", i, v, err)
				}
			case err != nil || v != 1+1+i%2:
				t.Fatalf("then %d: got %v, %v", i, v, err)
			}
		}
	}
}
