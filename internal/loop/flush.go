package loop

// Flushers: per-loop callbacks at the batch boundary.
//
// Packages that batch work for other loops (package shard's per-pair
// queues) publish a batch when the loop that produced it reaches a batch
// boundary, so one batch carries everything a batch of tasks produced.
//
// Invariants: flushers is loop-owned; it is appended to only before the
// loop first runs or from code that holds the loop, and read only by the
// loop, in poll, after every batch of tasks and so before the loop sleeps.

// Flusher is told by a loop at every batch boundary.
type Flusher interface {
	// Flush runs on the loop after each batch of tasks, before the loop
	// takes in submitted work, fires timers or sleeps. It must not panic and
	// should be short: it runs once per batch.
	Flush()
}

// AddFlusher registers f to be called at every batch boundary of the loop,
// in registration order. Call it before the loop first runs, or from code
// that holds the loop.
func (e *Loop) AddFlusher(f Flusher) {
	if f == nil {
		panic("executor: AddFlusher of nil Flusher")
	}
	e.flushers = append(e.flushers, f)
}

// flush calls the flushers. Loop only.
func (e *Loop) flush() {
	for _, f := range e.flushers {
		f.Flush()
	}
}
