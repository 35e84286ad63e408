package netio

// Read, write and idle deadlines.
//
// Invariants (all loop-owned):
//   - a connection's deadlines live in its extension (dl), made when one is
//     first set, so a connection without deadlines costs nothing more;
//   - each deadline has at most one loop timer, armed for a time at or
//     before the deadline; a deadline moved later leaves the timer as it is
//     and the timer, when it fires, arms itself again for the rest, so
//     pushing a deadline forward before every read starts no timer;
//   - rtimeout is set exactly while the read deadline has passed: a receive
//     then fails with os.ErrDeadlineExceeded without reading or consuming
//     anything, so no byte is lost; wtimeout likewise for writes and
//     flushes (the output already written stays and keeps leaving);
//   - with an idle timeout, last is when a byte was last received or taken
//     by the kernel (idle is then set on the Conn, so the receive and write
//     paths pay for the clock only then); the idle timer closes the
//     connection once last is that old.

import (
	"math"
	"net"
	"os"
	"time"

	"github.com/spindle-rt/spindle/executor"
)

// ErrIdleTimeout fails the receives of a connection closed by its idle
// timeout (Conn.SetIdleTimeout, WithIdleTimeout). It matches
// os.ErrDeadlineExceeded (errors.Is), as a net.Conn's timeouts do, and is a
// net.Error whose Timeout is true.
var ErrIdleTimeout error = &timeoutError{"netio: connection idle timeout"}

type timeoutError struct{ s string }

func (e *timeoutError) Error() string        { return e.s }
func (e *timeoutError) Timeout() bool        { return true }
func (e *timeoutError) Temporary() bool      { return true }
func (e *timeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

// deadlines is a connection's deadline state. Times are on the loop's
// clock (loop.Loop.Now, in nanoseconds): the monotonic clock on a loop of
// its own, the world's fake clock on a simulated one, so that an idle
// timeout fires at the same simulated time in every run of a seed.
type deadlines struct {
	read, write alarm
	idleT       alarm
	idle        time.Duration
	last        int64 // when a byte was last received or taken, on the loop's clock
}

// alarm is one deadline and the timer armed for it.
type alarm struct {
	on   bool            // a deadline is set
	when int64           // the deadline, on the loop's clock
	at   int64           // when t fires, on the loop's clock
	t    *executor.Timer // nil: none armed
	fire func()          // what the timer runs (made once)
}

// onClock returns t, a time on the loop's clock as Executor.Now reads it,
// in the loop's nanoseconds (loop.Loop.Now), the clock its timers run on.
// Saturates instead of overflowing.
func (c *Conn) onClock(t time.Time) int64 {
	return after(c.r.lp.Now(), t.Sub(c.exe().Now()))
}

// after returns now+d on the loop's clock, saturated.
func after(now int64, d time.Duration) int64 {
	if d > 0 && int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// set sets the deadline to when (on the loop's clock; on false: none):
// check runs once it has passed (at once if it has), unless it is set
// again first.
func (a *alarm) set(c *Conn, on bool, when int64, check func()) {
	a.on, a.when = on, when
	if !on {
		a.stop()
		return
	}
	if a.t != nil && a.at <= when {
		return // fires in time, and then arms itself for the rest
	}
	a.stop()
	if a.fire == nil {
		a.fire = func() { a.t = nil; check() }
	}
	d := when - c.r.lp.Now()
	if d <= 0 {
		check()
		return
	}
	a.at = when
	a.t = c.exe().AfterFunc(time.Duration(d), a.fire)
}

// due reports whether the deadline has passed; if it has not, it arms the
// timer for the rest.
func (a *alarm) due(c *Conn) bool {
	if !a.on {
		return false
	}
	if d := a.when - c.r.lp.Now(); d > 0 {
		if a.t == nil {
			a.at = a.when
			a.t = c.exe().AfterFunc(time.Duration(d), a.fire)
		}
		return false
	}
	return true
}

func (a *alarm) stop() {
	if a.t != nil {
		a.t.Stop()
		a.t = nil
	}
}

// dl returns c's deadline state, making it on first use.
func (c *Conn) dl() *deadlines {
	x := c.x()
	if x.dl == nil {
		x.dl = &deadlines{}
	}
	return x.dl
}

// SetReadDeadline sets the time after which c's receives (and those of
// its Reader) fail with os.ErrDeadlineExceeded, as a net.Conn's do: the
// pending ones at that time, and every later one until the deadline is
// moved. A receive that times out is withdrawn and loses no byte: what
// arrives later goes to the next receive. The zero time means no deadline.
// t is a time on the loop's clock, Executor.Now: the wall clock on a loop
// of its own (time.Now().Add(d) and c.Executor().Now().Add(d) are the
// same), the simulation's fake time on a loop that package sim steps
// (c.Executor().Now().Add(d) times out d later on it). The deadline is a
// timer of the loop, on that clock; no goroutine watches it. Loop only.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mustLoop("SetReadDeadline")
	if c.released {
		return net.ErrClosed
	}
	c.rtimeout = false
	c.dl().read.set(c, !t.IsZero(), c.onClock(t), c.checkRead)
	return nil
}

// checkRead expires the read deadline if it has passed.
func (c *Conn) checkRead() {
	if c.released || !c.ext.dl.read.due(c) {
		return
	}
	c.rtimeout = true
	c.failRecv(os.ErrDeadlineExceeded) // withdrawn: nothing was consumed
}

// SetWriteDeadline sets the time after which c's Write, WriteString and
// Flush fail with os.ErrDeadlineExceeded, and the pending Flushes with
// them, until the deadline is moved: a peer that does not take its output
// in time is found out. The output already written stays buffered and
// keeps leaving (Close still sends it, within the linger time). t is on
// the loop's clock, as for SetReadDeadline. The zero time means no
// deadline. Loop only.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.mustLoop("SetWriteDeadline")
	if c.released {
		return net.ErrClosed
	}
	c.wtimeout = false
	c.dl().write.set(c, !t.IsZero(), c.onClock(t), c.checkWrite)
	return nil
}

func (c *Conn) checkWrite() {
	if c.released || !c.ext.dl.write.due(c) {
		return
	}
	c.wtimeout = true
	for _, w := range c.ext.flushq {
		w.p.Reject(os.ErrDeadlineExceeded)
	}
	c.ext.flushq = nil
}

// SetDeadline sets the read and the write deadline. Loop only.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetIdleTimeout makes c close itself once no byte has been received on it
// or taken from its output by the kernel for d: its pending and later
// receives fail with ErrIdleTimeout, and Close sends what was written (for
// the linger time). d <= 0 removes the timeout. The default is none, or
// what WithIdleTimeout gave the listener. It is a timer of the loop, on
// the loop's clock (simulated time on a loop of package sim), armed again
// only when it fires. Loop only.
func (c *Conn) SetIdleTimeout(d time.Duration) {
	c.mustLoop("SetIdleTimeout")
	if c.released {
		return
	}
	if d <= 0 {
		if c.ext != nil && c.ext.dl != nil {
			c.ext.dl.idle = 0
			c.ext.dl.idleT.set(c, false, 0, nil)
		}
		c.idle = false
		return
	}
	dl := c.dl()
	dl.idle, dl.last, c.idle = d, c.r.lp.Now(), true
	dl.idleT.set(c, true, after(dl.last, d), c.checkIdle)
}

// WithIdleTimeout sets the idle timeout of every connection the listener
// accepts (see Conn.SetIdleTimeout).
func WithIdleTimeout(d time.Duration) ListenOption {
	return optionFunc(func(c *listenConfig) { c.idle = d })
}

// touch records activity for the idle timeout.
func (c *Conn) touch() { c.ext.dl.last = c.r.lp.Now() }

func (c *Conn) checkIdle() {
	dl := c.ext.dl
	if c.released || dl.idle <= 0 {
		return
	}
	dl.idleT.when = after(dl.last, dl.idle)
	if !dl.idleT.due(c) {
		return
	}
	c.closeWith(ErrIdleTimeout)
}

// stopTimers stops c's deadline timers; called when c is released.
func (c *Conn) stopTimers() {
	if c.ext == nil || c.ext.dl == nil {
		return
	}
	d := c.ext.dl
	d.read.stop()
	d.write.stop()
	d.idleT.stop()
}
