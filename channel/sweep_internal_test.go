package channel

import (
	"context"
	"errors"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// Withdrawn waiters (cancelled futures, losing select cases) do not pile
// up in a quiet channel's queue: sweeps keep it within about twice its
// live waiters.
func TestDeadWaitersAreSwept(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	busy := New[int](ex, 0)
	quiet := New[int](ex, 0)
	const n = 10_000
	var maxLen int
	f := future.Spawn(ex, func(ctx context.Context) (int, error) {
		live := quiet.Recv() // one live waiter that must survive every sweep
		for range n {
			quiet.Recv().Cancel()
			// The select waits on both and loses its case on quiet
			// every time.
			rb, rq := busy.RecvCase(), quiet.RecvCase()
			if _, err := Select(ctx, rq, rb); err != nil {
				return 0, err
			}
			maxLen = max(maxLen, quiet.recvq.Len())
		}
		if !quiet.TrySend(99) {
			return 0, errors.New("the live waiter was swept")
		}
		v, err := live.Await(ctx)
		return v, err
	})
	future.Spawn(ex, func(ctx context.Context) (int, error) {
		for i := range n {
			if err := busy.SendWait(ctx, i); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	ex.RunUntilIdle()
	r, ok := f.Peek()
	if !ok || r.Err != nil || r.Value != 99 {
		t.Fatalf("task = %+v, %v; want the live waiter to get 99", r, ok)
	}
	if maxLen > 2*minSweep+2 {
		t.Errorf("quiet channel's receive queue reached %d entries for 1 live waiter", maxLen)
	}
}
