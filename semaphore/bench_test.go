package semaphore_test

import (
	"context"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/semaphore"
)

// Acquire and Release of free units: the path taken when nothing waits.
func BenchmarkAcquireRelease(b *testing.B) {
	ex := executor.New()
	defer ex.Close()
	s := semaphore.New(ex, 1)
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		if err := s.Acquire(ctx, 1); err != nil {
			b.Fatal(err)
		}
		s.Release(1)
	}
}

// Two tasks take turns on one unit, each holding it across a Yield, so
// every Acquire waits in place: a suspension and a resumption per op.
func BenchmarkAcquireWaitInTask(b *testing.B) {
	ex := executor.New()
	defer ex.Close()
	s := semaphore.New(ex, 1)
	left := b.N
	worker := turns(s, &left)
	b.ReportAllocs()
	b.ResetTimer()
	future.Spawn(ex, worker)
	future.Spawn(ex, worker)
	ex.RunUntilIdle()
}

// turns returns a task body that takes a unit *left times (counting *left
// down, which tasks may share), holding it across a Yield each time.
func turns(s *semaphore.Semaphore, left *int) func(ctx context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		for ; *left > 0; *left-- {
			if err := s.Acquire(ctx, 1); err != nil {
				return 0, err
			}
			err := future.Yield(ctx)
			s.Release(1)
			if err != nil {
				return 0, err
			}
		}
		return 0, nil
	}
}

// Neither path allocates once warm: free units cost a lock, and a task
// that waits reuses a waiter node.
func TestSemaphoreAllocs(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	s := semaphore.New(ex, 1)
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		if err := s.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		s.Release(1)
		if s.TryAcquire(1) {
			s.Release(1)
		}
	}); n != 0 {
		t.Errorf("free units: %v allocs per Acquire/Release, want 0", n)
	}
	const rounds = 1000
	var perWait float64
	future.Spawn(ex, func(ctx context.Context) (int, error) {
		// The other task holds the unit across a Yield; this one waits.
		other := rounds + 1
		future.Spawn(ex, turns(s, &other))
		if err := future.Yield(ctx); err != nil { // let it take the unit
			return 0, err
		}
		perWait = testing.AllocsPerRun(rounds-10, func() {
			if err := s.Acquire(ctx, 1); err != nil {
				t.Error(err)
			}
			s.Release(1)
		})
		return 0, nil
	})
	ex.RunUntilIdle()
	if perWait != 0 {
		t.Errorf("a task that waits: %v allocs per Acquire/Release, want 0", perWait)
	}
}
