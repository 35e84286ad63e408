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
	c.w = w
	l.list = append(l.list, c)
	c.pos = len(l.list)
	return true
}

// Unwatch removes c; it does nothing if c is not registered (any more).
// Any goroutine.
func (e *Loop) Unwatch(c *CloseWatch) {
	l := &e.watches
	l.mu.Lock()
	if i := c.pos - 1; i >= 0 {
		n := len(l.list) - 1
		last := l.list[n]
		l.list[i], last.pos = last, i+1
		l.list[n] = nil
		l.list = l.list[:n]
		c.pos = 0
		if cap(l.list) > 64 && n < cap(l.list)/4 {
			l.list = append([]*CloseWatch(nil), l.list...)
		}
	}
	l.mu.Unlock()
}

// fire interrupts every registered watch. Called on the loop by finish,
// once the phase is closed.
func (l *closeWatches) fire() {
	l.mu.Lock()
	l.fired = true
	list := l.list
	l.list = nil
	for _, c := range list {
		c.pos = 0
	}
	l.mu.Unlock()
	for _, c := range list {
		c.w.Interrupt(ErrClosed)
	}
}
