package shard_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/shard"
)

// checkReleased fails unless every future has completed, with the value
// its index gives or with executor.ErrClosed, and returns how many failed.
func checkReleased(t *testing.T, fs []*future.Future[int]) (closed int) {
	t.Helper()
	for i, f := range fs {
		r, ok := f.Peek()
		switch {
		case !ok:
			t.Fatalf("call %d still pending after the group closed", i)
		case errors.Is(r.Err, executor.ErrClosed):
			closed++
		case r.Err != nil || r.Value != i:
			t.Fatalf("call %d: %d, %v", i, r.Value, r.Err)
		}
	}
	return closed
}

// Close while every shard has thousands of calls in flight to the others:
// Close returns, every call's future has completed (value or ErrClosed)
// and no goroutine is left (TestMain).
func TestCloseWithCallsInFlight(t *testing.T) {
	const shards, calls = 4, 5000
	g := shard.New(shards)
	g.Start()
	fs := make([][]*future.Future[int], shards) // fs[i] owned by shard i
	busy := make(chan struct{}, shards)
	for i := range shards {
		future.Spawn(g.Shard(i), func(ctx context.Context) (int, error) {
			rng := rand.New(rand.NewPCG(uint64(i), 0))
			for j := range calls {
				to := (i + 1 + rng.IntN(shards-1)) % shards
				fs[i] = append(fs[i], shard.Call(g, to, func() (int, error) { return j, nil }))
				if j == calls/10 {
					busy <- struct{}{}
				}
				if j%100 == 99 {
					if err := future.Yield(ctx); err != nil {
						return 0, err
					}
				}
			}
			return 0, nil
		})
	}
	for range shards {
		<-busy
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	closed := 0
	for i := range shards {
		closed += checkReleased(t, fs[i])
	}
	t.Logf("%d calls made, %d released with ErrClosed", shards*calls, closed)
}

// Shutdown lets a conversation between shards finish: a task on shard 0
// makes 300 round trips to shard 1 one after the other, and Shutdown,
// begun in the middle, waits for the last one, although shard 1's queue is
// empty between trips. Meanwhile calls from outside the group fail.
func TestShutdownLetsCrossShardWorkFinish(t *testing.T) {
	const trips = 300
	g := shard.New(2)
	g.Start()
	midway := make(chan struct{})
	task := future.Spawn(g.Shard(0), func(ctx context.Context) (int, error) {
		n := 0
		for i := range trips {
			v, err := shard.Call(g, 1, func() (int, error) { return n + 1, nil }).Await(ctx)
			if err != nil {
				return n, err
			}
			n = v
			if i == trips/3 {
				close(midway)
			}
		}
		return n, nil
	})
	<-midway
	shutdown := make(chan error, 1)
	go func() { shutdown <- g.Shutdown(spindletest.Context(t)) }()
	if n, err := spindletest.Await(t, task); n != trips || err != nil {
		t.Fatalf("task made %d trips (%v), want %d", n, err, trips)
	}
	if err := <-shutdown; err != nil {
		t.Fatal(err)
	}
	f := shard.Call(g, 1, func() (int, error) { return 1, nil })
	if r, ok := f.Peek(); !ok || !errors.Is(r.Err, executor.ErrClosed) {
		t.Fatalf("Call after Shutdown: %+v, %v; want a failed future", r, ok)
	}
}

// While the group drains, calls from outside it fail at once, and calls
// between its shards still run.
func TestCallFromOutsideWhileDraining(t *testing.T) {
	g := shard.New(2)
	g.Start()
	s := shard.NewSharded(g, func(int) *int { return new(int) })
	release := make(chan struct{})
	// A call that stays in flight until released keeps the group from
	// being quiet (its function blocks shard 1's loop: only in this test).
	hold := future.Spawn(g.Shard(0), func(ctx context.Context) (int, error) {
		return shard.Call(g, 1, func() (int, error) {
			<-release
			return 1, nil
		}).Await(ctx)
	})
	// Shutdown on a shard's loop begins draining and returns at once.
	begun, err := spindletest.Await(t, future.Call(g.Shard(0), func() (error, error) {
		return g.Shutdown(context.Background()), nil
	}))
	if begun != nil || err != nil {
		t.Fatalf("Shutdown on the loop: %v, %v", begun, err)
	}
	outside := []*future.Future[int]{
		shard.Call(g, 0, func() (int, error) { return 0, nil }),
		shard.Invoke(s, 1, func(*int) (int, error) { return 0, nil }),
	}
	all := shard.InvokeAll(s, func(*int) (int, error) { return 0, nil })
	for i, f := range outside {
		if r, ok := f.Peek(); !ok || !errors.Is(r.Err, executor.ErrClosed) {
			t.Errorf("outside call %d while draining: %+v, %v; want ErrClosed at once", i, r, ok)
		}
	}
	if r, ok := all.Peek(); !ok || !errors.Is(r.Err, executor.ErrClosed) {
		t.Errorf("InvokeAll from outside while draining: %+v, %v; want ErrClosed at once", r, ok)
	}
	close(release)
	if v, err := spindletest.Await(t, hold); v != 1 || err != nil {
		t.Fatalf("call between shards while draining: %d, %v", v, err)
	}
	if err := g.Shutdown(spindletest.Context(t)); err != nil {
		t.Fatal(err)
	}
}

// A Shutdown whose ctx has ended becomes a Close: it returns ctx.Err(),
// the group still closes, and everything in flight is released, while a
// goroutine keeps feeding a shard with work that calls another.
func TestShutdownCtxEndedBecomesClose(t *testing.T) {
	g := shard.New(2)
	g.Start()
	var fs []*future.Future[int] // owned by shard 0
	var feeder sync.WaitGroup
	feeder.Add(1)
	go func() {
		defer feeder.Done()
		for i := 0; ; i++ {
			err := g.Shard(0).Submit(func() {
				fs = append(fs, shard.Call(g, 1, func() (int, error) { return i, nil }))
			})
			if err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown with an ended ctx: %v", err)
	}
	<-g.Done()
	feeder.Wait()
	closed := checkReleased(t, fs)
	t.Logf("%d calls made, %d released with ErrClosed", len(fs), closed)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

// After Close everything fails at once; Close and Shutdown may be called
// again, and Close on a shard's loop returns at once.
func TestAfterClose(t *testing.T) {
	g := shard.New(3)
	g.Start()
	s := shard.NewSharded(g, func(int) *int { return new(int) })
	closedOnLoop, err := spindletest.Await(t, future.Call(g.Shard(2), func() (error, error) { return g.Close(), nil }))
	if closedOnLoop != nil || err != nil {
		t.Fatalf("Close on a shard's loop: %v, %v", closedOnLoop, err)
	}
	<-g.Done()
	for i, f := range []*future.Future[int]{
		shard.Call(g, 0, func() (int, error) { return 0, nil }),
		shard.Invoke(s, 1, func(*int) (int, error) { return 0, nil }),
		shard.MapReduce(s, func(*int) (int, error) { return 0, nil }, 0, func(a, b int) int { return a + b }),
	} {
		if r, ok := f.Peek(); !ok || !errors.Is(r.Err, executor.ErrClosed) {
			t.Errorf("call %d after Close: %+v, %v; want ErrClosed at once", i, r, ok)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spindletest.MustPanic(t, "shard: ", "Start after", g.Start)
}

// A shard whose executor was closed on its own fails later calls to it at
// once.
func TestCallToShardClosedAlone(t *testing.T) {
	g := shard.New(2)
	g.Start()
	defer g.Close()
	if err := g.Shard(1).Close(); err != nil {
		t.Fatal(err)
	}
	_, err := spindletest.Await(t, future.Spawn(g.Shard(0), func(ctx context.Context) (int, error) {
		f := shard.Call(g, 1, func() (int, error) { return 1, nil })
		if !f.Ready() {
			return 0, errors.New("call to a closed shard is pending")
		}
		return f.Await(ctx)
	}))
	if !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("call to a closed shard: %v, want ErrClosed", err)
	}
}

// A call a shard makes to itself, still queued when that shard closes, is
// not dropped with the queue: its future fails with executor.ErrClosed.
func TestCallToOwnShardQueuedAtCloseCompletes(t *testing.T) {
	g := shard.New(2)
	g.Start()
	const calls = 200
	fs, err := spindletest.Await(t, future.Call(g.Shard(0), func() ([]*future.Future[int], error) {
		fs := make([]*future.Future[int], calls)
		for i := range fs {
			fs[i] = shard.Call(g, 0, func() (int, error) { return i, nil })
		}
		g.Shard(0).Close() // from the loop: the rest of the batch is dropped
		return fs, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if closed := checkReleased(t, fs); closed != calls {
		t.Fatalf("%d of %d calls queued behind Close failed with ErrClosed", closed, calls)
	}
}

// InvokeAll and MapReduce called from outside the group while it closes
// complete (with their result or executor.ErrClosed) and their OnComplete
// callbacks run, even when shard 0 closes before their start runs there.
func TestInvokeAllRacingCloseCompletes(t *testing.T) {
	for round := range 50 {
		g := shard.New(2)
		g.Start()
		s := shard.NewSharded(g, func(i int) *int { v := i; return &v })
		all := shard.InvokeAll(s, func(v *int) (int, error) { return *v, nil })
		sum := shard.MapReduce(s, func(v *int) (int, error) { return *v, nil }, 0, func(a, r int) int { return a + r })
		ran := make(chan struct{}, 2)
		all.OnComplete(func([]int, error) { ran <- struct{}{} })
		sum.OnComplete(func(int, error) { ran <- struct{}{} })
		if round%2 == 0 {
			g.Shard(0).Close() // shard 0 first: the start may not have run
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			spindletest.Recv(t, ran) // both OnComplete callbacks run
		}
		for name, r := range map[string]bool{"InvokeAll": all.Ready(), "MapReduce": sum.Ready()} {
			if !r {
				t.Fatalf("round %d: %s still pending after Close", round, name)
			}
		}
		if r, _ := all.Peek(); r.Err != nil && !errors.Is(r.Err, executor.ErrClosed) {
			t.Fatalf("round %d: InvokeAll failed with %v", round, r.Err)
		}
	}
}
