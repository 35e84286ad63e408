package future_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// Once the group's context has ended (its first failure, or the parent's
// end), functions still waiting for a slot do not start, as in asyncio's
// TaskGroup; errgroup would start each of them with a cancelled ctx. Before,
// every queued function started after the first failure.
func TestGroupCancelledQueueDoesNotStart(t *testing.T) {
	const queued = 20
	for _, tc := range []struct {
		name  string
		limit int
		// end ends the group's context while the functions wait: by a
		// failure of the running ones (release), or by the parent.
		end     func(cancelParent func(), release *future.Promise[struct{}])
		wantErr error
	}{
		{"failure limit=1", 1, func(_ func(), p *future.Promise[struct{}]) { p.Reject(errGroup) }, errGroup},
		{"failure limit=4", 4, func(_ func(), p *future.Promise[struct{}]) { p.Reject(errGroup) }, errGroup},
		{"parent limit=1", 1, func(cancel func(), _ *future.Promise[struct{}]) { cancel() }, context.Canceled},
		{"parent limit=4", 4, func(cancel func(), _ *future.Promise[struct{}]) { cancel() }, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			ex.Start()
			defer ex.Close()
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			g := future.NewGroup(parent, ex)
			g.SetLimit(tc.limit)
			release := future.NewPromise[struct{}](ex)
			running := make(chan struct{}, tc.limit)
			var started atomic.Int64
			for range tc.limit { // these hold every slot until the group's ctx ends
				g.Go(func(ctx context.Context) error {
					running <- struct{}{}
					_, err := release.Future().Await(ctx)
					return err
				})
			}
			for range queued {
				g.Go(func(context.Context) error { started.Add(1); return nil })
			}
			for range tc.limit {
				spindletest.Recv(t, running)
			}
			tc.end(cancel, release)
			// A function given to Go after the end does not start either.
			g.Go(func(context.Context) error { started.Add(1); return nil })
			if err := g.Wait(spindletest.Context(t)); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Wait: %v, want %v", err, tc.wantErr)
			}
			if n := started.Load(); n != 0 {
				t.Errorf("%d functions started after the group's ctx ended, want 0", n)
			}
		})
	}
}

// A group whose parent has already ended starts nothing, and Wait says why.
func TestGroupEndedParentStartsNothing(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	parent, cancel := context.WithCancelCause(context.Background())
	errStop := errors.New("stop")
	cancel(errStop)
	g := future.NewGroup(parent, ex)
	started := 0
	for range 3 {
		g.Go(func(context.Context) error { started++; return nil })
	}
	ex.RunUntilIdle()
	var err error
	ex.Drive(func() { err = g.Wait(context.Background()) })
	if !errors.Is(err, errStop) || started != 0 {
		t.Fatalf("Wait: %v with %d started, want %v and none", err, started, errStop)
	}
}
