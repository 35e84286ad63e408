package loop

// The I/O seam: a loop that serves sockets waits for them itself.
//
// A package that serves sockets on the loop (netio's epoll backend) gives
// the loop an IO with SetIO. From then on the loop sleeps in IO.Wait
// instead of its channel select, with the next timer as the timeout, and
// signal (Submit's wake-up, written only while the loop sleeps, exactly as
// the channel send was) goes to IO.Wake: readiness, timers and wake-ups in
// one wait. Between batches, while work is queued, the loop polls with a
// zero timeout (after the flushers have handed the batch's output to the
// kernel), so a busy loop sees I/O without sleeping; RunUntilIdle polls the
// same way before it reports the loop idle.
//
// Invariants:
//   - io is set once, by the goroutine that holds the loop, and never
//     cleared; signal may load it from any goroutine, so it is atomic. A
//     loop that never serves a socket has io nil and runs exactly as
//     before, at the cost of one atomic load in signal;
//   - Wait and Dispatch run only on the loop; Wake may run on any
//     goroutine, also after the IO has been shut (it must then do nothing);
//   - a wake-up token sent on the channel before io was set is not lost:
//     sleep looks for one before it waits in IO.

import (
	"sync/atomic"
	"time"
)

// IO is what a loop waits in when it serves sockets.
type IO interface {
	// Wait blocks for at most timeout (negative: no bound; zero: not at
	// all) until I/O is ready or Wake is called, and records what is
	// ready for Dispatch. Loop only.
	Wait(timeout time.Duration)
	// Dispatch handles what the last Wait found ready. Loop only.
	Dispatch()
	// Wake makes the current Wait, or the next one, return at once. Any
	// goroutine.
	Wake()
}

// ioSlot holds the loop's IO behind one pointer, for the atomic load.
type ioSlot struct{ io IO }

type ioState struct {
	p atomic.Pointer[ioSlot]
}

// SetIO makes the loop wait in io from its next sleep on. Loop only; it
// panics if the loop already has an IO.
func (e *Loop) SetIO(io IO) {
	if io == nil {
		panic("executor: SetIO with nil IO")
	}
	if !e.OnLoop() {
		panic("executor: SetIO called from a goroutine that does not hold the loop")
	}
	if !e.io.p.CompareAndSwap(nil, &ioSlot{io}) {
		panic("executor: SetIO on a loop that already has an IO")
	}
}

// HasIO reports whether the loop waits in an IO.
func (e *Loop) HasIO() bool { return e.io.p.Load() != nil }

// ioPoll polls the IO without blocking and dispatches what is ready; it
// reports whether the loop has an IO. Loop only.
func (e *Loop) ioPoll() bool {
	s := e.io.p.Load()
	if s == nil {
		return false
	}
	s.io.Wait(0)
	s.io.Dispatch()
	return true
}

// ioSleep is sleep's wait when the loop has an IO: until I/O, a wake-up,
// or d (negative: no bound). It reports false, doing nothing, when the
// loop has no IO. Loop only.
func (e *Loop) ioSleep(d time.Duration) bool {
	s := e.io.p.Load()
	if s == nil {
		return false
	}
	select {
	case <-e.wake: // a token sent before SetIO
		d = 0
	default:
	}
	s.io.Wait(d)
	return true
}

// ioDispatch dispatches what the last wait found. Loop only.
func (e *Loop) ioDispatch() {
	if s := e.io.p.Load(); s != nil {
		s.io.Dispatch()
	}
}
