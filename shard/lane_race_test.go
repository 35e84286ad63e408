package shard_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/shard"
)

// spinSink keeps the compiler from dropping busySpin's work.
var spinSink atomic.Int64

// busySpin burns about n small steps of CPU.
func busySpin(n int64) {
	x := int64(0)
	for i := range n {
		x += i ^ x>>3
	}
	spinSink.Store(x)
}

// A lane's drain that finds its queue empty and disarms must still see a
// batch the source published in between: otherwise the batch waits for the
// source's next publish, which may never come. Two started shards, the
// source spinning in a task on its loop, the destination draining on its
// own: at each step the source pushes a full batch (so it publishes at
// once, from the task) and waits until the batch's last message has run;
// that message spins a while on the destination before its drain looks at
// the queue again. The spin is steered so that the source's next publish
// lands near the end of the drain, sometimes just before its last look and
// sometimes just after, so over the steps some land between the drain's
// last look and its disarm. Every message must arrive; a batch that does
// not within the safety bound fails the test, naming the step.
func TestLaneDrainEndRacesPublish(t *testing.T) {
	if prev := runtime.GOMAXPROCS(0); prev < 2 {
		runtime.GOMAXPROCS(2)
		t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	}
	const batch = 16  // the lane's publish batch: the 16th push publishes
	const chunk = 250 // steps per task of the source
	steps := 3000
	if testing.Short() || spindletest.RaceEnabled {
		steps = 1500
	}
	for _, tc := range []struct{ from, to int }{{0, 1}, {1, 0}} {
		t.Run(fmt.Sprintf("from=%d/to=%d", tc.from, tc.to), func(t *testing.T) {
			g := started(t, 2)
			base := time.Now()
			var (
				delivered atomic.Int64                    // messages run on the destination
				done      atomic.Int64                    // the last step whose last message ran
				spin      atomic.Int64                    // the last message's spin, steered by the source
				ended     = make([]atomic.Int64, steps+1) // when step k's last message ended, since base
			)
			spin.Store(32)
			count := func() { delivered.Add(1) }
			last := func(k int) func() {
				return func() {
					delivered.Add(1)
					done.Store(int64(k))
					n := spin.Load()
					busySpin(n + rand.Int64N(n/4+1))
					ended[k].Store(int64(time.Since(base)))
				}
			}
			// The destination's loop never sleeps (a task of its own keeps
			// posting itself), so a step costs no wake-up.
			var stop atomic.Bool
			defer stop.Store(true)
			dst := g.Shard(tc.to)
			var keep func()
			keep = func() {
				if !stop.Load() {
					dst.Post(keep)
				}
			}
			if err := dst.Submit(keep); err != nil {
				t.Fatal(err)
			}
			// The source runs the steps in tasks of a few hundred, so that
			// none holds its loop for long.
			for k := 1; k <= steps; {
				on(t, g, tc.from, func(context.Context) (struct{}, error) {
					for end := min(steps, k+chunk-1); k <= end; k++ {
						for range batch - 1 {
							if err := shard.Send(g, tc.to, count); err != nil {
								return struct{}{}, err
							}
						}
						if err := shard.Send(g, tc.to, last(k)); err != nil {
							return struct{}{}, err
						}
						published := time.Since(base) // the 16th Send published
						deadline := time.Now().Add(spindletest.Safety / 2)
						for i := 0; done.Load() < int64(k); i++ {
							if i%1024 == 0 && time.Now().After(deadline) {
								return struct{}{}, fmt.Errorf("step %d of %d: the batch published to shard %d never ran (%d of %d messages delivered) within %v",
									k, steps, tc.to, delivered.Load(), k*batch, spindletest.Safety/2)
							}
						}
						// Steer the spin toward the moment of the publish:
						// shorter when the source published before the last
						// message of the step before ended (its drain then
						// found this batch at once), longer when it
						// published after.
						if k > 1 {
							if n := spin.Load(); int64(published) < ended[k-1].Load() {
								spin.Store(max(1, n-n/8-1))
							} else {
								spin.Store(min(1<<20, n+n/8+1))
							}
						}
					}
					return struct{}{}, nil
				})
			}
			if got, want := delivered.Load(), int64(steps*batch); got != want {
				t.Fatalf("%d messages delivered, want %d", got, want)
			}
		})
	}
}
