package channel

import (
	"context"
	"errors"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
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

// Tasks that wait on a quiet channel in RecvWait, SendWait or Select and
// give up together leave nothing behind in it, nor, for Select, in the
// other channel of the select: what the channels hold (the heap with them
// minus the heap without them) stays a few hundred bytes, not tens per
// waiter.
func TestWithdrawnWaitersLeaveNothingBehind(t *testing.T) {
	const tasks = 20_000
	for _, op := range []string{"RecvWait", "SendWait", "Select"} {
		ex := executor.New()
		quiet, other := New[int](ex, 0), New[int](ex, 0)
		ctx, cancel := context.WithCancel(context.Background())
		for range tasks {
			future.Spawn(ex, func(context.Context) (int, error) {
				var err error
				switch op {
				case "RecvWait":
					_, err = quiet.RecvWait(ctx)
				case "SendWait":
					err = quiet.SendWait(ctx, 1)
				default:
					_, err = Select(ctx, quiet.RecvCase(), other.SendCase(1))
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("%s: %v, want context.Canceled", op, err)
				}
				return 0, err
			})
		}
		ex.RunUntilIdle()
		if n := quiet.recvq.Len() + quiet.sendq.Len(); n != tasks {
			t.Fatalf("%s: %d waiters queued, want %d", op, n, tasks)
		}
		// The wake-ups come from ctx's AfterFunc goroutines, not from the
		// loop: drive it until every task has given up.
		cancel()
		spindletest.DriveUntil(t, ex, func() bool { return ex.Stats().Suspended == 0 })
		with := spindletest.HeapInUse()
		n := quiet.recvq.Len() + quiet.sendq.Len() + other.recvq.Len() + other.sendq.Len()
		quiet, other = nil, nil
		held := with - spindletest.HeapInUse()
		per := float64(held) / tasks
		t.Logf("%s: %d entries, %d B held by the channels after %d waiters gave up: %.2f B per withdrawn waiter", op, n, held, tasks, per)
		if n != 0 || held > 4<<10 {
			t.Errorf("%s: %d entries and %d B left in the channels by %d withdrawn waiters, want none", op, n, held, tasks)
		}
		ex.Close()
	}
}
