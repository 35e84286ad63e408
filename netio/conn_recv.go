package netio

// A connection's receive path: Recv, TryRecv and PollRecv, the pump that
// serves queued receives in order, and what the backend calls when bytes
// may have arrived or the peer has gone. The invariants are conn.go's.

import (
	"errors"
	"io"
	"os"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// Recv returns a future of the next bytes received on c (at least one).
// The slice is c's own buffer: it stays valid until the next receive on c
// (Recv, TryRecv, PollRecv) and must be copied to be kept. The future fails
// with io.EOF once the peer has closed its side and everything before was
// received, with net.ErrClosed once c is closed, with the socket's error on
// a failure (errors.Is(err, syscall.ECONNRESET) on a reset), and with
// executor.ErrClosed once the executor has closed. Bytes are read from the
// socket only while a receive is pending. Several Recvs may be pending;
// they are served in order, each after the callbacks of the one before
// have run. Cancelling a pending Recv loses no bytes. Any goroutine.
func (c *Conn) Recv() *future.Future[[]byte] {
	c.check("Recv")
	return onLoopFuture(c.r.lp, c.recvOn)
}

func (c *Conn) recvOn(p *future.Promise[[]byte]) {
	c.recvq = append(sweep(c.recvq), p)
	if len(c.recvq) == 1 && !c.is(fPumping) {
		c.pump()
	}
}

// pump serves the first pending Recv if bytes (or an error) are there; the
// next one is served by a runnable queued behind the callbacks of the
// first, so the bytes the first returned stay valid while they run.
func (c *Conn) pump() {
	for len(c.recvq) > 0 {
		b, err, ok := c.receive()
		if !ok {
			return
		}
		p := c.recvq[0]
		copy(c.recvq, c.recvq[1:])
		c.recvq[len(c.recvq)-1] = nil
		c.recvq = c.recvq[:len(c.recvq)-1]
		if err != nil {
			p.Reject(err)
			continue
		}
		if !p.Resolve(b) {
			c.held = int32(len(b)) // cancelled meanwhile: keep the bytes for the next
			continue
		}
		if len(c.recvq) > 0 && !c.is(fPumping) {
			c.set(fPumping)
			c.r.lp.Post(c.pumpLater)
		}
		return
	}
}

func (c *Conn) pumpLater() {
	c.unset(fPumping)
	c.pump()
}

// receive is one receive: the next bytes, a sticky error, or !ok when
// nothing is readable yet (the backend then calls readable once it may be).
func (c *Conn) receive() ([]byte, error, bool) {
	if c.rtimeout {
		return nil, os.ErrDeadlineExceeded, true // nothing consumed
	}
	if c.held > 0 {
		n := c.held
		c.held = 0
		if c.is(fLayer) {
			return c.ext.ly.last()[:n], nil, true
		}
		return c.rbuf[:n], nil, true
	}
	if c.rerr != nil {
		return nil, c.rerr, true
	}
	if c.is(fLayer) {
		return c.ext.ly.open()
	}
	if c.r.draining {
		return nil, nil, false // Shutdown: nothing more is read for a receive
	}
	n, err, ok := c.r.readNow(c)
	if !ok {
		return c.wouldWait()
	}
	if n > 0 {
		if err != nil && !errors.Is(err, io.EOF) {
			c.rerr = err
		}
		if c.idle {
			c.touch()
		}
		c.set(fRecvd)
		return c.rbuf[:n], nil, true
	}
	if err == nil {
		err = io.EOF
	}
	c.rerr = err
	return nil, err, true
}

// wouldWait is what a receive that found nothing to read returns: it
// fails with ErrServerClosed when a Server drains c and no Reader holds
// the start of a token; otherwise it waits (ok=false).
func (c *Conn) wouldWait() ([]byte, error, bool) {
	if c.is(fDrain) && !c.is(fPartial) {
		return nil, ErrServerClosed, true
	}
	return nil, nil, false
}

// TryRecv returns bytes that are already readable on c, without waiting:
// the same slice as Recv's, valid until the next receive. It returns false
// when nothing is readable (or c has ended: Recv or PollRecv then says
// why). On the portable backend a TryRecv that finds nothing asks the
// connection's reader goroutine for the next bytes, so a later TryRecv may
// find them. Loop only.
func (c *Conn) TryRecv() ([]byte, bool) {
	c.mustLoop("TryRecv")
	b, err, ok := c.receive()
	if !ok || err != nil {
		return nil, false
	}
	return b, true
}

// PollRecv is the poll form of Recv, which makes c a merge.Stream[[]byte]
// and a future.Poller[[]byte]: it returns the next bytes (ok), the error
// Recv would fail with (err), or neither, and then wakes w once bytes may
// have arrived. The slice is valid until the next receive. Loop only.
func (c *Conn) PollRecv(w executor.Waker) ([]byte, bool, error) {
	c.mustLoop("PollRecv")
	if w == nil {
		panic("netio: PollRecv with nil Waker")
	}
	b, err, ok := c.receive()
	if !ok {
		c.pollw = w
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// failRecv fails every pending receive with err.
func (c *Conn) failRecv(err error) {
	for i, p := range c.recvq {
		p.Reject(err)
		c.recvq[i] = nil
	}
	c.recvq = c.recvq[:0]
	if w := c.pollw; w != nil {
		c.pollw = nil
		w.Wake()
	}
}

// drainNow makes c's receives that would wait fail with ErrServerClosed,
// the pending ones first.
func (c *Conn) drainNow() {
	c.set(fDrain)
	if len(c.recvq) > 0 && !c.is(fPumping) {
		c.pump()
	}
	if w := c.pollw; w != nil {
		c.pollw = nil
		w.Wake()
	}
}

// holdPartial records whether c's Reader holds the start of a token, which
// keeps a draining connection's receives going (fPartial).
func (c *Conn) holdPartial(on bool) { c.put(fPartial, on) }
