package future_test

import (
	"context"
	"errors"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// Contexts derived from a task's context end with the task (its Cancel,
// the executor closing), and context.AfterFunc on it runs and stops as
// documented. Package context finds the task context's AfterFunc method,
// so none of this needs a goroutine per derived context.
func TestTaskContextDerived(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(ex *executor.Executor, task *future.Future[error])
	}{
		{"cancel", func(_ *executor.Executor, task *future.Future[error]) { task.Cancel() }},
		{"close", func(ex *executor.Executor, _ *future.Future[error]) { _ = ex.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			ex.Start()
			defer ex.Close()
			derived := make(chan context.Context, 1)
			after := make(chan struct{})
			stopped := make(chan bool, 1)
			task := future.Spawn(ex, func(ctx context.Context) (error, error) {
				child, cancel := context.WithCancel(ctx)
				defer cancel()
				context.AfterFunc(ctx, func() { close(after) })
				stop := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
				stopped <- stop()
				derived <- child
				_, err := future.NewPromise[int](ex).Future().Await(ctx) // until the end
				return err, nil
			})
			child := spindletest.Recv(t, derived)
			if !spindletest.Recv(t, stopped) {
				t.Error("stop before the end reported false")
			}
			tc.end(ex, task)
			spindletest.Recv(t, child.Done())
			if !errors.Is(child.Err(), context.Canceled) {
				t.Errorf("derived ctx: %v", child.Err())
			}
			spindletest.Recv(t, (<-chan struct{})(after))
		})
	}
}

// GoContext under a task's ctx costs the function's goroutine and nothing
// more: no goroutine watches the task's context. Before, package context
// watched it with a goroutine per derived context, two per call.
func TestGoContextOfTaskGoroutines(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	const n = 50
	release := make(chan struct{})
	started := make(chan struct{}, n)
	base := spindletest.Goroutines()
	fs := make([]*future.Future[int], n)
	for i := range fs {
		fs[i] = future.Spawn(ex, func(ctx context.Context) (int, error) {
			return future.GoContext(ctx, ex, func(context.Context) (int, error) {
				started <- struct{}{}
				<-release
				return 1, nil
			}).Await(ctx)
		})
	}
	for range n {
		spindletest.Recv(t, started)
	}
	grown := spindletest.Goroutines() - base
	close(release)
	for _, f := range fs {
		if _, err := spindletest.Await(t, f); err != nil {
			t.Fatal(err)
		}
	}
	// Each call: its suspended task's goroutine and the function's.
	if grown > 2*n+5 {
		t.Errorf("%d calls cost %d goroutines, want at most %d", n, grown, 2*n+5)
	}
}
