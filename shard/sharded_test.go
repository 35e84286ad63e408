package shard_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/shard"
)

// svc is a per-shard service that remembers where it was made.
type svc struct {
	shard  int
	madeOn bool // made on its own shard's loop
	hits   int
}

// Each instance is made once, on its own shard's loop, whether the making
// NewSharded queued or a first use comes first; Local returns the caller
// shard's instance.
func TestShardedInstancesOnTheirLoops(t *testing.T) {
	g := started(t, 3)
	made := make([]int, 3) // made[i] is written on shard i only
	s := shard.NewSharded(g, func(i int) *svc {
		made[i]++
		cur, ok := g.Current()
		return &svc{shard: i, madeOn: ok && cur == i && g.Shard(i).OnLoop()}
	})
	for i := range 3 {
		got := on(t, g, i, func(context.Context) (svc, error) {
			l := s.Local()
			l.hits++
			return *l, nil
		})
		if got.shard != i || !got.madeOn || got.hits != 1 {
			t.Errorf("shard %d: Local = %+v, want its own instance, made on its loop", i, got)
		}
		v, err := spindletest.Await(t, shard.Invoke(s, i, func(x *svc) (int, error) { x.hits++; return x.hits, nil }))
		if v != 2 || err != nil {
			t.Errorf("Invoke on shard %d: %d, %v; want 2", i, v, err)
		}
	}
	n := on(t, g, 0, func(ctx context.Context) ([]int, error) {
		return shard.InvokeAll(s, func(*svc) (int, error) {
			i, _ := g.Current()
			return made[i], nil
		}).Await(ctx)
	})
	if !slices.Equal(n, []int{1, 1, 1}) {
		t.Fatalf("instances made %v times, want once each", n)
	}
}

// A first use made before NewSharded's queued task runs makes the
// instance there and then.
func TestShardedMadeOnFirstUse(t *testing.T) {
	g := shard.New(2) // not started: NewSharded's tasks wait in the queues
	defer g.Close()
	var s *shard.Sharded[svc]
	var got *svc
	g.Shard(1).Drive(func() {
		s = shard.NewSharded(g, func(i int) *svc { return &svc{shard: i} })
		got = s.Local() // before the task NewSharded queued here
	})
	if got == nil || got.shard != 1 {
		t.Fatalf("Local on shard 1 = %+v", got)
	}
}

// InvokeAll keeps shard order from a shard and from a goroutine; the
// future belongs to the calling shard, or to shard 0; an error fails it.
func TestInvokeAllAndMapReduce(t *testing.T) {
	g := started(t, 4)
	s := shard.NewSharded(g, func(i int) *svc { return &svc{shard: i} })
	id := func(x *svc) (int, error) { return x.shard, nil }

	fromGoroutine := shard.InvokeAll(s, id)
	if fromGoroutine.Executor() != g.Shard(0) {
		t.Error("InvokeAll from a goroutine does not belong to shard 0")
	}
	if v, err := spindletest.Await(t, fromGoroutine); !slices.Equal(v, []int{0, 1, 2, 3}) || err != nil {
		t.Errorf("InvokeAll from a goroutine = %v, %v", v, err)
	}
	joined := on(t, g, 2, func(ctx context.Context) ([]int, error) {
		f := shard.MapReduce(s, id, []int(nil), func(acc []int, i int) []int { return append(acc, i) })
		if f.Executor() != g.Shard(2) {
			return nil, errors.New("MapReduce from shard 2 does not belong to shard 2")
		}
		return f.Await(ctx)
	})
	if !slices.Equal(joined, []int{0, 1, 2, 3}) {
		t.Errorf("MapReduce from shard 2 folded %v", joined)
	}
	errOdd := errors.New("odd")
	_, err := spindletest.Await(t, shard.MapReduce(s, func(x *svc) (int, error) {
		if x.shard == 3 {
			return 0, errOdd
		}
		return x.shard, nil
	}, 0, func(a, b int) int { return a + b }))
	if !errors.Is(err, errOdd) {
		t.Errorf("MapReduce with a failing shard: %v, want %v", err, errOdd)
	}
	sum, err := spindletest.Await(t, shard.MapReduce(s, id, 0, func(a, b int) int { return a + b }))
	if sum != 6 || err != nil {
		t.Errorf("sum over shards = %d, %v", sum, err)
	}
}

// A constructor that returns nil is a bug that is reported where the
// instance is needed: Local panics, a call fails with the panic, and the
// making NewSharded queued goes to the panic handler.
func TestShardedConstructorReturnsNil(t *testing.T) {
	var handled []any // written on shard 0's loop, read after Close
	g := shard.New(1, executor.WithPanicHandler(func(v any) { handled = append(handled, v) }))
	var f *future.Future[int]
	g.Shard(0).Drive(func() {
		s := shard.NewSharded(g, func(int) *int { return nil })
		spindletest.MustPanic(t, "shard: ", "returned nil for shard 0", func() { s.Local() })
		f = shard.Invoke(s, 0, func(*int) (int, error) { return 0, nil })
	})
	var pe *future.PanicError
	if _, err := spindletest.Await(t, f); !errors.As(err, &pe) {
		t.Errorf("Invoke with a nil instance: %v, want a *future.PanicError", err)
	}
	_ = g.Close()
	if len(handled) != 1 {
		t.Errorf("panic handler got %v, want the one panic of NewSharded's making", handled)
	}
}
