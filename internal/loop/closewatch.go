package loop

// Close watches: what is still pending on a loop hears when it closes.
//
// No future of a closed executor stays pending: everything that can keep a
// future pending on a loop is reachable from the loop's close path (finish,
// close.go), which completes it with its result or ErrClosed, so its
// OnComplete callbacks run. There are four ways to be reachable:
//
//   - a queued item that owes a future implements Dropper (continuations,
//     Call, a task that never started, a cross-shard call to its own
//     shard, the start of a shard.InvokeAll);
//   - a timer whose callback owes one is made by AfterFuncClose, whose
//     closed func runs instead (Sleep, Timeout);
//   - a suspended task is resumed with ErrClosed (Interrupter);
//   - anything else registers a CloseWatch, and is interrupted on the loop
//     while the executor closes: a function future.Go runs on a goroutine
//     of its own (Watch, any goroutine, under a lock), a channel with
//     pending Send, Recv or SelectFuture futures, a socket with a pending
//     Accept, Recv or Flush (WatchOnLoop: loop-owned, no lock). Both add
//     and remove are O(1) and allocate nothing but the amortised growth of
//     the list, so an owner registers when it gets its first pending
//     future and unregisters when its last one leaves, and costs nothing
//     while it has none.
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
// WatchOnLoop's list (loopWatches) keeps the same rules, loop-owned: it is
// read and written only by the goroutine that holds the loop, and finish
// fires it after the phase is closed, which is how WatchOnLoop refuses a
// watch once closing is done. A CloseWatch is in at most one of the two
// lists; it is removed with the Unwatch of the Watch that added it.

import "sync"

// CloseWatch is embedded by work that must be told, on the loop, when the
// executor closes. The zero value is ready for Watch.
type CloseWatch struct {
	w   Interrupter
	pos int
}

// closeWatches is the loop's list of watches.
type closeWatches struct {
	mu    sync.Mutex
	list  []*CloseWatch
	fired bool
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

// WatchOnLoop is Watch for code that holds the loop: it takes no lock.
// While the executor closes, w.Interrupt(ErrClosed) is called on the loop,
// unless UnwatchOnLoop came first. It returns false, and registers
// nothing, once the executor has closed. Loop only.
func (e *Loop) WatchOnLoop(c *CloseWatch, w Interrupter) bool {
	if e.phase.Load() == phaseClosed {
		return false
	}
	e.loopWatches = enlist(e.loopWatches, c, w)
	return true
}

// enlist appends c, which will interrupt w, to list.
func enlist(list []*CloseWatch, c *CloseWatch, w Interrupter) []*CloseWatch {
	c.w = w
	list = append(list, c)
	c.pos = len(list)
	return list
}

// UnwatchOnLoop removes c, registered by WatchOnLoop; it does nothing if c
// is not registered (any more). Loop only.
func (e *Loop) UnwatchOnLoop(c *CloseWatch) {
	e.loopWatches = unlist(e.loopWatches, c)
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

// fireWatches interrupts every registered watch, of both lists. Called on
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
	list, e.loopWatches = e.loopWatches, nil
	forget(list)
	interrupt(list)
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
