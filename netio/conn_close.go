package netio

// A connection's close path: CloseWrite, Close and its linger, abort, and
// release, which closes the socket and gives the buffers up. The
// invariants are conn.go's.

import (
	"net"
	"time"

	"github.com/spindle-rt/spindle/future"
)

// SetLinger sets how long Close keeps c open to send the output written
// before it. With d <= 0, Close resets the connection (SO_LINGER 0, as
// net.TCPConn.SetLinger(0)): the output not yet sent is dropped, that
// still in c's buffer and that the kernel took and has not delivered, and
// the peer's receives fail with a reset. The default is DefaultLinger, or
// what WithLinger gave the listener. Loop only.
func (c *Conn) SetLinger(d time.Duration) {
	c.mustLoop("SetLinger")
	c.linger = d
}

// drained runs once the output has all been taken: it finishes a Close or
// a CloseWrite that waited for it.
func (c *Conn) drained() {
	switch {
	case c.is(fClosing):
		c.lingerClose()
	case c.is(fGone):
		c.release()
	case c.is(fWShut) && !c.is(fWShutOK):
		c.set(fWShutOK)
		if err := c.r.be.shutWrite(c); err != nil {
			c.abort(err)
		}
	}
}

// CloseWrite shuts the write side of c once its buffered output has been
// sent: the peer reads EOF; receiving goes on. Later writes fail with
// net.ErrClosed. Loop only.
func (c *Conn) CloseWrite() error {
	c.mustLoop("CloseWrite")
	if c.released || c.is(fClosing) {
		return net.ErrClosed
	}
	if c.is(fWShut) {
		return nil
	}
	if c.is(fLayer) {
		c.ext.ly.closeNotify()
	}
	c.set(fWShut)
	if c.written == c.taken {
		c.drained()
	}
	return nil
}

// Close closes c. Output written before Close is still sent, for at most
// the linger time (SetLinger), so a peer that never reads cannot hold the
// connection open; then the socket is closed. If input arrived that was
// not read, or output is not yet acknowledged, the close lingers (the
// write side is shut and input discarded until the peer's EOF, within the
// linger time), so the kernel does not reset the connection and lose the
// output. Pending receives fail with
// net.ErrClosed at once, and so do later receives and writes. Close is
// idempotent and may be called from any goroutine; it returns nil.
// Executor.Close closes every connection of the executor at once.
func (c *Conn) Close() error {
	c.check("Close")
	if c.r.lp.OnLoop() {
		c.closeOn()
		return nil
	}
	if c.closeReq.Swap(true) {
		return nil
	}
	toLoop(c.r.lp, c.closeOn, func() {}) // once the loop has closed, so has c
	return nil
}

func (c *Conn) closeOn() { c.closeWith(net.ErrClosed) }

// closeWith is Close on the loop: pending and later receives fail with
// err.
func (c *Conn) closeWith(err error) {
	if c.is(fClosing) || c.released {
		return
	}
	if c.is(fLayer) {
		c.ext.ly.closeNotify()
	}
	c.set(fClosing)
	c.failRecv(err)
	c.rerr = err
	if c.linger <= 0 || c.werr != nil {
		if c.werr == nil {
			c.r.be.reset(c) // no linger: the kernel's output goes too
		}
		c.abort(net.ErrClosed)
		return
	}
	if c.written == c.taken {
		c.lingerClose()
		return
	}
	c.markDirty()
	c.startLinger()
}

// startLinger bounds what is left of a Close by the linger time.
func (c *Conn) startLinger() {
	if x := c.x(); x.lingerT == nil {
		x.lingerT = c.exe().AfterFunc(c.linger, func() { c.abort(net.ErrClosed) })
	}
}

// lingerClose ends a Close once the output has all been taken by the
// kernel. Closing a socket whose input holds bytes not read (or that
// receives more) makes the kernel send a reset, which discards the output
// it has not delivered yet. So unless the socket is clear (no input
// unread, no output undelivered), the close lingers: the write side is
// shut (the peer reads EOF after the output), input is read and discarded
// until the peer's EOF, then the socket closes; the linger time bounds it.
func (c *Conn) lingerClose() {
	if c.released || c.is(fLingerIn) {
		return
	}
	if c.werr != nil || !c.r.be.mayReset(c) {
		c.release()
		return
	}
	if !c.is(fWShutOK) {
		c.set(fWShutOK)
		if err := c.r.be.shutWrite(c); err != nil {
			c.release()
			return
		}
	}
	c.set(fLingerIn)
	c.startLinger()
	c.discardInput()
}

// discardInputBurst is how many reads a lingering close makes in one go
// before it lets the loop run something else.
const discardInputBurst = 16

// discardInput reads and drops the input of a lingering close until the
// peer's EOF (or a failure), then closes the socket.
func (c *Conn) discardInput() {
	for range discardInputBurst {
		if c.released {
			return
		}
		n, err, ok := c.r.readNow(c)
		if !ok {
			return // the backend calls readable once there is more
		}
		if n == 0 || err != nil {
			c.release()
			return
		}
	}
	c.r.lp.Post(c.discardInput) // a peer that keeps sending: go on after the rest of the loop
}

// release closes the socket and gives the buffers up.
func (c *Conn) release() {
	if c.released {
		return
	}
	c.released = true
	if c.ext != nil && c.ext.lingerT != nil {
		c.ext.lingerT.Stop()
		c.ext.lingerT = nil
	}
	c.stopTimers()
	if c.owner != nil {
		c.owner.remove(c)
	}
	if c.werr == nil {
		c.werr = net.ErrClosed
	}
	if c.rerr == nil {
		c.rerr = net.ErrClosed
	}
	c.failRecv(c.rerr)
	c.failFlush()
	if c.is(fLayer) {
		c.ext.ly.release()
	}
	c.r.be.closeSock(c)
	// The last bytes received may still be read by the code that closed
	// c: the read buffer is left to the garbage collector, not pooled.
	c.rbuf, c.held = nil, 0
	c.recvq = nil
	c.r.conns--
	inc(&c.r.stats.closed)
	if x := c.ext; x != nil && x.done != nil {
		x.done.Resolve(c.rerr)
	}
}

// Done returns a future that completes once c's socket has been closed,
// with the reason as its value: io.EOF when the peer left (see "Peers that
// leave" in the package documentation), the socket's error on a failure,
// net.ErrClosed after Close, ErrOutputLimit, executor.ErrClosed when the
// executor closed. It never fails. It tells an owner that has no receive
// pending that its connection has gone, as context.Context's Done tells a
// function that its work is no longer wanted. Loop only.
func (c *Conn) Done() *future.Future[error] {
	c.mustLoop("Done")
	if c.released {
		return future.Resolved(c.exe(), c.rerr)
	}
	x := c.x()
	if x.done == nil {
		x.done = future.NewPromise[error](c.exe())
	}
	return x.done.Future()
}

// interruptWith closes c at once: the output the kernel takes now is sent,
// the rest dropped, and what is pending fails with err.
func (c *Conn) interruptWith(err error) {
	c.r.be.lastWrite(c)
	c.abort(err)
}

// closedErr returns the error of c's receives and true once c is closing
// or closed: what a Reader holds is then not delivered.
func (c *Conn) closedErr() (error, bool) { return c.rerr, c.is(fClosing) || c.released }
