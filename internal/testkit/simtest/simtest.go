// Package simtest holds what the simulation tests of the runtime's own
// packages (internal/loop, shard, channel, semaphore, future) share: the
// check that one seed gives one trace, and the encoding of what they
// record in the trace.
package simtest

import (
	"testing"

	"github.com/spindle-rt/spindle/sim"
)

// Replays runs body twice in a new world for each of the first three
// seeds of sim.Seeds (one when -sim.seed names one), closing the world
// after it, and fails t for a seed whose two runs left different traces:
// one seed, one trace.
func Replays(t *testing.T, body func(*testing.T, *sim.World)) {
	t.Helper()
	seeds := sim.Seeds(3)
	if len(seeds) > 3 {
		seeds = seeds[:3]
	}
	for _, seed := range seeds {
		var traces [2]uint64
		for i := range traces {
			w := sim.New(seed)
			body(t, w)
			w.Close()
			traces[i] = w.Trace()
		}
		if traces[0] != traces[1] {
			t.Errorf("seed %d: two runs gave traces %016x and %016x", seed, traces[0], traces[1])
		}
	}
}

// Bit is b as a number for World.Record: 1 for true, 0 for false.
func Bit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
