package semaphore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/semaphore"
)

// A request whose ctx has ended is not granted, even when the units come
// free before its waiter has seen the end of its ctx: the units go back
// and on to the next live request (as x/sync's Weighted gives them back).
// Before, a Release in the same turn as the cancellation handed the units
// down the whole queue of cancelled waiters, and every one of them started.
func TestSemaphoreCancelledWaiterNotGranted(t *testing.T) {
	const waiters = 100
	for _, tc := range []struct {
		name string
		// wait queues waiters that Acquire(ctx, 1), counting in started
		// those that got the unit, in failed those that got ctx's error.
		wait func(t *testing.T, ex *executor.Executor, s *semaphore.Semaphore, ctx context.Context, started, failed *atomic.Int64) (done func())
	}{
		{"tasks", func(t *testing.T, ex *executor.Executor, s *semaphore.Semaphore, ctx context.Context, started, failed *atomic.Int64) func() {
			var fs []*future.Future[struct{}]
			for range waiters {
				fs = append(fs, future.Spawn(ex, func(context.Context) (struct{}, error) {
					return struct{}{}, acquireOnce(ctx, s, started, failed)
				}))
			}
			ex.RunUntilIdle()
			return func() {
				// A task whose ctx ended is woken through the loop, from a
				// goroutine of package context's: step until all are back.
				spindletest.DriveUntil(t, ex, func() bool {
					for _, f := range fs {
						if !f.Ready() {
							return false
						}
					}
					return true
				})
			}
		}},
		{"group", func(t *testing.T, ex *executor.Executor, s *semaphore.Semaphore, ctx context.Context, started, failed *atomic.Int64) func() {
			g := future.NewGroup(ctx, ex)
			for range waiters {
				g.Go(func(gctx context.Context) error { return acquireOnce(gctx, s, started, failed) })
			}
			ex.RunUntilIdle()
			return func() {
				spindletest.DriveUntil(t, ex, func() bool { return started.Load()+failed.Load() == waiters })
				var err error
				ex.Drive(func() { err = g.Wait(context.Background()) }) // every task has returned
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Wait: %v, want context.Canceled", err)
				}
			}
		}},
		{"goroutines", func(t *testing.T, ex *executor.Executor, s *semaphore.Semaphore, ctx context.Context, started, failed *atomic.Int64) func() {
			done := make(chan struct{})
			var left atomic.Int64
			left.Store(waiters)
			for range waiters {
				go func() {
					_ = acquireOnce(ctx, s, started, failed)
					if left.Add(-1) == 0 {
						close(done)
					}
				}()
			}
			for semaphore.Waiting(s) < waiters {
				ex.RunUntilIdle() // the goroutines queue from off the loop
			}
			return func() {
				recvStepping(t, ex, done)
				ex.RunUntilIdle()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			s := semaphore.New(ex, 1)
			if !s.TryAcquire(1) {
				t.Fatal("TryAcquire on a free semaphore failed")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var started, failed atomic.Int64
			done := tc.wait(t, ex, s, ctx, &started, &failed)
			if got := semaphore.Waiting(s); got != waiters {
				t.Fatalf("%d requests wait, want %d", got, waiters)
			}
			// The fatal error: ctx ends and the holder gives its unit
			// back in the same turn of the loop, before any waiter runs.
			ex.Drive(func() {
				cancel()
				s.Release(1)
			})
			done()
			if n := started.Load(); n != 0 {
				t.Errorf("%d of %d requests were granted after their ctx ended", n, waiters)
			}
			if n := failed.Load(); n != waiters {
				t.Errorf("%d requests returned ctx's error, want %d", n, waiters)
			}
			if n := semaphore.Waiting(s); n != 0 {
				t.Errorf("%d requests left in the queue", n)
			}
			if !s.TryAcquire(1) {
				t.Error("the unit was not given back")
			}
		})
	}
}

// acquireOnce takes one unit of s and gives it back, counting the outcome.
func acquireOnce(ctx context.Context, s *semaphore.Semaphore, started, failed *atomic.Int64) error {
	err := s.Acquire(ctx, 1)
	switch {
	case err == nil:
		started.Add(1)
		s.Release(1)
	case errors.Is(err, context.Canceled):
		failed.Add(1)
	}
	return err
}
