package main

// BenchmarkPost: the cost of handing one unit of work to the loop.

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/spindle-rt/spindle/future"
)

func init() {
	register(
		benchCase{Group: "Post", Name: "callback", Unit: "op", Baseline: "go_chan", Fn: postCallback},
		benchCase{Group: "Post", Name: "task_yield", Unit: "op", Baseline: "gosched", Fn: postTaskYield},
		benchCase{Group: "Post", Name: "submit", Unit: "op", Baseline: "go_chan", Fn: postSubmit},
		benchCase{Group: "Post", Name: "go_chan", Unit: "op", Fn: postGoChan},
		benchCase{Group: "Post", Name: "gosched", Unit: "op", Fn: postGosched},
	)
}

// postCallback: a callback on the loop posts the next callback, b.N times.
func postCallback(b *testing.B) {
	ex := newExecutor()
	defer ex.Close()
	n := 0
	var step func()
	step = func() {
		n++
		if n < b.N {
			ex.Post(step)
		}
	}
	t0 := ex.Stats().TasksRun
	m := startMeter(b)
	ex.Drive(step)
	m.Stop(b, "op", float64(b.N), float64(ex.Stats().TasksRun-t0))
	if n != b.N {
		b.Fatalf("ran %d callbacks, want %d", n, b.N)
	}
}

// postTaskYield: a spawned task yields to the loop b.N times (Cobalt's post
// benchmark).
func postTaskYield(b *testing.B) {
	ex := newExecutor()
	defer ex.Close()
	warm := future.Spawn(ex, func(ctx context.Context) (int, error) { return 0, future.Yield(ctx) })
	ex.RunUntilIdle()
	if _, err := warm.Await(context.Background()); err != nil {
		b.Fatal(err)
	}
	t0 := ex.Stats().TasksRun
	m := startMeter(b)
	f := future.Spawn(ex, func(ctx context.Context) (int, error) {
		for range b.N {
			if err := future.Yield(ctx); err != nil {
				return 0, err
			}
		}
		return b.N, nil
	})
	ex.RunUntilIdle()
	m.Stop(b, "op", float64(b.N), float64(ex.Stats().TasksRun-t0))
	if v, err := f.Await(context.Background()); err != nil || v != b.N {
		b.Fatalf("task: %d, %v", v, err)
	}
}

// postSubmit: this goroutine submits b.N callbacks while the loop runs on its
// own goroutine.
func postSubmit(b *testing.B) {
	ex := newExecutor()
	ex.Start()
	n := 0
	done := make(chan struct{})
	fn := func() {
		n++
		if n == b.N {
			close(done)
		}
	}
	m := startMeter(b)
	for range b.N {
		if err := ex.Submit(fn); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	m.Stop(b, "op", float64(b.N), -1)
	ex.Close()
}

// postGoChan: the plain-Go way: this goroutine sends b.N funcs over a
// buffered channel to a worker goroutine that runs them.
func postGoChan(b *testing.B) {
	work := make(chan func(), 1024)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for fn := range work {
			fn()
		}
	}()
	n := 0
	fn := func() { n++ }
	m := startMeter(b)
	for range b.N {
		work <- fn
	}
	close(work)
	wg.Wait()
	m.Stop(b, "op", float64(b.N), -1)
	if n != b.N {
		b.Fatalf("ran %d funcs, want %d", n, b.N)
	}
}

// postGosched: a goroutine calls runtime.Gosched b.N times while a second
// goroutine does the same, so each yield really switches goroutines.
func postGosched(b *testing.B) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	m := startMeter(b)
	for range b.N {
		runtime.Gosched()
	}
	m.Stop(b, "op", float64(b.N), -1)
	close(stop)
	wg.Wait()
}
