package loop

// Close watches: work that runs apart from the loop hears when it closes.
//
// A suspended task hears that the executor closes through its body's
// Interrupt. Work that is not a task but still owes the loop a result (a
// function future.Go runs on a goroutine of its own) registers a CloseWatch
// instead, and is interrupted the same way, on the loop, while the executor
// closes.
//
// Invariants (guarded by closeWatches.mu):
//   - a watch is in the list from a Watch that returned true until Unwatch
//     or until the loop fires the list, and linked says which;
//   - fired is set once, by the loop in finish, after the phase is closed;
//     Watch refuses a watch once the phase has left open, so a watch is
//     either fired or was never accepted;
//   - fire detaches the whole list under mu and interrupts the watches
//     after unlocking, so an Interrupt may call Unwatch (or anything else
//     that takes mu) and a concurrent Unwatch of a detached watch is a no-op.

import "sync"

// CloseWatch is embedded by work that must be told, on the loop, when the
// executor closes. The zero value is ready for Watch.
type CloseWatch struct {
	prev, next *CloseWatch
	w          Interrupter
	linked     bool
}

// closeWatches is the loop's list of watches.
type closeWatches struct {
	mu    sync.Mutex
	head  *CloseWatch
	fired bool
}

// Watch registers c: while the executor closes, w.Interrupt(ErrClosed) is
// called on the loop, unless Unwatch came first. It returns false, and
// registers nothing, once Shutdown or Close has begun. Any goroutine.
func (e *Loop) Watch(c *CloseWatch, w Interrupter) bool {
	l := &e.watches
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fired || e.phase.Load() != phaseOpen {
		return false
	}
	c.w, c.linked = w, true
	c.prev, c.next = nil, l.head
	if l.head != nil {
		l.head.prev = c
	}
	l.head = c
	return true
}

// Unwatch removes c; it does nothing if c is not registered (any more).
// Any goroutine.
func (e *Loop) Unwatch(c *CloseWatch) {
	l := &e.watches
	l.mu.Lock()
	if c.linked {
		c.linked = false
		if c.prev != nil {
			c.prev.next = c.next
		} else {
			l.head = c.next
		}
		if c.next != nil {
			c.next.prev = c.prev
		}
		c.prev, c.next = nil, nil
	}
	l.mu.Unlock()
}

// fire interrupts every registered watch. Called on the loop by finish,
// once the phase is closed.
func (l *closeWatches) fire() {
	l.mu.Lock()
	l.fired = true
	h := l.head
	l.head = nil
	for c := h; c != nil; c = c.next {
		c.linked = false
	}
	l.mu.Unlock()
	for h != nil {
		c := h
		h = c.next
		c.prev, c.next = nil, nil
		c.w.Interrupt(ErrClosed)
	}
}
