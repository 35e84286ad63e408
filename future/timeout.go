package future

// Deadlines on futures.
//
// Timeout's node is at once the derived future, the waiter on the watched
// future and the waiter on its own future that stops the timer.
//
// Invariants:
//   - the derived future is completed once, by whichever comes first: the
//     watched future (its outcome, copied), the timer (ErrTimeout) or Cancel;
//     its own claim decides, and the loser does nothing;
//   - the timer is stopped as soon as the derived future is completed, by
//     any of the three, so a Timeout that is not needed any more keeps no
//     timer in the loop's heap, and the watched future is compacted, so its
//     waiters do not keep the node of a Timeout that expired or was
//     cancelled (the node is gone: its wake would do nothing);
//   - the timer's close path fails the derived future with
//     executor.ErrClosed when the executor closes first;
//   - the watched future is never cancelled or otherwise completed here.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/loop"
)

// ErrTimeout is the error of a future returned by Timeout whose time ran
// out before the watched future completed. It matches
// context.DeadlineExceeded: errors.Is(err, context.DeadlineExceeded) is
// true.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string   { return "future: timed out" }
func (timeoutError) Unwrap() error   { return context.DeadlineExceeded }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

type timeoutNode[T any] struct {
	out   Future[T]
	stop  link // on out: stops the timer when out completes
	l     link // on src
	src   *Future[T]
	timer atomic.Pointer[loop.Timer] // nil until AfterFunc returns: the timer may fire first
}

// Timeout returns a future completed like f if f completes within d, and
// failed with ErrTimeout (which matches context.DeadlineExceeded) if d
// elapses first. f itself is not cancelled and goes on; cancel it too if
// its work is no longer wanted. The timer is stopped as soon as f completes
// or the returned future is cancelled. A ready f is returned as it is.
// Timeout may be called from any goroutine; on a closed executor a pending
// f gets a future that has already failed with executor.ErrClosed.
func Timeout[T any](f *Future[T], d time.Duration) *Future[T] {
	if f == nil {
		panic("future: Timeout on nil future")
	}
	f.mustMade("Timeout")
	if f.ready() {
		return f
	}
	ex := f.ex
	if ex.Closed() {
		var zero T
		return done(ex, zero, executor.ErrClosed)
	}
	_, onLoop := ex.Current()
	n := newObj[timeoutNode[T]](ex, onLoop)
	n.src = f
	n.out.ex = ex
	if ex.HooksEnabled() {
		n.out.id = track(ex, ex.NewResourceOnLoop(hooks.KindFuture, f.id, onLoop), &n.out)
	}
	n.stop.w = (*timeoutStop[T])(n)
	n.out.head.Store(&n.stop) // not yet shared: no race
	// Timeout may be called off the loop: AfterFuncClose hands the timer
	// to the loop then.
	n.timer.Store(ex.AfterFuncClose(d, n.expire, n.closed))
	n.l.w = n
	if !f.addWaiter(&n.l) {
		n.wake(onLoop)
	}
	return &n.out
}

// wake copies the watched future's outcome when it completes.
func (n *timeoutNode[T]) wake(onLoop bool) {
	by := fromAnywhere
	if onLoop {
		by = fromLoop
	}
	n.out.complete(n.src.val, n.src.err, by)
}

// expire fails the future when the timer fires, on the loop.
func (n *timeoutNode[T]) expire() {
	var zero T
	n.out.complete(zero, ErrTimeout, fromLoop)
}

// closed fails the future when the executor closes before the timer fires
// (on the loop while it closes, or at once on a closed one).
func (n *timeoutNode[T]) closed() {
	var zero T
	n.out.complete(zero, executor.ErrClosed, fromAnywhere)
}

// timeoutStop is the waiter the node keeps on its own future.
type timeoutStop[T any] timeoutNode[T]

func (s *timeoutStop[T]) wake(bool) {
	if t := s.timer.Load(); t != nil {
		t.Stop()
	}
	s.src.compact(compactScan) // returns at once when src is the one that completed
}

// gone reports whether the derived future has completed while the node
// still waits on the watched future: its wake would do nothing.
func (n *timeoutNode[T]) gone() bool { return n.out.ready() }
