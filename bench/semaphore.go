package main

// BenchmarkSemaphore: semWorkers workers contend for semUnits units. Each
// op is one worker acquiring a unit, letting the others run once while it
// holds it (future.Yield in a task, runtime.Gosched in a goroutine), and
// releasing it, so most acquires find the units taken and wait. spindle's
// workers are spawned tasks on one loop; the baseline's are goroutines
// sharing a golang.org/x/sync/semaphore.Weighted. Figures are per op.

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	xsemaphore "golang.org/x/sync/semaphore"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/semaphore"
)

const (
	semWorkers = 8
	semUnits   = 2
)

func init() {
	register(
		benchCase{Group: "Semaphore", Name: "spindle", Unit: "op", Baseline: "xsync", Fn: semSpindle},
		benchCase{Group: "Semaphore", Name: "xsync", Unit: "op", Fn: semXsync},
	)
}

// semSpindle: semWorkers tasks share b.N acquire/yield/release rounds.
func semSpindle(b *testing.B) {
	ex := newExecutor()
	defer ex.Close()
	sem := semaphore.New(ex, semUnits)
	left := 0
	worker := func(ctx context.Context) (int, error) {
		for left > 0 {
			left--
			if err := sem.Acquire(ctx, 1); err != nil {
				return 0, err
			}
			err := future.Yield(ctx)
			sem.Release(1)
			if err != nil {
				return 0, err
			}
		}
		return 0, nil
	}
	run := func(n int) {
		left = n
		fs := make([]*future.Future[int], semWorkers)
		for i := range fs {
			fs[i] = future.Spawn(ex, worker)
		}
		ex.RunUntilIdle()
		for _, f := range fs {
			if _, err := f.Await(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	run(semWorkers * 4) // warm the pool of task goroutines
	t0 := ex.Stats().TasksRun
	m := startMeter(b)
	run(b.N)
	m.Stop(b, "op", float64(b.N), float64(ex.Stats().TasksRun-t0))
}

// semXsync: semWorkers goroutines share b.N acquire/Gosched/release rounds
// on a semaphore.Weighted.
func semXsync(b *testing.B) {
	sem := xsemaphore.NewWeighted(semUnits)
	ctx := context.Background()
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	m := startMeter(b)
	for range semWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := sem.Acquire(ctx, 1); err != nil {
					b.Error(err)
					return
				}
				runtime.Gosched()
				sem.Release(1)
			}
		}()
	}
	wg.Wait()
	m.Stop(b, "op", float64(b.N), -1)
}
