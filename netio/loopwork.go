package netio

// Work handed to a loop, shared by the listener, the connection and every
// backend: running code on the connection's loop from any goroutine, the
// future of a promise served there, and the sweep of waiters given up.
//
// Invariants: what toLoop hands over runs exactly once, on the loop (fn)
// or, once the loop has closed, anywhere (drop); a promise onLoopFuture
// made is completed by fn or fails with executor.ErrClosed.

import (
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// onLoop is work handed to a loop from another goroutine: fn runs on the
// loop, or drop runs (anywhere) if the loop closes first.
type onLoop struct {
	fn, drop func()
}

func (o *onLoop) Run()  { o.fn() }
func (o *onLoop) Drop() { o.drop() }

// onLoopFuture returns the future of a promise that fn is given on lp's
// loop: at once when the caller holds it, through the inbox otherwise. If
// the loop closes first the future fails with executor.ErrClosed.
func onLoopFuture[T any](lp *loop.Loop, fn func(*future.Promise[T])) *future.Future[T] {
	p := future.NewPromise[T]((*executor.Executor)(lp))
	if lp.OnLoop() {
		fn(p)
	} else {
		toLoop(lp, func() { fn(p) }, func() { p.Reject(executor.ErrClosed) })
	}
	return p.Future()
}

// sweep drops the waiters whose futures completed while they waited (they
// were cancelled), so receives given up leave nothing behind.
func sweep[T any](q []*future.Promise[T]) []*future.Promise[T] {
	k := 0
	for _, p := range q {
		if !p.Future().Ready() {
			q[k] = p
			k++
		}
	}
	clear(q[k:])
	return q[:k]
}
