package netio

// A connection's write path: Write into the output buffer, the output
// limit, Buffered, Flush and what the backend calls when the kernel took
// output. The invariants are conn.go's.

import (
	"math"
	"net"
	"os"
	"time"

	"github.com/spindle-rt/spindle/future"
)

// Write copies p into c's output buffer and returns len(p), nil: it never
// blocks. The loop hands the buffer to the kernel at the end of its
// current batch (so the replies to pipelined requests leave in one system
// call) and the rest as the socket can take more. After Close, CloseWrite
// or a failure it writes nothing and returns net.ErrClosed (or the
// connection's error). A Write past the output limit fails the connection
// with ErrOutputLimit when the peer has stopped reading (see
// SetOutputLimit). Loop only: off the loop it panics; use Submit.
func (c *Conn) Write(p []byte) (int, error) { return write(c, "Write", p) }

// WriteString is Write of a string, without converting it.
func (c *Conn) WriteString(s string) (int, error) { return write(c, "WriteString", s) }

func write[S []byte | string](c *Conn, op string, p S) (int, error) {
	c.mustLoop(op)
	if c.werr != nil {
		return 0, c.werr
	}
	if c.is(fClosing) || c.is(fWShut) {
		return 0, net.ErrClosed
	}
	if c.wtimeout {
		return 0, os.ErrDeadlineExceeded
	}
	if x := c.ext; x != nil && x.sf != nil && !x.sf.copying {
		return 0, ErrSendFilePending
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.limit > 0 && c.buffered()+len(p) > int(c.limit) && c.overLimit(len(p)) {
		inc(&c.r.stats.overLimit)
		c.abort(ErrOutputLimit)
		return 0, ErrOutputLimit
	}
	if c.is(fLayer) {
		b := c.ext.ly.pending()
		if *b == nil {
			*b = c.r.getW()
		}
		*b = append(*b, p...) // sealed at the batch boundary
		c.markDirty()
		return len(p), nil
	}
	if c.out == nil {
		c.out = c.r.getW()
	}
	c.out = append(c.out, p...)
	c.written += uint64(len(p))
	c.markDirty()
	return len(p), nil
}

// outputStall is how long output over the limit may wait, with the socket
// full and the kernel taking none of it, before the connection is cut: the
// peer has stopped reading.
const outputStall = time.Second

// outputCeiling is how many times its limit a connection's output may
// reach, however the peer reads.
const outputCeiling = 4

// overLimit reports whether a Write of n more bytes, which takes the
// output past the limit, fails the connection (see SetOutputLimit): the
// output would pass the ceiling, or the peer has stopped reading.
func (c *Conn) overLimit(n int) bool {
	waiting := int64(c.buffered()) + int64(n)
	if waiting > outputCeiling*int64(c.limit) {
		return true
	}
	if !c.r.be.full(c) {
		return false // the kernel takes what it can at the end of the batch
	}
	now := time.Duration(c.r.lp.Now()) // the loop's clock: simulated time under package sim
	x := c.x()
	if x.stallAt == 0 || c.taken != x.stallTaken {
		x.stallAt, x.stallTaken = now, c.taken // the stall starts now
		return false
	}
	return now-x.stallAt >= outputStall
}

// Buffered returns the number of bytes written to c but not yet taken by
// the kernel. Loop only.
func (c *Conn) Buffered() int {
	c.mustLoop("Buffered")
	return c.buffered()
}

// buffered is Buffered for netio's own callers, which have made the check.
func (c *Conn) buffered() int {
	if c.is(fLayer) {
		return int(c.written-c.taken) + c.ext.ly.buffered()
	}
	return int(c.written - c.taken)
}

// Unacked returns how many bytes of c's output the kernel has taken and
// the peer has not acknowledged yet (on Linux the socket's SIOCOUTQ; for
// a Unix socket, the bytes the peer has not read). With Buffered, it is
// the output still on its way to the peer: a peer that stops reading
// keeps it above zero once its receive buffer is full, even when the
// kernel's send buffer took everything written and Buffered is 0. It is 0
// once c's socket is closed, and always where the system does not tell
// (outside Linux). It costs a system call. Loop only.
func (c *Conn) Unacked() int {
	c.mustLoop("Unacked")
	if c.released {
		return 0
	}
	return c.r.be.unacked(c)
}

// SetOutputLimit sets the output limit of c, which bounds the output held
// for a peer that stopped reading, so that such a peer costs its own
// connection only. A Write that takes the output waiting (Buffered, with
// its bytes) past n fails the connection with ErrOutputLimit when the
// socket is full and the kernel has taken none of c's output for a second,
// or when the output would pass 4*n, however the peer reads. Output the
// kernel takes never counts: one large Write, or a burst of Writes in one
// batch, to a peer that reads goes through. n <= 0 means no limit; a
// limit above math.MaxInt32 is taken as math.MaxInt32. The default is
// DefaultOutputLimit, or what WithOutputLimit gave the listener. Loop
// only.
func (c *Conn) SetOutputLimit(n int) {
	c.mustLoop("SetOutputLimit")
	c.limit = clampLimit(n)
}

// clampLimit is n as Conn.limit keeps it, within int32: a limit past
// math.MaxInt32 (2 GiB of output) is kept as math.MaxInt32.
func clampLimit(n int) int32 {
	return int32(max(min(n, math.MaxInt32), math.MinInt32))
}

// OutputLimit returns c's output limit (0: none). Loop only.
func (c *Conn) OutputLimit() int {
	c.mustLoop("OutputLimit")
	if c.limit < 0 {
		return 0
	}
	return int(c.limit)
}

// Flush returns a future that completes once everything written to c
// before it has been taken by the kernel: the backpressure point (a writer
// awaits it before producing more). It fails with the connection's error
// if c fails or is closed first. Loop only.
func (c *Conn) Flush() *future.Future[struct{}] {
	c.mustLoop("Flush")
	if c.wtimeout && c.werr == nil {
		return future.Failed[struct{}](c.exe(), os.ErrDeadlineExceeded)
	}
	c.seal()
	if c.written == c.taken {
		if c.werr != nil && !c.is(fClosing) {
			return future.Failed[struct{}](c.exe(), c.werr)
		}
		return future.Resolved(c.exe(), struct{}{})
	}
	if c.werr != nil {
		return future.Failed[struct{}](c.exe(), c.werr)
	}
	p := future.NewPromise[struct{}](c.exe())
	x := c.x()
	x.flushq = append(x.flushq, flushWait{c.written, p})
	c.markDirty()
	return p.Future()
}

// seal hands what was written to c's layer, if c has one, to the layer's
// seal: at the batch boundary and at Flush.
func (c *Conn) seal() {
	if c.is(fLayer) {
		c.ext.ly.seal()
	}
}

// failFlush fails every pending Flush with the write error.
func (c *Conn) failFlush() {
	if c.ext == nil {
		return
	}
	for _, w := range c.ext.flushq {
		w.p.Reject(c.werr)
	}
	c.ext.flushq = nil
}
