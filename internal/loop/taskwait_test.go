package loop_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

type ctxKey struct{}

// The task's own context (or a value-only wrapper of it) needs no watcher:
// the task's cancellation wakes it. Another context that can end is
// watched.
func TestTaskWaiterWatchesOnlyForeignContexts(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var res []string
	ex.Drive(func() {
		future.Spawn(ex, func(ctx context.Context) (int, error) {
			fib := lp(ex).CurrentFiber()
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			for _, c := range []context.Context{ctx, context.WithValue(ctx, ctxKey{}, 1), wctx, context.Background()} {
				var w loop.TaskWaiter
				if err := w.Init(fib, c); err != nil {
					t.Error(err)
				}
				stop := w.Watch()
				res = append(res, fmt.Sprint(stop != nil))
				if stop != nil {
					stop()
				}
			}
			return 0, nil
		})
	})
	if want := "[false false true false]"; fmt.Sprint(res) != want {
		t.Errorf("watches ctx, per context: %v, want %v", res, want)
	}
}

// A task waits on a loop.TaskWaiter until a peer fires it; a foreign ctx that
// ends withdraws it, and a withdrawn waiter is not claimable.
func TestTaskWaiterFireAndWithdraw(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var w loop.TaskWaiter
	var first error
	wctx, cancel := context.WithCancel(context.Background())
	var task *future.Future[int]
	ex.Drive(func() {
		task = future.Spawn(ex, func(ctx context.Context) (int, error) {
			if err := w.Init(lp(ex).CurrentFiber(), ctx); err != nil {
				return 0, err
			}
			first = w.Wait()
			if err := w.Init(lp(ex).CurrentFiber(), wctx); err != nil {
				return 0, err
			}
			return 0, w.Wait()
		})
	})
	if !w.Claimable() || w.Matched() {
		t.Fatal("waiting task's waiter not claimable")
	}
	ex.Drive(func() { w.Fire() })
	if first != nil {
		t.Fatalf("first wait = %v, want nil after Fire", first)
	}
	ex.Start()
	cancel() // the watch wakes the task
	safety, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if _, err := task.Await(safety); err != context.Canceled {
		t.Fatalf("second wait = %v, want context.Canceled", err)
	}
	var withdrawn, claimable bool
	future.Call(ex, func() (int, error) {
		withdrawn, claimable = w.Withdrawn(), w.Claimable()
		return 0, nil
	}).Await(safety)
	if !withdrawn || claimable {
		t.Fatalf("after the ctx ended: withdrawn %v, claimable %v; want true, false", withdrawn, claimable)
	}
}
