package loop

// Drainers: work a draining loop waits for outside its queue.
//
// Shutdown drains: the loop runs until its queue and inbox are empty, then
// finishes. Some work is owed without being queued: output still leaving
// a socket after a Close, which only I/O readiness or a timer moves on. A
// package that owes such work registers a Drainer; while one reports that
// it still owes work, a drained loop sleeps (in its IO, until a timer or
// submitted work) instead of finishing, and asks again when it wakes. A
// Shutdown whose ctx ends becomes a Close, which never waits for them.
//
// Invariants: drainers is loop-owned (appended to by code that holds the
// loop); drainWait is set only around the sleep of a drained loop, so
// sleep blocks while the phase is draining only then.

// Drainer is asked by a draining loop whether it may finish.
type Drainer interface {
	// Drained runs on the loop each time the loop, draining, has found
	// its queue and inbox empty. It reports whether work is still owed
	// outside the queue; the loop then sleeps until I/O, a timer or
	// submitted work and asks again. It may queue work.
	Drained() (owed bool)
}

// AddDrainer registers d with the loop. Call it from code that holds the
// loop.
func (e *Loop) AddDrainer(d Drainer) {
	if d == nil {
		panic("executor: AddDrainer of nil Drainer")
	}
	e.drainers = append(e.drainers, d)
}

// drainOwed asks every drainer; loop only.
func (e *Loop) drainOwed() bool {
	owed := false
	for _, d := range e.drainers {
		if d.Drained() {
			owed = true
		}
	}
	return owed
}
