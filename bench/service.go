package main

// BenchmarkService: the service path. 64 handler goroutines each serve
// requests that update shared state (one map entry) and then do about a
// microsecond of their own work. spindle keeps the map on the loop and each
// request reaches it with future.Do (spindle_call: future.Call(...).Await);
// mutex guards the map with
// a sync.Mutex; chan_actor keeps it in one goroutine fed by a channel, with
// a reply channel per handler. ns/req is wall time per request over all
// handlers.

import (
	"context"
	"sync"
	"testing"

	"github.com/spindle-rt/spindle/bench/internal/cputime"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

func init() {
	register(
		benchCase{Group: "Service", Name: "spindle", Unit: "req", Baseline: "chan_actor", Fn: serviceSpindle},
		benchCase{Group: "Service", Name: "spindle_call", Unit: "req", Baseline: "chan_actor", Kind: kindVariant, Fn: serviceSpindleCall},
		benchCase{Group: "Service", Name: "mutex", Unit: "req", Fn: serviceMutex},
		benchCase{Group: "Service", Name: "chan_actor", Unit: "req", Fn: serviceChanActor},
	)
}

// serviceHandlers is how many goroutines serve requests at once.
const serviceHandlers = 64

// serviceKeys is how many map entries the requests spread over.
const serviceKeys = 1024

// ownWorkRounds makes ownWork last about a microsecond on the development
// machine (0.6-1 µs: one round is three dependent shift-xor steps).
const ownWorkRounds = 200

// ownWork is a request's work of its own: CPU time that needs no shared
// state. Its result is kept so the compiler cannot drop it.
func ownWork(seed uint64) uint64 {
	x := seed | 1
	for range ownWorkRounds {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// sink keeps ownWork's results alive.
var sink struct {
	sync.Mutex
	v uint64
}

// runHandlers runs b.N requests over serviceHandlers goroutines, calling
// serve(handler, request) for each, and reports ns/req and allocs/req, and
// cpu-ns/req: the process's CPU time per request, which other load on the
// machine disturbs less than wall time.
func runHandlers(b *testing.B, serve func(h, i int) uint64) {
	var wg sync.WaitGroup
	cpu0, cpuOK := cputime.Process()
	m := startMeter(b)
	for h := range serviceHandlers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var acc uint64
			for i := h; i < b.N; i += serviceHandlers {
				acc += serve(h, i)
			}
			sink.Lock()
			sink.v += acc
			sink.Unlock()
		}()
	}
	wg.Wait()
	m.Stop(b, "req", float64(b.N), -1)
	if cpu1, ok := cputime.Process(); ok && cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/req")
	}
}

// checkCountsOnLoop is checkCounts for counts that ex's loop owns: it
// reads them on the loop.
func checkCountsOnLoop(b *testing.B, ex *executor.Executor, counts map[int]int) {
	if _, err := future.Do(context.Background(), ex, func() (struct{}, error) { checkCounts(b, counts); return struct{}{}, nil }); err != nil {
		b.Fatal(err)
	}
}

// checkCounts fails b unless the counts add up to b.N.
func checkCounts(b *testing.B, counts map[int]int) {
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != b.N {
		b.Fatalf("state counts %d requests, want %d", total, b.N)
	}
}

// serviceSpindle: each request reaches the loop with future.Do. A handler
// makes its update func once and sets the key before each call, as a
// service would keep a per-connection handler, so a request allocates
// nothing.
func serviceSpindle(b *testing.B) {
	ex := newExecutor()
	ex.Start()
	defer ex.Close()
	counts := map[int]int{} // loop-owned
	ctx := context.Background()
	type handler struct {
		key    int
		update func() (struct{}, error)
	}
	hs := make([]handler, serviceHandlers)
	for i := range hs {
		h := &hs[i]
		h.update = func() (struct{}, error) {
			counts[h.key]++
			return struct{}{}, nil
		}
	}
	runHandlers(b, func(h, i int) uint64 {
		hs[h].key = i % serviceKeys
		if _, err := future.Do(ctx, ex, hs[h].update); err != nil {
			b.Error(err)
		}
		return ownWork(uint64(i))
	})
	checkCountsOnLoop(b, ex, counts)
}

// serviceSpindleCall: the same through future.Call(...).Await, which makes
// a future (and here a closure) per request.
func serviceSpindleCall(b *testing.B) {
	ex := newExecutor()
	ex.Start()
	defer ex.Close()
	counts := map[int]int{} // loop-owned
	ctx := context.Background()
	runHandlers(b, func(_, i int) uint64 {
		k := i % serviceKeys
		if _, err := future.Call(ex, func() (struct{}, error) {
			counts[k]++
			return struct{}{}, nil
		}).Await(ctx); err != nil {
			b.Error(err)
		}
		return ownWork(uint64(i))
	})
	checkCountsOnLoop(b, ex, counts)
}

func serviceMutex(b *testing.B) {
	var mu sync.Mutex
	counts := map[int]int{}
	runHandlers(b, func(_, i int) uint64 {
		mu.Lock()
		counts[i%serviceKeys]++
		mu.Unlock()
		return ownWork(uint64(i))
	})
	checkCounts(b, counts)
}

// actorReq is one request to the actor: the key to count and where to
// reply.
type actorReq struct {
	key   int
	reply chan struct{}
}

func serviceChanActor(b *testing.B) {
	reqs := make(chan actorReq, serviceHandlers)
	counts := map[int]int{} // owned by the actor goroutine
	done := make(chan struct{})
	go func() {
		for r := range reqs {
			counts[r.key]++
			r.reply <- struct{}{}
		}
		close(done)
	}()
	replies := make([]chan struct{}, serviceHandlers)
	for h := range replies {
		replies[h] = make(chan struct{}, 1)
	}
	runHandlers(b, func(h, i int) uint64 {
		reqs <- actorReq{key: i % serviceKeys, reply: replies[h]}
		<-replies[h]
		return ownWork(uint64(i))
	})
	close(reqs)
	<-done
	checkCounts(b, counts)
}
