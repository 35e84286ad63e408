package netio

// What Executor.Shutdown does to sockets.
//
// Shutdown drains the loop: Submit is refused, the queue runs until it is
// empty, then the executor closes. netio takes part on every backend the
// same way:
//   - at the first batch boundary after the drain began (reactor.Flush
//     sees the loop closing), every listener accepting on the loop is
//     closed, so new connections are refused at once, and pending accepts
//     fail with executor.ErrClosed;
//   - from then on nothing more is read from a socket for a receive: bytes
//     already delivered are handled, new ones stay in the kernel, so peers
//     that keep sending cannot keep the drain going; pending receives stay
//     pending and fail with executor.ErrClosed when the executor closes;
//   - output still flows: each time the queue runs dry (Drained), a
//     connection with output not yet taken by the kernel is closed as
//     Close closes (its output is sent, then a lingering close, bounded by
//     the linger time), and the loop waits until every closing connection
//     has handed its output to the kernel and (on Linux, where the kernel
//     says so) the peer has acknowledged it; a connection still discarding
//     input then is closed with the executor. A Shutdown whose ctx ends
//     first becomes a Close, which drops what is left;
//   - when the executor closes, the connections still open are closed at
//     once, with executor.ErrClosed.
//
// Invariants: draining is loop-owned and set once; listeners holds the
// listeners of the loop that have been accepted from and not finished.

import "github.com/spindle-rt/spindle/executor"

// beginDrain closes the loop's listeners: the executor is shutting down.
func (r *reactor) beginDrain() {
	r.draining = true
	for l := range r.listeners {
		l.closeSocket()
		l.finish(executor.ErrClosed)
	}
}

// Drained reports whether a connection still owes output: the loop's
// drain waits for it (internal/loop's Drainer). Open connections with
// output waiting are closed, so that it is sent and the wait is bounded
// by the linger time.
func (r *reactor) Drained() bool {
	if !r.draining {
		r.beginDrain()
	}
	owed := false
	for _, c := range r.be.conns(r) {
		switch {
		case c.released:
		case c.is(fClosing):
			// Its output is leaving, or it lingers until the peer has
			// acknowledged all of it: a reset would lose what it has not.
			if c.written != c.taken || !c.is(fLingerIn) || r.be.unacked(c) > 0 {
				owed = true
			}
		case c.written != c.taken:
			c.closeWith(executor.ErrClosed)
			if !c.released {
				owed = true
			}
		}
	}
	return owed
}
