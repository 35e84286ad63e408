package shard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/shard"
)

// awaitAll awaits fs in a task and fails on the first error.
func awaitAll[T any](ctx context.Context, fs []*future.Future[T]) error {
	for _, f := range fs {
		if _, err := f.Await(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Calls from one source to one shard run in the order they were made,
// whether the source is a shard (through the ring, far past its size) or
// a goroutine, with three sources at once.
func TestFIFOPerSource(t *testing.T) {
	const calls = 5000
	g := started(t, 3)
	seen := map[string][]int{} // owned by shard 2
	record := func(src string, i int) func() (int, error) {
		return func() (int, error) {
			seen[src] = append(seen[src], i)
			return i, nil
		}
	}
	// Callers 0 and 1 are tasks of shards 0 and 1; caller 2 is a plain
	// goroutine.
	spindletest.Parallel(3, func(from int) {
		if from < 2 {
			on(t, g, from, func(ctx context.Context) (int, error) {
				fs := make([]*future.Future[int], calls)
				src := fmt.Sprint("shard ", from)
				for i := range fs {
					fs[i] = shard.Call(g, 2, record(src, i))
				}
				return 0, awaitAll(ctx, fs)
			})
			return
		}
		fs := make([]*future.Future[int], calls)
		for i := range fs {
			fs[i] = shard.Call(g, 2, record("goroutine", i))
		}
		for _, f := range fs {
			if _, err := spindletest.Await(t, f); err != nil {
				t.Error(err)
			}
		}
	})
	got := on(t, g, 2, func(context.Context) (map[string][]int, error) { return seen, nil })
	for _, src := range []string{"shard 0", "shard 1", "goroutine"} {
		if len(got[src]) != calls {
			t.Fatalf("%s: %d calls ran, want %d", src, len(got[src]), calls)
		}
		for i, v := range got[src] {
			if v != i {
				t.Fatalf("%s: call %d ran in place %d", src, v, i)
			}
		}
	}
}

// Two shards call each other at once, each far more than a ring holds,
// before awaiting anything, and every call made by the callee's function
// makes a call back: both queues fill and nothing deadlocks.
func TestCallsBothWaysAtOnce(t *testing.T) {
	const calls = 20_000
	g := started(t, 2)
	var back [2][]*future.Future[int] // back[i]: calls made by shard i's callee functions, owned by shard i
	spindletest.Parallel(2, func(from int) {
		to := 1 - from
		on(t, g, from, func(ctx context.Context) (int, error) {
			fs := make([]*future.Future[int], calls)
			for i := range fs {
				fs[i] = shard.Call(g, to, func() (int, error) {
					back[to] = append(back[to], shard.Call(g, from, func() (int, error) { return i, nil }))
					return i, nil
				})
			}
			return 0, awaitAll(ctx, fs)
		})
	})
	for i := range 2 {
		n := on(t, g, i, func(ctx context.Context) (int, error) {
			return len(back[i]), awaitAll(ctx, back[i])
		})
		if n != calls {
			t.Fatalf("shard %d made %d calls back, want %d", i, n, calls)
		}
	}
}

// Eight goroutines make 2,000 calls each to the owners of their keys; the
// per-shard counts add up exactly.
func TestGoroutinesExactCounts(t *testing.T) {
	const goroutines, calls, keys = 8, 2000, 97
	g := started(t, 4)
	counts := shard.NewSharded(g, func(int) *map[uint64]int { m := map[uint64]int{}; return &m })
	spindletest.Parallel(goroutines, func(w int) {
		fs := make([]*future.Future[int], 0, calls)
		for i := range calls {
			k := uint64((w*calls + i) % keys)
			fs = append(fs, shard.InvokeWith(counts, g.Of(k), k, func(m *map[uint64]int, k uint64) (int, error) {
				(*m)[k]++
				return (*m)[k], nil
			}))
		}
		for _, f := range fs {
			if _, err := spindletest.Await(t, f); err != nil {
				t.Error(err)
			}
		}
	})
	perKey, err := spindletest.Await(t, shard.MapReduce(counts,
		func(m *map[uint64]int) (map[uint64]int, error) {
			cp := make(map[uint64]int, len(*m))
			for k, v := range *m {
				cp[k] = v
			}
			return cp, nil
		},
		map[uint64]int{},
		func(acc map[uint64]int, m map[uint64]int) map[uint64]int {
			for k, v := range m {
				if _, dup := acc[k]; dup {
					t.Errorf("key %d counted on two shards", k)
				}
				acc[k] = v
			}
			return acc
		}))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for k := range uint64(keys) {
		want := 0
		for j := range goroutines * calls {
			if uint64(j%keys) == k {
				want++
			}
		}
		if perKey[k] != want {
			t.Errorf("key %d counted %d times, want %d", k, perKey[k], want)
		}
		total += perKey[k]
	}
	if total != goroutines*calls {
		t.Fatalf("total %d, want %d", total, goroutines*calls)
	}
}
