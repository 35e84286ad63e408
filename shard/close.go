package shard

// Stopping a group.
//
// Shutdown drains the group as a whole before any shard closes, because a
// shard whose own queue is empty may still be called by another: closing
// it then would fail work that was accepted. So a group stops in three
// steps, run by one goroutine (stop) that Shutdown and Close start once:
//
//  1. Quiesce (Shutdown only). The group refuses calls from outside its
//     shards (they fail with executor.ErrClosed, as Submit does on a
//     draining executor) and waits until the shards are quiet: a round
//     queues a probe on every shard, which reads there how many messages
//     the shard has sent and received and how much work is queued; two
//     rounds in a row with no work queued, no counter changed and as many
//     messages received as sent mean that no call is in flight and no shard
//     has work left that could make one (Mattern's four-counter test).
//     Timers and tasks suspended on them are not waited for, as an
//     executor's Shutdown does not wait for them.
//  2. Close the executors, all at once: Shutdown when draining, Close when
//     Close was called or Shutdown's ctx ended (which also ends step 1).
//  3. Sweep. Once every loop has finished, no lane has a producer or a
//     consumer any more, and the calls still in lanes (sent to a shard that
//     closed first, or answered but not yet delivered) are completed: with
//     their result when they ran, with executor.ErrClosed otherwise.
//
// Then done is closed; Shutdown and Close called off the group's loops
// wait for it. Called on a shard's loop they only start the stop and
// return nil, as an executor's Shutdown does on its own loop: waiting there
// would keep that loop from finishing.

import (
	"context"
	"sync"

	"github.com/spindle-rt/spindle/future"
)

// Shutdown stops the group gracefully. Calls from outside the group's
// shards start failing with executor.ErrClosed; calls between shards still
// run. Once no call is in flight and no shard has work queued, every shard
// shuts down as executor.Shutdown does, and the calls that could not be
// delivered are released (their futures fail with executor.ErrClosed).
// Shutdown waits for all of that and returns nil, or returns ctx.Err() if
// ctx ends first, in which case the group closes as Close does. Called on
// a shard's loop it begins the shutdown and returns nil at once. It may be
// called any number of times, from any goroutine.
func (g *Group) Shutdown(ctx context.Context) error {
	if ctx == nil {
		panic("shard: Shutdown with nil context")
	}
	g.mustMade("Shutdown")
	g.begin()
	if _, ok := g.Current(); ok {
		return nil
	}
	select {
	case <-g.done:
		return nil
	case <-ctx.Done():
		g.abort()
		return ctx.Err()
	}
}

// Close closes every shard at once, as executor.Close does, and then
// releases every call still in flight: its future completes with its
// result if the call ran, and fails with executor.ErrClosed otherwise.
// Called off the group's loops it returns once all shards have closed and
// every call was released; called on a shard's loop it begins closing and
// returns at once. It always returns nil and may be called any number of
// times, from any goroutine.
func (g *Group) Close() error {
	g.mustMade("Close")
	g.abort()
	g.begin()
	if _, ok := g.Current(); !ok {
		<-g.done
	}
	return nil
}

// Done returns a channel that is closed once the group has stopped: every
// shard has closed and every call in flight was released.
func (g *Group) Done() <-chan struct{} {
	g.mustMade("Done")
	return g.done
}

// begin starts the stop, once.
func (g *Group) begin() {
	g.stopOnce.Do(func() {
		g.state.Store(stateDraining)
		go g.stop()
	})
}

// stop runs the three steps described at the top of this file.
func (g *Group) stop() {
	defer close(g.done)
	if g.started.Load() {
		g.quiesce()
	}
	var wg sync.WaitGroup
	for _, s := range g.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if g.abortCtx.Err() != nil {
				_ = s.exe.Close()
			} else {
				_ = s.exe.Shutdown(g.abortCtx)
			}
			<-s.exe.Done()
		}()
	}
	wg.Wait()
	g.state.Store(stateClosed)
	g.abort()
	g.sweep()
}

// counts is what a probe reads on a shard.
type counts struct {
	sent, recv uint64
	queued     int
}

// quiesce returns once the shards are quiet, or Close was called, or a
// shard has closed (its executor was closed directly).
func (g *Group) quiesce() {
	var prev []counts
	for {
		cur, ok := g.probe()
		if !ok || (prev != nil && quiet(prev, cur)) {
			return
		}
		prev = cur
	}
}

// probe runs one round; false if it could not complete.
func (g *Group) probe() ([]counts, bool) {
	fs := make([]*future.Future[counts], len(g.shards))
	for i, s := range g.shards {
		fs[i] = future.Call(s.exe, func() (counts, error) {
			return counts{sent: s.sent, recv: s.recv, queued: s.exe.Stats().Queued}, nil
		})
	}
	out := make([]counts, len(fs))
	for i, f := range fs {
		c, err := f.Await(g.abortCtx)
		if err != nil {
			return nil, false
		}
		out[i] = c
	}
	return out, true
}

// quiet reports whether two rounds of probes show a quiet group.
func quiet(prev, cur []counts) bool {
	var sent, recv uint64
	for i := range cur {
		if cur[i] != prev[i] || cur[i].queued != 0 {
			return false
		}
		sent += cur[i].sent
		recv += cur[i].recv
	}
	return sent == recv
}

// sweep completes every call left in a lane. Only after every shard's loop
// has finished.
func (g *Group) sweep() {
	for _, s := range g.shards {
		for _, l := range s.out {
			if l != nil {
				l.q.sweep(message.abandon)
			}
		}
	}
}
