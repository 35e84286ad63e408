package future_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// chainAllocs returns the allocations of building and running one chain of
// depth Then links on the loop.
func chainAllocs(t *testing.T, a executor.Allocation, depth int) float64 {
	ex := executor.New(executor.WithAllocation(a))
	defer ex.Close()
	add := func(v int) (int, error) { return v + 1, nil }
	var tail *future.Future[int]
	build := func() {
		p := future.NewPromise[int](ex)
		f := p.Future()
		for range depth {
			f = future.Then(f, add)
		}
		p.Resolve(0)
		tail = f
	}
	run := func() {
		ex.Submit(build)
		ex.RunUntilIdle()
		if v, err := tail.Await(context.Background()); v != depth || err != nil {
			t.Fatalf("chain = %d, %v", v, err)
		}
	}
	run()
	return testing.AllocsPerRun(50, run)
}

func TestAllocationOptionReducesAllocs(t *testing.T) {
	if spindletest.RaceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	const depth = 256
	heap := chainAllocs(t, executor.AllocHeap, depth)
	slab := chainAllocs(t, executor.AllocSlab, depth)
	t.Logf("allocs per %d-link chain: heap %.1f, slab %.1f", depth, heap, slab)
	if heap < depth {
		t.Fatalf("heap: %.1f allocs for %d links, want at least one per link", heap, depth)
	}
	if slab > heap/8 {
		t.Fatalf("slab: %.1f allocs for %d links, want at most an eighth of heap's %.1f", slab, depth, heap)
	}
}

// Futures that come from a slab stay intact and distinct while many more are
// made and the collector runs: a chunk lives while any of its futures does,
// and the slab never hands an object out twice.
func TestSlabFuturesHeldAcrossAllocation(t *testing.T) {
	ex := executor.New(executor.WithAllocation(executor.AllocSlab))
	defer ex.Close()
	const held = 1000
	kept := make([]*future.Future[int], 0, held)
	ex.Submit(func() {
		for i := range 100 * held {
			f := future.Resolved(ex, i)
			g := future.Then(f, func(v int) (int, error) { return v * 2, nil })
			if i%100 == 0 {
				kept = append(kept, g)
			}
		}
	})
	ex.RunUntilIdle()
	runtime.GC()
	runtime.GC()
	seen := map[*future.Future[int]]bool{}
	for k, f := range kept {
		if seen[f] {
			t.Fatalf("future %d handed out twice", k)
		}
		seen[f] = true
		v, err := f.Await(context.Background())
		if err != nil || v != 2*100*k {
			t.Fatalf("held future %d = %d, %v; want %d", k, v, err, 2*100*k)
		}
	}
}

func TestAllocationFromForeignGoroutineUsesHeap(t *testing.T) {
	// Off the loop a slab (loop-owned) must not be touched: futures made here
	// come from the heap, and -race would report a slab shared across
	// goroutines.
	ex := executor.New(executor.WithAllocation(executor.AllocSlab))
	ex.Start()
	defer ex.Close()
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				p := future.NewPromise[int](ex)
				f := future.Then(p.Future(), func(v int) (int, error) { return v + 1, nil })
				p.Resolve(i)
				if v, err := f.Await(context.Background()); v != i+1 || err != nil {
					t.Errorf("got %d, %v", v, err)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
