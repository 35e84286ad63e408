package future

import "time"

// WithTimeout is the cancelling form of Timeout: it returns a future
// completed like f if f completes within d, and otherwise fails it with
// ErrTimeout (which matches context.DeadlineExceeded) and cancels f, so
// the work behind f is told to stop (a Go function's ctx ends, a task
// resumes with context.Canceled). Cancelling the returned future cancels f
// too. It is for work that nobody wants once its time is up; Timeout is
// for a wait that may give up while the work goes on. A ready f is
// returned as it is. WithTimeout may be called from any goroutine; on a
// closed executor a pending f gets a future that has already failed with
// executor.ErrClosed, and f is cancelled.
func WithTimeout[T any](f *Future[T], d time.Duration) *Future[T] {
	if f == nil {
		panic("future: WithTimeout on nil future")
	}
	out := Timeout(f, d)
	if out == f { // f was ready
		return f
	}
	c := &cancelSource[T]{src: f}
	c.l.w = c
	if !out.addWaiter(&c.l) {
		f.Cancel() // out has completed already: the executor has closed
	}
	return out
}

// cancelSource is WithTimeout's waiter on the derived future: when it
// completes, by the timer, by Cancel or by the source itself, it cancels
// the source, which does nothing if the source completed first.
type cancelSource[T any] struct {
	l   link
	src *Future[T]
}

func (c *cancelSource[T]) wake(bool) { c.src.Cancel() }
