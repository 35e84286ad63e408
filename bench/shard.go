package main

// BenchmarkShard: more than one loop. How work on independent shards
// scales with the number of cores, what a call from one shard to another
// costs against handing the same call to a loop from a goroutine, and a
// sharded map of counters against the shared ways of keeping one.

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/shard"
)

func init() {
	register(
		benchCase{Group: "Shard", Name: "independent/shards=1", Unit: "op", Fn: func(b *testing.B) { shardIndependent(b, 1) }},
		benchCase{Group: "Shard", Name: "independent/shards=max", Unit: "op", Baseline: "independent/shards=1",
			Fn: func(b *testing.B) { shardIndependent(b, runtime.GOMAXPROCS(0)) }},
		benchCase{Group: "Shard", Name: "call_cross", Unit: "op", Baseline: "call_submit", Fn: shardCallCross},
		benchCase{Group: "Shard", Name: "call_submit", Unit: "op", Fn: shardCallSubmit},
		benchCase{Group: "Shard", Name: "send_cross", Unit: "op", Baseline: "call_submit", Fn: shardSendCross},
		benchCase{Group: "Shard", Name: "counter_sharded", Unit: "op", Baseline: "counter_mutex", Fn: counterSharded},
		benchCase{Group: "Shard", Name: "counter_invoke", Unit: "op", Baseline: "counter_mutex", Fn: counterInvoke},
		benchCase{Group: "Shard", Name: "counter_mutex", Unit: "op", Fn: counterMutex},
		benchCase{Group: "Shard", Name: "counter_syncmap", Unit: "op", Baseline: "counter_mutex", Fn: counterSyncMap},
	)
}

// newGroup returns a started group of n shards for a case.
func newGroup(n int) *shard.Group {
	g := shard.New(n, executor.WithAllocation(allocation))
	g.Start()
	return g
}

// tasksRun sums the tasks run by g's shards.
func tasksRun(g *shard.Group) (n uint64) {
	for i := range g.Len() {
		n += g.Shard(i).Stats().TasksRun
	}
	return n
}

// spin is the CPU-light work of one item: a few dozen dependent
// multiply-xorshift rounds, no memory traffic.
func spin(x uint64) uint64 {
	for range 24 {
		x ^= x >> 29
		x *= 0xbf58476d1ce4e5b9
	}
	return x
}

// shardIndependent: every shard runs b.N items of the same work, each a
// callback that posts the next, with nothing shared. ns/op is per item
// over all shards, so shards=1 ÷ shards=max is the scaling.
func shardIndependent(b *testing.B, shards int) {
	g := newGroup(shards)
	defer g.Close()
	var wg sync.WaitGroup
	sink := make([]uint64, shards*8) // one cache line per shard
	start := func(i int) {
		ex := g.Shard(i)
		x, n := uint64(i+1), 0
		var step func()
		step = func() {
			x = spin(x)
			if n++; n < b.N {
				ex.Post(step)
				return
			}
			sink[i*8] = x
			wg.Done()
		}
		if err := ex.Submit(step); err != nil {
			b.Fatal(err)
		}
	}
	t0 := tasksRun(g)
	wg.Add(shards)
	m := startMeter(b)
	for i := range shards {
		start(i)
	}
	wg.Wait()
	m.Stop(b, "op", float64(b.N*shards), float64(tasksRun(g)-t0))
}

// callsPerRound is how many calls call_cross and call_submit make before
// they await them all.
const callsPerRound = 1000

// shardCallCross: a task on shard 0 makes 1,000 calls to shard 1 and awaits
// them all, b.N/1000 times (at least once). ns/op is per call.
func shardCallCross(b *testing.B) {
	g := newGroup(2)
	defer g.Close()
	rounds := max(1, b.N/callsPerRound)
	n := 0 // shard 1's
	work := func() (int, error) { n++; return n, nil }
	t0 := tasksRun(g)
	m := startMeter(b)
	f := future.Spawn(g.Shard(0), func(ctx context.Context) (int, error) {
		fs := make([]*future.Future[int], 0, callsPerRound)
		for range rounds {
			fs = fs[:0]
			for range callsPerRound {
				fs = append(fs, shard.Call(g, 1, work))
			}
			if err := awaitEach(ctx, fs); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	if _, err := f.Await(context.Background()); err != nil {
		b.Fatal(err)
	}
	m.Stop(b, "op", float64(rounds*callsPerRound), float64(tasksRun(g)-t0))
}

// shardCallSubmit: the same calls from a goroutine, through future.Call
// and Await.
func shardCallSubmit(b *testing.B) {
	g := newGroup(2)
	defer g.Close()
	rounds := max(1, b.N/callsPerRound)
	n := 0
	work := func() (int, error) { n++; return n, nil }
	ex := g.Shard(1)
	fs := make([]*future.Future[int], 0, callsPerRound)
	t0 := tasksRun(g)
	m := startMeter(b)
	for range rounds {
		fs = fs[:0]
		for range callsPerRound {
			fs = append(fs, future.Call(ex, work))
		}
		if err := awaitEach(context.Background(), fs); err != nil {
			b.Fatal(err)
		}
	}
	m.Stop(b, "op", float64(rounds*callsPerRound), float64(tasksRun(g)-t0))
}

// shardSendCross: the one-way form of call_cross: a task on shard 0 sends
// 1,000 functions to shard 1 with shard.Send, then makes one call behind
// them and awaits it, b.N/1000 times. ns/op is per message.
func shardSendCross(b *testing.B) {
	g := newGroup(2)
	defer g.Close()
	rounds := max(1, b.N/callsPerRound)
	n := 0 // shard 1's
	work := func() { n++ }
	t0 := tasksRun(g)
	m := startMeter(b)
	f := future.Spawn(g.Shard(0), func(ctx context.Context) (int, error) {
		for range rounds {
			for range callsPerRound {
				if err := shard.Send(g, 1, work); err != nil {
					return 0, err
				}
			}
			if _, err := shard.Call(g, 1, func() (int, error) { return n, nil }).Await(ctx); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	if _, err := f.Await(context.Background()); err != nil {
		b.Fatal(err)
	}
	m.Stop(b, "op", float64(rounds*callsPerRound), float64(tasksRun(g)-t0))
	if v, err := shard.Call(g, 1, func() (int, error) { return n, nil }).Await(context.Background()); err != nil || v != rounds*callsPerRound {
		b.Fatalf("shard 1 ran %d sends (%v), want %d", v, err, rounds*callsPerRound)
	}
}

// awaitEach awaits every future of fs.
func awaitEach[T any](ctx context.Context, fs []*future.Future[T]) error {
	for _, f := range fs {
		if _, err := f.Await(ctx); err != nil {
			return err
		}
	}
	return nil
}

// counterKeys is the number of keys the counter cases increment.
const counterKeys = 4096

// counterBatch is how many increments a shard of counter_sharded makes
// per batch: it awaits a batch once it has made the next, so the owners
// always have a batch to work on.
const counterBatch = 256

// counterWindow is how many increments a producer of counter_sharded
// may have in flight: at the end of each window it sends every other
// shard a marker call behind its updates and awaits the markers of the
// window before, so the owners are never more than two windows behind.
const counterWindow = 16 * counterBatch

// counts is one shard's part of the sharded counter map.
type counts map[uint64]int

// incr is the increment counter_invoke sends to a key's owner. It
// captures nothing, so a call allocates nothing for it.
func incr(c *counts, key uint64) (struct{}, error) {
	(*c)[key]++
	return struct{}{}, nil
}

// newCounters returns the sharded counter map of p shards.
func newCounters(g *shard.Group, p int) *shard.Sharded[counts] {
	return shard.NewSharded(g, func(int) *counts { c := make(counts, 2*counterKeys/p); return &c })
}

// bump is the increment counter_sharded sends to a key's owner. It
// captures nothing, so an update allocates nothing for it.
func bump(c *counts, key uint64) { (*c)[key]++ }

// counterSharded: every shard is a producer; each increment of a random
// key goes to the key's owner as a one-way update (shard.Updater: the key
// travels in the owner's batch of updates, no future, no reply), and the
// producer lets its loop run every 256 increments. Its updates are
// flow-controlled, as a real producer's must be (counterWindow): without
// that a producer whose peer lost its core for a moment ran ahead by
// millions of updates, and the case measured the allocation and garbage
// collection of that backlog (tens of MB/s of update batches; 0.9x to 1.8x
// counter_mutex from run to run) rather than the updates. At the end each
// producer makes one call to every shard, behind its updates, so that all
// of them have been applied when it returns. ns/op is per increment over
// all producers.
func counterSharded(b *testing.B) {
	p := runtime.GOMAXPROCS(0)
	g := newGroup(p)
	defer g.Close()
	s := newCounters(g, p)
	nop := func() (struct{}, error) { return struct{}{}, nil }
	produce := func(ctx context.Context) (int, error) {
		me, _ := g.Current()
		rng := rand.New(rand.NewPCG(uint64(me), 1))
		u := shard.NewUpdater(s, bump)
		prev := make([]*future.Future[struct{}], 0, g.Len())
		cur := make([]*future.Future[struct{}], 0, g.Len())
		for i := range b.N {
			k := rng.Uint64N(counterKeys)
			if err := u.Update(g.Of(k), k); err != nil {
				return 0, err
			}
			if i%counterBatch == counterBatch-1 {
				// Let the loop run what arrived (as a handler that returns
				// to its loop would), so batches circulate.
				if err := future.Yield(ctx); err != nil {
					return 0, err
				}
			}
			if i%counterWindow == counterWindow-1 {
				for j := range g.Len() {
					if j != me {
						cur = append(cur, shard.Call(g, j, nop))
					}
				}
				if err := awaitEach(ctx, prev); err != nil {
					return 0, err
				}
				prev, cur = cur, prev[:0]
			}
		}
		for i := range g.Len() {
			if _, err := shard.Call(g, i, nop).Await(ctx); err != nil {
				return 0, err
			}
		}
		return 0, nil
	}
	runCounters(b, g, s, p, produce)
}

// counterInvoke: counter_sharded with the two-way form: each increment is
// a call (InvokeWith: the key travels in the call) whose future the
// producer awaits in batches of 256, one batch behind.
func counterInvoke(b *testing.B) {
	p := runtime.GOMAXPROCS(0)
	g := newGroup(p)
	defer g.Close()
	s := newCounters(g, p)
	produce := func(ctx context.Context) (int, error) {
		me, _ := g.Current()
		rng := rand.New(rand.NewPCG(uint64(me), 1))
		cur := make([]*future.Future[struct{}], 0, counterBatch)
		prev := make([]*future.Future[struct{}], 0, counterBatch)
		for range b.N {
			k := rng.Uint64N(counterKeys)
			cur = append(cur, shard.InvokeWith(s, g.Of(k), k, incr))
			if len(cur) == counterBatch {
				if err := awaitEach(ctx, prev); err != nil {
					return 0, err
				}
				prev, cur = cur, prev[:0]
			}
		}
		if err := awaitEach(ctx, prev); err != nil {
			return 0, err
		}
		return 0, awaitEach(ctx, cur)
	}
	runCounters(b, g, s, p, produce)
}

// runCounters runs produce as a task on each of the p shards of g, and
// checks that s counted b.N increments for each.
func runCounters(b *testing.B, g *shard.Group, s *shard.Sharded[counts], p int, produce func(ctx context.Context) (int, error)) {
	fs := make([]*future.Future[int], p)
	t0 := tasksRun(g)
	m := startMeter(b)
	for i := range fs {
		fs[i] = future.Spawn(g.Shard(i), produce)
	}
	if err := awaitEach(context.Background(), fs); err != nil {
		b.Fatal(err)
	}
	m.Stop(b, "op", float64(b.N*p), float64(tasksRun(g)-t0))
	total, err := shard.MapReduce(s, func(c *counts) (int, error) {
		n := 0
		for _, v := range *c {
			n += v
		}
		return n, nil
	}, 0, func(a, n int) int { return a + n }).Await(context.Background())
	if err != nil || total != b.N*p {
		b.Fatalf("counted %d (%v), want %d", total, err, b.N*p)
	}
}

// counterProducers runs GOMAXPROCS goroutines that each call incr b.N
// times with random keys, and reports per increment.
func counterProducers(b *testing.B, incr func(key uint64)) {
	p := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	m := startMeter(b)
	for w := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range b.N {
				incr(rng.Uint64N(counterKeys))
			}
		}()
	}
	wg.Wait()
	m.Stop(b, "op", float64(b.N*p), -1)
}

// counterMutex: one map behind a sync.Mutex.
func counterMutex(b *testing.B) {
	var mu sync.Mutex
	c := make(map[uint64]int, counterKeys)
	counterProducers(b, func(k uint64) {
		mu.Lock()
		c[k]++
		mu.Unlock()
	})
	if n := sum(c); n != b.N*runtime.GOMAXPROCS(0) {
		b.Fatalf("counted %d, want %d", n, b.N*runtime.GOMAXPROCS(0))
	}
}

// counterSyncMap: a sync.Map of atomic counters.
func counterSyncMap(b *testing.B) {
	var c sync.Map
	counterProducers(b, func(k uint64) {
		v, ok := c.Load(k)
		if !ok {
			v, _ = c.LoadOrStore(k, new(atomic.Int64))
		}
		v.(*atomic.Int64).Add(1)
	})
	n := 0
	c.Range(func(_, v any) bool { n += int(v.(*atomic.Int64).Load()); return true })
	if n != b.N*runtime.GOMAXPROCS(0) {
		b.Fatalf("counted %d, want %d", n, b.N*runtime.GOMAXPROCS(0))
	}
}

func sum(c map[uint64]int) (n int) {
	for _, v := range c {
		n += v
	}
	return n
}
