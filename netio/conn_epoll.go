//go:build linux && !purego

package netio

// The Linux backend's connection I/O: reads, writes and closes on a
// non-blocking socket registered with the poller (poller_epoll.go).
//
// Invariants (loop-owned):
//   - rready is false only after a read found the socket empty (EAGAIN, or
//     a read shorter than the buffer while no end was signalled: a FIN or
//     reset that came with the bytes raises no further edge); every byte
//     that arrives later raises an edge that sets it again, so a receive
//     that finds rready false may skip the read system call, and gives its
//     buffer back;
//   - wready is false only after a write could not take everything; the
//     next EPOLLOUT edge sets it and hands the rest to the kernel;
//   - out[woff:] is the output not yet taken; out is nil while nothing is
//     buffered, so an idle connection holds no buffer;

import (
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/executor"
)

// sock is the backend's part of a connection.
type sock struct {
	woff   int
	fd     int32
	slot   int32
	la, ra inAddr // TCP addresses, kept inline: LocalAddr and RemoteAddr build them
	rres   int16  // on the ring: the result of the receive that completed (uring_conn_linux.go)
	rbid   uint16 // on the ring: the id of the receive buffer c.rbuf is, or bidNone, bidOwn
	rf     uint8  // on the ring: rfRecv, rfDone, rfSend, rfFull
	rready bool
	hup    bool // the peer's FIN, a reset or an error was signalled: reads go on until they say so
	wready bool
}

// newConn attaches the connected (or connecting) socket fd to r. Loop only.
// On failure fd is closed.
func newConn(r *reactor, fd int, cfg *listenConfig, laddr, raddr net.Addr) (*Conn, error) {
	c := newConnOf(laddr, raddr)
	c.sk = sock{fd: int32(fd), rready: true, wready: true, slot: -1, rbid: bidNone}
	if !c.attach(r, cfg) {
		unix.Close(fd)
		return nil, executor.ErrClosed
	}
	i, err := r.register(fd, c)
	if err != nil {
		c.abort(err)
		return nil, err
	}
	c.sk.slot = i
	return c, nil
}

// event handles the socket's readiness.
func (c *Conn) event(ev uint32) {
	s := &c.sk
	if c.dialP() != nil {
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return
		}
		c.connected()
		if c.released || c.dialP() != nil {
			return
		}
		// The peer's bytes and end may have come with the connect's edge
		// (a peer that writes and closes at once): they are not signalled
		// again, so the rest of ev is handled now.
	}
	if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.hup = true
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.rready = true
		c.readable()
		if s.hup && !c.released && !c.receiving() {
			c.peerEnd()
		}
	}
	if ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 && !c.released {
		s.wready = true
		if (c.out != nil || c.sendingZeroCopy()) && !c.dirty {
			c.flushOut()
		}
	}
}

// readNow reads what the socket has into c's buffer.
func (c *Conn) readNow() (int, error, bool) {
	if c.r.ring != nil {
		return c.ringReadNow()
	}
	s := &c.sk
	if c.released {
		return 0, net.ErrClosed, true
	}
	if !s.rready {
		if c.rbuf != nil {
			c.r.putR(c.rbuf)
			c.rbuf = nil
		}
		return 0, nil, false
	}
	if c.rbuf == nil {
		c.rbuf = c.r.getR()
	}
	for {
		n, err := unix.Read(int(s.fd), c.rbuf)
		switch {
		case err == nil:
			if n == 0 {
				c.r.putR(c.rbuf)
				c.rbuf = nil
				return 0, nil, true // EOF
			}
			if n < len(c.rbuf) && !s.hup {
				// Drained: the next arrival raises an edge. Not so for an
				// end already signalled, which the next read returns.
				s.rready = false
			}
			return n, nil, true
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			s.rready = false
			c.r.putR(c.rbuf)
			c.rbuf = nil
			return 0, nil, false
		default:
			c.r.putR(c.rbuf)
			c.rbuf = nil
			return 0, c.opError("read", err), true
		}
	}
}

func (c *Conn) opError(op string, err error) error {
	la, ra := c.LocalAddr(), c.RemoteAddr()
	return &net.OpError{Op: op, Net: la.Network(), Source: la, Addr: ra, Err: os.NewSyscallError(op, err)}
}

// flushOut hands the output to the kernel: one write for everything
// buffered, and the rest at the next EPOLLOUT edge.
func (c *Conn) flushOut() {
	if c.r.ring != nil {
		c.ringFlush()
		return
	}
	s := &c.sk
	if c.out == nil && c.sendingZeroCopy() && s.wready {
		c.sendFileOut()
		return
	}
	if !s.wready || c.out == nil || c.dialP() != nil {
		return
	}
	for {
		n, err := unix.Write(int(s.fd), c.out[s.woff:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			s.wready = false
			return
		case err != nil:
			c.abort(c.opError("write", err))
			return
		}
		s.woff += n
		if s.woff == len(c.out) {
			c.r.putW(c.out)
			c.out, s.woff = nil, 0
		} else {
			s.wready = false // the socket's buffer is full: wait for the edge
			if s.woff >= len(c.out)/2 {
				k := copy(c.out, c.out[s.woff:])
				c.out, s.woff = c.out[:k], 0
			}
		}
		c.took(n)
		return
	}
}

// lastWrite sends what the socket takes at once of the buffered output,
// before the executor's close drops the rest.
func (c *Conn) lastWrite() {
	if c.r.ring != nil {
		c.ringLastWrite()
		return
	}
	if !c.released && c.out != nil && c.dialP() == nil {
		unix.Write(int(c.sk.fd), c.out[c.sk.woff:])
	}
}

// shutWrite shuts the write side of the socket.
func (c *Conn) shutWrite() error {
	if err := unix.Shutdown(int(c.sk.fd), unix.SHUT_WR); err != nil && err != unix.ENOTCONN {
		return c.opError("shutdown", err)
	}
	return nil
}

// full reports whether the socket has refused output that is still
// waiting: the last write could not take everything and no EPOLLOUT edge
// has come since.
func (c *Conn) full() bool {
	if c.r.ring != nil {
		return c.ringFull()
	}
	return !c.sk.wready && c.out != nil
}

// peerEnd looks at a socket whose peer has shut its side (or reset) while
// nobody receives from it: if nothing it sent is left unread, the
// connection has ended (see leave). A peek, so no byte is taken from a
// receive to come.
func (c *Conn) peerEnd() {
	var b [1]byte
	for {
		n, _, err := unix.Recvfrom(int(c.sk.fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return
		case err != nil:
			c.leave(c.opError("read", err))
		case n == 0:
			c.leave(io.EOF)
		}
		return
	}
}

// mayReset reports whether closing the socket now could make the kernel
// reset the connection and lose output: input has arrived that was not
// read, or output the kernel took has not been acknowledged by the peer.
func (c *Conn) mayReset() bool {
	if c.r.ring != nil && c.sk.rf&rfDone != 0 && c.sk.rres > 0 {
		return true // a receive brought bytes nobody has read
	}
	fd := int(c.sk.fd)
	in, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
	if err != nil || in > 0 {
		return true
	}
	out, err := unix.IoctlGetInt(fd, unix.TIOCOUTQ)
	return err != nil || out > 0
}

// unacked returns how many bytes of output the kernel took that the peer
// has not acknowledged yet (for a Unix socket, not read yet): the
// socket's TIOCOUTQ (SIOCOUTQ).
func (c *Conn) unacked() int {
	if c.sk.fd < 0 {
		return 0
	}
	out, err := unix.IoctlGetInt(int(c.sk.fd), unix.TIOCOUTQ)
	if err != nil {
		return 0
	}
	return out
}

// reset sets SO_LINGER to 0, so that closing the socket resets the
// connection and drops the output the kernel holds.
func (c *Conn) reset() {
	if c.sk.fd >= 0 {
		_ = unix.SetsockoptLinger(int(c.sk.fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	}
}

// closeSock closes the socket and frees its slot.
func (c *Conn) closeSock() {
	s := &c.sk
	if c.r.ring != nil && s.slot >= 0 {
		c.ringCloseSock()
	} else {
		if s.slot >= 0 {
			c.r.unregister(s.slot)
			s.slot = -1
		}
		unix.Close(int(s.fd))
		s.fd = -1
		if c.out != nil {
			c.r.putW(c.out)
			c.out, s.woff = nil, 0
		}
	}
	if x := c.ext; x != nil {
		if p := x.dialP; p != nil {
			x.dialP = nil
			p.Reject(c.werr)
		}
		if x.stop != nil {
			x.stop()
			x.stop = nil
		}
	}
}
