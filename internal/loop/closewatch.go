package loop

// Close watches: what is still pending on a loop hears when it closes.
//
// No future of a closed executor stays pending: everything that can keep a
// future pending on a loop is reachable from the loop's close path (finish,
// close.go), which completes it with its result or ErrClosed, so its
// OnComplete callbacks run. There are five ways to be reachable:
//
//   - a queued item that owes a future implements Dropper (continuations,
//     Call, a task that never started, a cross-shard call to its own
//     shard, the start of a shard.InvokeAll);
//   - a timer whose callback owes one is made by AfterFuncClose, whose
//     closed func runs instead (Sleep, Timeout);
//   - a suspended task is resumed with ErrClosed (Interrupter);
//   - anything else registers a CloseWatch (Watch, any goroutine, under a
//     lock), and is interrupted on the loop while the executor closes: a
//     function future.Go runs on a goroutine of its own, a listener, a
//     dial, the loop's socket reactor. Both add and remove are O(1) and
//     allocate nothing but the amortised growth of the list, so an owner
//     registers when it gets its first pending future and unregisters when
//     its last one leaves, and costs nothing while it has none;
//   - an owner whose pending futures come and go many times a turn (a
//     channel with pending Send, Recv or SelectFuture futures) embeds a
//     CloseHold instead: it gets a slot in the loop's hold table once, on
//     its first Hold. The slot refers to its owner weakly, and strongly
//     (it pins it) from a Hold until the batch boundary after the Release
//     that follows, so an owner with pending futures is kept alive and one
//     without is not, past the current batch. Hold and Release of a pinned
//     owner write one flag; only the first Release in a batch queues the
//     owner for the boundary.
//
// Invariants of Watch's list (guarded by closeWatches.mu):
//   - a watch is in list from a Watch that returned true until Unwatch or
//     until the loop fires the list, and pos is its index there plus one
//     (0 when it is in none), so Unwatch removes it in O(1) by moving the
//     last watch into its place;
//   - fired is set once, by the loop in finish, after the phase is closed;
//     Watch refuses a watch once fired is set, so a watch is either fired
//     or was never accepted;
//   - fire takes the whole list under mu and interrupts the watches after
//     unlocking, so an Interrupt may call Unwatch (or anything else that
//     takes mu) and a concurrent Unwatch of a taken watch is a no-op;
//   - list gives its memory back when a burst of watches has gone.
//
// Invariants of the hold table (closeWatches.holds, loop-owned):
//   - a CloseHold h has a slot from its first accepted Hold until a sweep
//     finds its owner gone or the loop fires the table; h.slot is its index
//     plus one (0 while it has none), and holds[h.slot-1].owner is a weak
//     pointer to h;
//   - h.want is true from a Hold until the next Release;
//   - holds[i].pin is h exactly when h.pinned: set by a Hold that finds h
//     not pinned, cleared only at a batch boundary (Flush) for an h that
//     is not wanted. Only a pinned slot keeps its owner reachable, so a
//     wanted owner always is;
//   - h.queued is true while h is in review; a Release of a pinned h that
//     is not queued queues it, so review holds each owner once, and every
//     pinned owner that is not wanted is in review. Flush empties review
//     at every batch boundary, after which every unwanted owner is
//     unpinned. The table registers Flush with the loop (AddFlusher) when
//     it makes its first slot; a Flush with review empty does nothing;
//   - a sweep runs when a new slot would make the table reach limit: it
//     drops the slots of owners that are gone (never pinned ones: a pinned
//     owner is reachable), moves the others down keeping their order and
//     updates their slot numbers, sets limit to twice what is left (at
//     least minHolds), and gives the memory back when under a quarter of
//     it is used; so the table holds at most about twice the owners that
//     are still alive, and a slot costs amortised O(1);
//   - fire (fireWatches) runs once the phase is closed: it takes the table
//     and review, resets every reachable owner (slot 0, not pinned, not
//     queued) and interrupts the wanted ones; Hold refuses once the phase
//     is closed and Release of an owner not pinned does nothing, so an
//     Interrupt may call either.

import (
	"sync"
	"weak"
)

// CloseWatch is embedded by work that must be told, on the loop, when the
// executor closes. The zero value is ready for Watch.
type CloseWatch struct {
	w   Interrupter
	pos int
}

// closeWatches is the loop's list of watches, and its hold table.
type closeWatches struct {
	mu    sync.Mutex
	list  []*CloseWatch
	fired bool

	// The hold table, loop-owned: see its invariants.
	holds     []holdSlot
	review    []*CloseHold // released while pinned: unpinned at the batch boundary
	holdLimit int          // len(holds) at which the next new slot sweeps first
	flushing  bool         // Flush is registered with the loop
}

// CloseHold is embedded by a loop-owned owner whose pending futures come
// and go often (a channel): while it is held (from Hold to Release), the
// owner is reachable from the loop and, when the executor closes, is
// interrupted on the loop with ErrClosed. Once it is released, the loop
// keeps it reachable until the end of the current batch of tasks at the
// latest, and from then on keeps no reference that makes it reachable.
// The zero value is ready.
type CloseHold struct {
	w      Interrupter
	slot   int32 // index in the loop's hold table plus one; 0: none yet
	want   bool  // held: from Hold to Release
	pinned bool  // the table refers to it strongly
	queued bool  // in the table's review
}

// holdSlot is one entry of the hold table.
type holdSlot struct {
	owner weak.Pointer[CloseHold]
	pin   *CloseHold // owner while pinned, nil otherwise
}

// holdFlusher is the hold table as the loop's flushers see it.
type holdFlusher closeWatches

// minHolds is the smallest table size at which the hold table sweeps.
const minHolds = 64

// Hold marks h held: until Release, h's owner is reachable from the loop,
// and when the executor closes w.Interrupt(ErrClosed) is called on the
// loop (once, after which h is not held). w must be the same on every
// Hold of h. The first Hold of h takes a slot in the loop's table (an
// amortised allocation, the weak pointer to h included); after that, Hold
// and Release within a batch write a flag each. It returns false, and
// holds nothing, once the executor has closed and fired its holds (Closed
// is true by then); a Hold it accepts is interrupted when the executor
// closes. Loop only.
func (e *Loop) Hold(h *CloseHold, w Interrupter) bool {
	h.want = true
	if h.pinned {
		return true
	}
	if h.slot == 0 {
		// No slot yet, or the table has been fired, which gives every
		// owner still reachable slot 0: only such a Hold can come late.
		return e.addHold(h, w)
	}
	e.watches.holds[h.slot-1].pin, h.pinned = h, true
	return true
}

// Release ends the Hold of h; it does nothing if h is not held. The loop
// lets go of h's owner at the end of the current batch of tasks, unless h
// is held again by then. Loop only.
func (e *Loop) Release(h *CloseHold) {
	h.want = false
	if h.pinned && !h.queued {
		h.queued = true
		e.watches.review = append(e.watches.review, h)
	}
}

// Flush unpins the owners released since the last batch boundary and not
// held again: the loop calls it at every batch boundary.
func (f *holdFlusher) Flush() {
	l := (*closeWatches)(f)
	n := len(l.review)
	if n == 0 {
		return
	}
	for i, h := range l.review {
		l.review[i] = nil
		h.queued = false
		if !h.want {
			l.holds[h.slot-1].pin, h.pinned = nil, false
		}
	}
	l.review = l.review[:0]
	if cap(l.review) > minHolds && 4*n < cap(l.review) {
		l.review = nil // what a burst grew it to, once traffic is light again
	}
}

// addHold gives h a slot in the hold table, pinned, sweeping the table
// first when it has reached its limit. It refuses once the executor has
// closed.
func (e *Loop) addHold(h *CloseHold, w Interrupter) bool {
	if e.phase.Load() == phaseClosed {
		h.want = false
		return false
	}
	l := &e.watches
	if !l.flushing {
		l.flushing = true
		e.AddFlusher((*holdFlusher)(l))
	}
	if len(l.holds) >= l.holdLimit {
		l.sweepHolds()
	}
	h.w = w
	l.holds = append(l.holds, holdSlot{owner: weak.Make(h), pin: h})
	h.slot, h.pinned = int32(len(l.holds)), true
	return true
}

// sweepHolds drops the slots of owners that are gone and renumbers the
// others.
func (l *closeWatches) sweepHolds() {
	n := 0
	for _, s := range l.holds {
		h := s.pin
		if h == nil {
			h = s.owner.Value()
		}
		if h == nil {
			continue
		}
		l.holds[n] = s
		n++
		h.slot = int32(n)
	}
	clear(l.holds[n:])
	l.holds = l.holds[:n]
	if cap(l.holds) > minHolds && 4*n < cap(l.holds) {
		l.holds = append([]holdSlot(nil), l.holds...)
	}
	l.holdLimit = max(2*n, minHolds)
}

// Watch registers c: while the executor closes, w.Interrupt(ErrClosed) is
// called on the loop, unless Unwatch came first. It returns false, and
// registers nothing, once the executor has closed. Any goroutine.
func (e *Loop) Watch(c *CloseWatch, w Interrupter) bool {
	l := &e.watches
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fired {
		return false
	}
	l.list = enlist(l.list, c, w)
	return true
}

// Unwatch removes c; it does nothing if c is not registered (any more).
// Any goroutine.
func (e *Loop) Unwatch(c *CloseWatch) {
	l := &e.watches
	l.mu.Lock()
	l.list = unlist(l.list, c)
	l.mu.Unlock()
}

// enlist appends c, which will interrupt w, to list.
func enlist(list []*CloseWatch, c *CloseWatch, w Interrupter) []*CloseWatch {
	c.w = w
	list = append(list, c)
	c.pos = len(list)
	return list
}

// unlist removes c from list in O(1), moving the last watch into its
// place, and gives the list's memory back when a burst of watches has
// gone.
func unlist(list []*CloseWatch, c *CloseWatch) []*CloseWatch {
	i := c.pos - 1
	if i < 0 {
		return list
	}
	n := len(list) - 1
	last := list[n]
	list[i], last.pos = last, i+1
	list[n] = nil
	list = list[:n]
	c.pos = 0
	if cap(list) > 64 && n < cap(list)/4 {
		list = append([]*CloseWatch(nil), list...)
	}
	return list
}

// fireWatches interrupts every registered watch and every held owner. Called on
// the loop by finish, once the phase is closed.
func (e *Loop) fireWatches() {
	l := &e.watches
	l.mu.Lock()
	l.fired = true
	list := l.list
	l.list = nil
	forget(list) // under mu: a concurrent Unwatch reads pos
	l.mu.Unlock()
	interrupt(list)
	e.fireHolds()
}

// fireHolds takes the hold table, resets every owner still reachable and
// interrupts the owners that are held.
func (e *Loop) fireHolds() {
	l := &e.watches
	holds := l.holds
	l.holds, l.holdLimit, l.review = nil, 0, nil
	held := holds[:0] // reuses the table: slot i is read before held[i] is written
	for _, s := range holds {
		h := s.pin
		if h == nil {
			h = s.owner.Value()
		}
		if h == nil {
			continue
		}
		if h.want {
			held = append(held, holdSlot{pin: h})
		}
		h.slot, h.want, h.pinned, h.queued = 0, false, false, false
	}
	clear(holds[len(held):])
	for _, s := range held {
		s.pin.w.Interrupt(ErrClosed)
	}
}

// forget marks the watches of a list taken out of its registry as in none,
// so that an Unwatch of one of them, from its Interrupt or elsewhere, is a
// no-op.
func forget(list []*CloseWatch) {
	for _, c := range list {
		c.pos = 0
	}
}

func interrupt(list []*CloseWatch) {
	for _, c := range list {
		c.w.Interrupt(ErrClosed)
	}
}
