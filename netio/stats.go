package netio

// Connection counts, per executor.
//
// Invariants:
//   - the counters of a loop are written only by the goroutine that holds
//     it (the reactor's code) and read by any goroutine, so each is an
//     atomic: a writer adds with a plain load and store of its own
//     counter, a reader sees a value at least as new as the last batch;
//   - a loop's counters are in the registry from the moment its reactor is
//     made until the loop has been garbage collected: after its executor
//     has closed they still say what it did (its final figures), and the
//     registry holds the loop only weakly, so an executor that nobody
//     refers to any more takes its entry with it. StatsOf of an executor
//     that never served a socket reads zeros.

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Stats are the connection counts of one executor's sockets, for
// monitoring (package metrics publishes them beside the executor's own
// figures).
type Stats struct {
	// Open is the number of connections open now: accepted or dialled, and
	// not yet closed.
	Open int
	// Accepted counts the connections accepted by the executor's
	// listeners.
	Accepted uint64
	// Closed counts the connections whose socket has been closed, for
	// whatever reason (Close, a failure, the peer leaving, the executor
	// closing).
	Closed uint64
	// AcceptErrors counts the accepts that failed for a reason other than
	// the listener's closing: EMFILE or ENFILE when descriptors run out,
	// ENOBUFS, and the like. Serve backs off and retries after each.
	AcceptErrors uint64
	// OutputLimitDisconnects counts the connections failed with
	// ErrOutputLimit: peers that stopped reading while their output grew
	// past the output limit (Conn.SetOutputLimit).
	OutputLimitDisconnects uint64
	// Backend names what serves the executor's sockets (a Backend):
	// "epoll", "io_uring" (on Linux when Use or SPINDLE_NETIO=uring asks
	// for it and the kernel grants the ring), "portable" (package net's
	// sockets: -tags purego, and systems other than Linux) or "sim" (a
	// loop that package sim steps). It is "" until the executor serves its first socket (an
	// accept or a dial).
	Backend string
}

// counters are a loop's figures behind Stats.
type counters struct {
	backend      string        // set before the counters are registered, then read-only
	opened       atomic.Uint64 // accepted or dialled
	accepted     atomic.Uint64
	closed       atomic.Uint64
	acceptErrors atomic.Uint64
	overLimit    atomic.Uint64
}

// inc adds one to a counter written only by the loop.
func inc(c *atomic.Uint64) { c.Store(c.Load() + 1) }

var registry sync.Map // weak.Pointer[loop.Loop] -> *counters

// register makes c the counters of lp's sockets, until lp is collected.
func register(lp *loop.Loop, c *counters) {
	k := weak.Make(lp)
	registry.Store(k, c)
	runtime.AddCleanup(lp, unregister, k)
}

func unregister(k weak.Pointer[loop.Loop]) { registry.Delete(k) }

// StatsOf returns the connection counts of ex's sockets. Once ex has shut
// down (or closed) they are its final figures: every connection counted
// as closed, Open zero. Any goroutine.
func StatsOf(ex *executor.Executor) Stats {
	if ex == nil {
		panic("netio: StatsOf with nil executor")
	}
	v, ok := registry.Load(weak.Make((*loop.Loop)(ex)))
	if !ok {
		return Stats{}
	}
	c := v.(*counters)
	closed := c.closed.Load()
	opened := c.opened.Load()
	return Stats{
		Open:                   int(opened - min(closed, opened)),
		Accepted:               c.accepted.Load(),
		Closed:                 closed,
		AcceptErrors:           c.acceptErrors.Load(),
		OutputLimitDisconnects: c.overLimit.Load(),
		Backend:                c.backend,
	}
}
