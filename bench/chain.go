package main

// BenchmarkChain: Seastar's chain-wakeup test. Each iteration builds a chain
// of depth links on an unresolved promise, resolves (or fails) the head and
// runs the loop until the tail has completed. Figures are per link.

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

var errChain = errors.New("chain: failed")

// heap makes then_value and then_error allocate every link on its own, as
// Seastar's chain does; then_value_slab is the same chain on slabs (the
// executor's default, executor.DefaultAllocation). The await cases use the
// run's strategy (-alloc).
var heap = executor.WithAllocation(executor.AllocHeap)

func init() {
	for _, depth := range []int{8, 32} {
		g := fmt.Sprintf("depth=%d/", depth)
		base := g + "goroutines"
		register(
			benchCase{Group: "Chain", Name: g + "then_value", Unit: "link", Baseline: base, Fn: func(b *testing.B) { chainThen(b, depth, false, heap) }},
			benchCase{Group: "Chain", Name: g + "then_error", Unit: "link", Baseline: base, Fn: func(b *testing.B) { chainThen(b, depth, true, heap) }},
			benchCase{Group: "Chain", Name: g + "then_value_slab", Unit: "link", Baseline: base, Fn: func(b *testing.B) {
				chainThen(b, depth, false, executor.WithAllocation(executor.AllocSlab))
			}},
			benchCase{Group: "Chain", Name: g + "await_value", Unit: "link", Baseline: base, Fn: func(b *testing.B) { chainAwait(b, depth, false) }},
			benchCase{Group: "Chain", Name: g + "await_error", Unit: "link", Baseline: base, Fn: func(b *testing.B) { chainAwait(b, depth, true) }},
			benchCase{Group: "Chain", Name: base, Unit: "link", Fn: func(b *testing.B) { chainGoroutines(b, depth) }},
		)
	}
}

func addOne(v int) (int, error) { return v + 1, nil }

// link extends a chain by one link.
type link func(ex *executor.Executor, f *future.Future[int]) *future.Future[int]

// thenLink is one Then link.
func thenLink(_ *executor.Executor, f *future.Future[int]) *future.Future[int] {
	return future.Then(f, addOne)
}

// awaitLink is one spawned task awaiting the previous link's future and
// returning its value plus one.
func awaitLink(ex *executor.Executor, prev *future.Future[int]) *future.Future[int] {
	return future.Spawn(ex, func(ctx context.Context) (int, error) {
		v, err := prev.Await(ctx)
		return v + 1, err
	})
}

// chainThen: depth Then links.
func chainThen(b *testing.B, depth int, fail bool, opts ...executor.Option) {
	runChain(b, depth, fail, thenLink, opts...)
}

// chainAwait: depth spawned tasks, each awaiting the previous link.
func chainAwait(b *testing.B, depth int, fail bool) {
	runChain(b, depth, fail, awaitLink)
}

// runChain builds a chain of depth links on an unresolved promise on the
// loop (ex.Drive), resolves or fails its head, and runs the loop until the
// tail has completed, b.N times.
func runChain(b *testing.B, depth int, fail bool, next link, opts ...executor.Option) {
	ex := newExecutor(opts...)
	defer ex.Close()
	var tail *future.Future[int]
	build := func() {
		p := future.NewPromise[int](ex)
		f := p.Future()
		for range depth {
			f = next(ex, f)
		}
		tail = f
		if fail {
			p.Reject(errChain)
		} else {
			p.Resolve(0)
		}
	}
	ex.Drive(build) // warm up (and fill the pool of task goroutines)
	t0 := ex.Stats().TasksRun
	m := startMeter(b)
	for range b.N {
		ex.Drive(build)
		checkChain(b, tail, depth, fail)
	}
	m.Stop(b, "link", float64(b.N*depth), float64(ex.Stats().TasksRun-t0))
}

func checkChain(b *testing.B, f *future.Future[int], depth int, fail bool) {
	r, ok := f.Peek()
	switch {
	case !ok:
		b.Fatal("chain tail not complete after the loop went idle")
	case fail && !errors.Is(r.Err, errChain):
		b.Fatalf("chain tail: err %v, want %v", r.Err, errChain)
	case !fail && (r.Err != nil || r.Value != depth):
		b.Fatalf("chain tail: %d, %v; want %d", r.Value, r.Err, depth)
	}
}

type chainMsg struct {
	v   int
	err error
}

// chainGoroutines: the plain-Go chain: depth goroutines, each waiting on a
// channel for the previous link's result and sending its own on.
func chainGoroutines(b *testing.B, depth int) {
	m := startMeter(b)
	for range b.N {
		head := make(chan chainMsg, 1)
		in := head
		for range depth {
			out := make(chan chainMsg, 1)
			go func(in <-chan chainMsg, out chan<- chainMsg) {
				msg := <-in
				if msg.err == nil {
					msg.v++
				}
				out <- msg
			}(in, out)
			in = out
		}
		head <- chainMsg{}
		if msg := <-in; msg.v != depth {
			b.Fatalf("goroutine chain: %d, want %d", msg.v, depth)
		}
	}
	m.Stop(b, "link", float64(b.N*depth), -1)
}
