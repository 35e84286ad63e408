package main

// BenchmarkParallel, BenchmarkImmediate, BenchmarkChannel: Boost.Cobalt's
// channel benchmarks, per operation (one item moved from a sender to a
// receiver), each against the plain-Go way of doing the same exchange.

import (
	"context"
	"testing"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

func init() {
	register(
		benchCase{Group: "Parallel", Name: "spindle", Unit: "op", Baseline: "go_chan", Fn: parallelSpindle},
		benchCase{Group: "Parallel", Name: "go_chan", Unit: "op", Fn: goChanPair},
		benchCase{Group: "Immediate", Name: "spindle", Unit: "op", Baseline: "go_chan", Fn: immediateSpindle},
		benchCase{Group: "Immediate", Name: "go_chan", Unit: "op", Fn: immediateGoChan},
		benchCase{Group: "Channel", Name: "spindle", Unit: "op", Baseline: "go_chan", Fn: channelSpindle},
		benchCase{Group: "Channel", Name: "go_chan", Unit: "op", Fn: goChanPair},
	)
}

// warmTasks runs n tasks that are suspended at the same time, so that the
// executor's pool holds n task goroutines before the measured run.
func warmTasks(b *testing.B, ex *executor.Executor, n int) {
	p := future.NewPromise[int](ex)
	fs := make([]*future.Future[int], n)
	for i := range fs {
		fs[i] = future.Spawn(ex, func(ctx context.Context) (int, error) { return p.Future().Await(ctx) })
	}
	ex.RunUntilIdle()
	p.Resolve(0)
	ex.RunUntilIdle()
	for _, f := range fs {
		if _, err := f.Await(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// finish runs the loop until it is idle, reports the figures and checks the
// task's result.
func finish(b *testing.B, ex *executor.Executor, m *meter, t0 uint64, f *future.Future[int], want int) {
	ex.RunUntilIdle()
	m.Stop(b, "op", float64(b.N), float64(ex.Stats().TasksRun-t0))
	r, ok := f.Peek()
	switch {
	case !ok:
		b.Fatal("task not complete after the loop went idle")
	case r.Err != nil:
		b.Fatal(r.Err)
	case r.Value != want:
		b.Fatalf("task result %d, want %d", r.Value, want)
	}
}

// parallelSpindle: one task gathers a receive and a send on a rendezvous
// channel per iteration (Cobalt's gather(read, write)): both operations are
// started before either is awaited, and the task goes on once both have
// completed. The receive waits for the send, which completes both.
func parallelSpindle(b *testing.B) {
	ex := newExecutor()
	defer ex.Close()
	c := channel.New[int](ex, 0)
	warmTasks(b, ex, 1)
	t0 := ex.Stats().TasksRun
	m := startMeter(b)
	f := future.Spawn(ex, func(ctx context.Context) (int, error) {
		sum := 0
		for i := range b.N {
			r := c.Recv()
			s := c.Send(i)
			v, err := gather(ctx, r, s)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	finish(b, ex, m, t0, f, b.N*(b.N-1)/2)
}

// gather waits for both futures (the equivalent of future.All for a pair of
// different types) and returns r's value or the first error.
func gather[T, U any](ctx context.Context, r *future.Future[T], s *future.Future[U]) (T, error) {
	v, err := r.Await(ctx)
	if _, err2 := s.Await(ctx); err == nil {
		err = err2
	}
	return v, err
}

// immediateSpindle: a task sends and then receives on a capacity-1 channel
// and awaits both futures; both complete at once.
func immediateSpindle(b *testing.B) {
	ex := newExecutor()
	defer ex.Close()
	c := channel.New[int](ex, 1)
	warmTasks(b, ex, 1)
	t0 := ex.Stats().TasksRun
	m := startMeter(b)
	f := future.Spawn(ex, func(ctx context.Context) (int, error) {
		sum := 0
		for i := range b.N {
			s := c.Send(i)
			r := c.Recv()
			if _, err := s.Await(ctx); err != nil {
				return 0, err
			}
			v, err := r.Await(ctx)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	finish(b, ex, m, t0, f, b.N*(b.N-1)/2)
}

// immediateGoChan: the same on a buffered Go channel in one goroutine.
func immediateGoChan(b *testing.B) {
	ch := make(chan int, 1)
	sum := 0
	m := startMeter(b)
	for i := range b.N {
		ch <- i
		sum += <-ch
	}
	m.Stop(b, "op", float64(b.N), -1)
	if sum != b.N*(b.N-1)/2 {
		b.Fatalf("sum %d", sum)
	}
}

// channelSpindle: a writer task and a reader task pass b.N items through a
// rendezvous channel, waiting in place (SendWait, and a range over All).
func channelSpindle(b *testing.B) {
	ex := newExecutor()
	defer ex.Close()
	c := channel.New[int](ex, 0)
	warmTasks(b, ex, 2)
	t0 := ex.Stats().TasksRun
	m := startMeter(b)
	w := future.Spawn(ex, func(ctx context.Context) (int, error) {
		for i := range b.N {
			if err := c.SendWait(ctx, i); err != nil {
				return 0, err
			}
		}
		c.Close()
		return 0, nil
	})
	r := future.Spawn(ex, func(ctx context.Context) (int, error) {
		sum := 0
		for v := range c.All(ctx) {
			sum += v
		}
		return sum, ctx.Err()
	})
	finish(b, ex, m, t0, r, b.N*(b.N-1)/2)
	if _, err := w.Await(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// goChanPair: the plain-Go exchange: a writer goroutine sends b.N items
// over an unbuffered channel to a reader goroutine. It is the baseline of
// both Parallel (an unbuffered send completes together with its receive)
// and Channel.
func goChanPair(b *testing.B) {
	ch := make(chan int)
	res := make(chan int)
	m := startMeter(b)
	go func() {
		for i := range b.N {
			ch <- i
		}
		close(ch)
	}()
	go func() {
		sum := 0
		for v := range ch {
			sum += v
		}
		res <- sum
	}()
	sum := <-res
	m.Stop(b, "op", float64(b.N), -1)
	if sum != b.N*(b.N-1)/2 {
		b.Fatalf("sum %d", sum)
	}
}
