package shard_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/shard"
)

// started returns a running group of n shards, closed when the test ends.
func started(t *testing.T, n int) *shard.Group {
	t.Helper()
	g := shard.New(n)
	g.Start()
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// on runs fn as a task on shard i and waits for its result.
func on[T any](t *testing.T, g *shard.Group, i int, fn func(ctx context.Context) (T, error)) T {
	t.Helper()
	v, err := spindletest.Await(t, future.Spawn(g.Shard(i), fn))
	if err != nil {
		t.Fatalf("task on shard %d: %v", i, err)
	}
	return v
}

func TestNewNamesShards(t *testing.T) {
	for _, tc := range []struct {
		n     int
		opts  []executor.Option
		names []string
	}{
		{2, nil, []string{"spindle-0", "spindle-1"}},
		{3, []executor.Option{executor.WithName("kv")}, []string{"kv-0", "kv-1", "kv-2"}},
		{0, nil, nil}, // GOMAXPROCS shards
	} {
		g := shard.New(tc.n, tc.opts...)
		want := tc.n
		if want == 0 {
			want = runtime.GOMAXPROCS(0)
		}
		if g.Len() != want {
			t.Errorf("New(%d).Len() = %d, want %d", tc.n, g.Len(), want)
		}
		for i, name := range tc.names {
			if got := g.Shard(i).Name(); got != name {
				t.Errorf("Shard(%d).Name() = %q, want %q", i, got, name)
			}
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMisusePanics(t *testing.T) {
	g := started(t, 2)
	s := shard.NewSharded(g, func(int) *int { return new(int) })
	for _, tc := range []struct {
		name, want string
		fn         func()
	}{
		{"Shard out of range", "Shard(2) on a group of 2", func() { g.Shard(2) }},
		{"Call out of range", "call to shard -1 on a group of 2", func() { shard.Call(g, -1, func() (int, error) { return 0, nil }) }},
		{"Call nil", "nil func", func() { shard.Call[int](g, 0, nil) }},
		{"CallWith nil", "nil func", func() { shard.CallWith[int, int](g, 0, 1, nil) }},
		{"Invoke nil", "nil func", func() { shard.Invoke[int, int](s, 0, nil) }},
		{"Invoke out of range", "call to shard 2 on a group of 2", func() {
			shard.Invoke(s, 2, func(*int) (int, error) { return 0, nil })
		}},
		{"InvokeWith nil", "nil func", func() { shard.InvokeWith[int, int, int](s, 0, 1, nil) }},
		{"InvokeAll nil", "nil func", func() { shard.InvokeAll[int, int](s, nil) }},
		{"MapReduce nil", "nil reduce", func() {
			shard.MapReduce[int, int, int](s, func(*int) (int, error) { return 0, nil }, 0, nil)
		}},
		{"Start twice", "Start called twice", g.Start},
		{"Local off the loops", "use Invoke", func() { s.Local() }},
		{"NewSharded nil", "nil", func() { shard.NewSharded[int](g, nil) }},
		{"Shutdown nil ctx", "nil context", func() {
			//lint:ignore SA1012 passing nil is the mistake under test
			_ = g.Shutdown(nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { spindletest.MustPanic(t, "shard: ", tc.want, tc.fn) })
	}
}

// Of is a pure function of the key and the number of shards, and spreads
// sequential, strided and random keys evenly.
func TestOfStableAndSpread(t *testing.T) {
	const keys = 120_000
	rng := rand.New(rand.NewPCG(1, 2))
	sets := map[string]func(i int) uint64{
		"sequential": func(i int) uint64 { return uint64(i) },
		"stride4096": func(i int) uint64 { return uint64(i) << 12 },
		"random":     func(int) uint64 { return rng.Uint64() },
	}
	for _, n := range []int{1, 2, 3, 7, 16, 64} {
		g, again := shard.New(n), shard.New(n)
		for name, key := range sets {
			t.Run(fmt.Sprintf("n=%d/%s", n, name), func(t *testing.T) {
				hits := make([]int, n)
				for i := range keys {
					k := key(i)
					o := g.Of(k)
					if o < 0 || o >= n {
						t.Fatalf("Of(%d) = %d, out of [0,%d)", k, o, n)
					}
					if o != g.Of(k) || o != again.Of(k) {
						t.Fatalf("Of(%d) not stable", k)
					}
					hits[o]++
				}
				// Every shard within 5 standard deviations of a fair share.
				mean := float64(keys) / float64(n)
				sd := math.Sqrt(mean * (1 - 1/float64(n)))
				for i, h := range hits {
					if math.Abs(float64(h)-mean) > 5*sd+1 {
						t.Errorf("shard %d owns %d keys, want %.0f ± %.0f", i, h, mean, 5*sd)
					}
				}
			})
		}
		_, _ = g.Close(), again.Close()
	}
}

// A call from a shard runs on the callee and belongs to the caller: its
// Then callback runs on the caller's loop. A call from a goroutine belongs
// to the callee.
func TestCallWhereThingsRun(t *testing.T) {
	g := started(t, 3)
	type where struct{ fnOn, thenOn int }
	got := on(t, g, 0, func(ctx context.Context) (where, error) {
		f := shard.Call(g, 2, func() (int, error) {
			i, _ := g.Current()
			return i, nil
		})
		if f.Executor() != g.Shard(0) {
			return where{}, errors.New("future from shard 0 does not belong to shard 0")
		}
		then := future.Then(f, func(fnOn int) (where, error) {
			i, _ := g.Current()
			return where{fnOn, i}, nil
		})
		return then.Await(ctx)
	})
	if got != (where{2, 0}) {
		t.Fatalf("fn ran on %d, Then on %d; want 2, 0", got.fnOn, got.thenOn)
	}
	f := shard.Call(g, 1, func() (bool, error) { return g.Shard(1).OnLoop(), nil })
	if f.Executor() != g.Shard(1) {
		t.Fatal("future from a goroutine does not belong to the callee")
	}
	if ok, err := spindletest.Await(t, f); !ok || err != nil {
		t.Fatalf("fn from a goroutine: on shard 1 = %v, %v", ok, err)
	}
	if _, ok := g.Current(); ok {
		t.Fatal("Current true on the test goroutine")
	}
}

// Values, errors and panics cross, both to another shard and to the
// caller's own, and the loops keep serving.
func TestCallResults(t *testing.T) {
	errBoom := errors.New("boom")
	g := started(t, 2)
	for _, to := range []int{1, 0} {
		on(t, g, 0, func(ctx context.Context) (int, error) {
			v, err := shard.Call(g, to, func() (int, error) { return 42, nil }).Await(ctx)
			if v != 42 || err != nil {
				t.Errorf("to %d: value %d, %v", to, v, err)
			}
			_, err = shard.Call(g, to, func() (int, error) { return 0, errBoom }).Await(ctx)
			if !errors.Is(err, errBoom) {
				t.Errorf("to %d: error %v, want %v", to, err, errBoom)
			}
			_, err = shard.Call(g, to, func() (int, error) { panic("kaput") }).Await(ctx)
			var pe *future.PanicError
			if !errors.As(err, &pe) || pe.Value != "kaput" || len(pe.Stack) == 0 {
				t.Errorf("to %d: panic gave %v, want a *future.PanicError", to, err)
			}
			v, err = shard.CallWith(g, to, 20, func(a int) (int, error) { return a + 1, nil }).Await(ctx)
			if v != 21 || err != nil {
				t.Errorf("to %d: CallWith gave %d, %v", to, v, err)
			}
			return 0, nil
		})
	}
}

// A panic in the middle of a batch fails that call alone: the calls
// around it in the same batch complete.
func TestPanicInBatch(t *testing.T) {
	g := started(t, 2)
	errs := on(t, g, 0, func(ctx context.Context) ([]error, error) {
		fs := make([]*future.Future[int], 40)
		for i := range fs {
			fs[i] = shard.Call(g, 1, func() (int, error) {
				if i%10 == 5 {
					panic(i)
				}
				return i, nil
			})
		}
		var errs []error
		for i, f := range fs {
			v, err := f.Await(ctx)
			if err != nil {
				errs = append(errs, err)
			} else if v != i {
				t.Errorf("call %d returned %d", i, v)
			}
		}
		return errs, nil
	})
	if len(errs) != 4 {
		t.Fatalf("%d calls failed, want 4: %v", len(errs), errs)
	}
}
