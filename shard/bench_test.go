package shard_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/shard"
)

// BenchmarkTransport measures the lanes end to end, per call.
//
//	one_way:   a task on shard 0 makes 1,000 calls to shard 1 and awaits
//	           them all (call_cross of the bundled suite), b.N/1000 times
//	both_ways: the same from shard 0 to 1 and from 1 to 0 at once
//	driven:    one goroutine drives both loops in turn (RunUntilIdle), so
//	           no loop ever sleeps or wakes: the CPU a call costs
func BenchmarkTransport(b *testing.B) {
	for _, pairs := range []int{1, 2} {
		name := map[int]string{1: "one_way", 2: "both_ways"}[pairs]
		b.Run(name, func(b *testing.B) {
			g := shard.New(2)
			g.Start()
			defer g.Close()
			rounds := max(1, b.N/1000)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for from := range pairs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					task := future.Spawn(g.Shard(from), func(ctx context.Context) (int, error) {
						return burst(ctx, g, 1-from, rounds)
					})
					if _, err := task.Await(context.Background()); err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			reportPerCall(b, rounds*1000*pairs)
		})
	}
	b.Run("driven", func(b *testing.B) {
		g := shard.New(2)
		defer g.Close()
		rounds := max(1, b.N/1000)
		b.ReportAllocs()
		b.ResetTimer()
		for range rounds {
			var last *future.Future[int]
			g.Shard(0).Drive(func() {
				for range 1000 {
					last = shard.Call(g, 1, func() (int, error) { return 0, nil })
				}
			})
			for !last.Ready() {
				g.Shard(1).RunUntilIdle()
				g.Shard(0).RunUntilIdle()
			}
		}
		b.StopTimer()
		reportPerCall(b, rounds*1000)
	})
}

// reportPerCall reports ns per call as ns/op (calls is b.N rounded down to
// whole rounds of 1,000, so testing's B/op and allocs/op are per call
// too, up to that rounding).
func reportPerCall(b *testing.B, calls int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(calls), "ns/op")
}

// burst makes rounds × 1,000 calls to shard to from a task, and awaits
// each round's calls before the next round.
func burst(ctx context.Context, g *shard.Group, to, rounds int) (int, error) {
	n := 0
	work := func() (int, error) { n++; return n, nil }
	fs := make([]*future.Future[int], 0, 1000)
	for range rounds {
		fs = fs[:0]
		for range 1000 {
			fs = append(fs, shard.Call(g, to, work))
		}
		for _, f := range fs {
			if _, err := f.Await(ctx); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// BenchmarkCounterBatched is counter_sharded of the bundled suite with
// coarse calls: every shard increments b.N random keys of 4,096, but
// sends the owner of each key one call per 256 increments, carrying the
// owner's keys (InvokeWith), and awaits them one batch behind. ns/op is
// per increment over all shards; compare with counter_mutex.
func BenchmarkCounterBatched(b *testing.B) {
	const keys, batch = 4096, 256
	g := shard.New(0)
	g.Start()
	defer g.Close()
	type counts map[uint64]int
	s := shard.NewSharded(g, func(int) *counts { c := make(counts, keys/g.Len()); return &c })
	addAll := func(c *counts, ks []uint64) (int, error) {
		for _, k := range ks {
			(*c)[k]++
		}
		return len(ks), nil
	}
	produce := func(ctx context.Context) (int, error) {
		me, _ := g.Current()
		rng := rand.New(rand.NewPCG(uint64(me), 1))
		// Two sets of per-owner key slices: one being filled, one in
		// flight (its calls still read it).
		var bufs [2][][]uint64
		for i := range bufs {
			bufs[i] = make([][]uint64, g.Len())
		}
		var inflight []*future.Future[int]
		done, applied := 0, 0 // increments made, and applied by their owners
		await := func() error {
			for _, f := range inflight {
				n, err := f.Await(ctx)
				if err != nil {
					return err
				}
				applied += n
			}
			inflight = inflight[:0]
			return nil
		}
		for turn := 0; done < b.N; turn++ {
			cur := bufs[turn%2]
			n := min(batch, b.N-done)
			for range n {
				k := rng.Uint64N(keys)
				o := g.Of(k)
				cur[o] = append(cur[o], k)
			}
			done += n
			if err := await(); err != nil {
				return 0, err
			}
			prev := bufs[(turn+1)%2]
			for o := range prev {
				prev[o] = prev[o][:0]
			}
			for o, ks := range cur {
				if len(ks) > 0 {
					inflight = append(inflight, shard.InvokeWith(s, o, ks, addAll))
				}
			}
		}
		return applied, await()
	}
	b.ReportAllocs()
	b.ResetTimer()
	fs := make([]*future.Future[int], g.Len())
	for i := range fs {
		fs[i] = future.Spawn(g.Shard(i), produce)
	}
	total := 0
	for _, f := range fs {
		n, err := f.Await(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*g.Len()), "ns/op")
	if total != b.N*g.Len() {
		b.Fatalf("owners applied %d increments, want %d", total, b.N*g.Len())
	}
}
