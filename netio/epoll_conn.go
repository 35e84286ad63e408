//go:build linux && !purego

package netio

// The epoll backend's connection I/O: reads, writes and closes on a
// non-blocking socket registered with the backend (epoll_poller.go).
//
// Invariants (loop-owned):
//   - eRready is clear only after a read found the socket empty (EAGAIN,
//     or a read shorter than the buffer while no end was signalled: a FIN
//     or reset that came with the bytes raises no further edge); every
//     byte that arrives later raises an edge that sets it again, so a
//     receive that finds it clear may skip the read system call, and gives
//     its buffer back;
//   - eWready is clear only after a write could not take everything; the
//     next EPOLLOUT edge sets it and hands the rest to the kernel.

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// epollSock is epoll's part of a connection's sock.
type epollSock struct{ f uint8 }

// Bits of epollSock.f.
const (
	eRready = 1 << iota // a read may find bytes
	eWready             // a write may be taken
	eHup                // the peer's FIN, a reset or an error was signalled: reads go on until they say so
)

func (b *epollBackend) newSock(s *sock) { s.ep.f = eRready | eWready }

// armDial does nothing: the socket's EPOLLOUT edge ends the connect.
func (b *epollBackend) armDial(*Conn) {}

// event handles the socket's readiness.
func (b *epollBackend) event(c *Conn, ev uint32) {
	s := &c.sk
	if s.kf&kDial != 0 {
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return
		}
		s.ep.f |= eWready
		b.connected(c)
		if c.isReleased() || s.kf&kDial != 0 {
			return
		}
		// The peer's bytes and end may have come with the connect's edge
		// (a peer that writes and closes at once): they are not signalled
		// again, so the rest of ev is handled now.
	}
	if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.ep.f |= eHup
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.ep.f |= eRready
		c.readable()
		if s.ep.f&eHup != 0 && !c.isReleased() && !c.receiving() {
			peerEnd(c)
		}
	}
	if ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 && !c.isReleased() {
		s.ep.f |= eWready
		if (c.out != nil || c.zeroCopyFile() != nil) && !c.isDirty() {
			b.flushOut(c)
		}
	}
}

// readNow reads what the socket has into c's buffer.
func (b *epollBackend) readNow(c *Conn) (int, error, bool) {
	s := &c.sk
	if c.isReleased() {
		return 0, net.ErrClosed, true
	}
	if s.ep.f&eRready == 0 {
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
			if n < len(c.rbuf) && s.ep.f&eHup == 0 {
				// Drained: the next arrival raises an edge. Not so for an
				// end already signalled, which the next read returns.
				s.ep.f &^= eRready
			}
			return n, nil, true
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			s.ep.f &^= eRready
			c.r.putR(c.rbuf)
			c.rbuf = nil
			return 0, nil, false
		default:
			c.r.putR(c.rbuf)
			c.rbuf = nil
			return 0, sysOpError(c, "read", err), true
		}
	}
}

// flushOut hands the output to the kernel: one write for everything
// buffered, and the rest at the next EPOLLOUT edge.
func (b *epollBackend) flushOut(c *Conn) {
	s := &c.sk
	if sf := c.zeroCopyFile(); c.out == nil && sf != nil && s.ep.f&eWready != 0 {
		sendFileOut(c, sf)
		return
	}
	if s.ep.f&eWready == 0 || c.out == nil || s.kf&kDial != 0 {
		return
	}
	for {
		p := s.pending(c.out)
		n, err := unix.Write(int(s.fd), p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			s.ep.f &^= eWready
			return
		case err != nil:
			c.abort(sysOpError(c, "write", err))
			return
		}
		if !s.taken(c, n) || c.isReleased() || c.out == nil {
			return
		}
		if n < len(p) {
			s.ep.f &^= eWready // the socket's buffer is full: wait for the edge
			return
		}
	}
}

// lastWrite sends what the socket takes at once of the buffered output,
// before the executor's close drops the rest.
func (b *epollBackend) lastWrite(c *Conn) {
	if !c.isReleased() && c.out != nil && c.sk.kf&kDial == 0 {
		unix.Write(int(c.sk.fd), c.sk.pending(c.out))
	}
}

// full reports whether the socket has refused output that is still
// waiting: the last write could not take everything and no EPOLLOUT edge
// has come since.
func (b *epollBackend) full(c *Conn) bool {
	return c.sk.ep.f&eWready == 0 && c.out != nil
}

// closeSock closes the socket and frees its slot.
func (b *epollBackend) closeSock(c *Conn) {
	s := &c.sk
	if s.slot >= 0 {
		b.unregister(s.slot)
		s.slot = -1
	}
	unix.Close(int(s.fd))
	s.fd = -1
	s.dropOut(c, false)
	b.endSock(c)
}

// acceptNow accepts one connection, registering the listening socket on
// its first call.
func (b *epollBackend) acceptNow(l *Listener) (*Conn, error, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err, done := acceptReady(b, l); done {
		return nil, err, true
	}
	s := &l.ls
	if !s.rready {
		return nil, nil, false
	}
	for {
		fd, rsa, err := unix.Accept4(s.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch {
		case acceptAgain(err):
			continue
		case err == unix.EAGAIN:
			s.rready = false
			return nil, nil, false
		case err != nil:
			return nil, os.NewSyscallError("accept4", err), true
		}
		return accepted(l, fd, rsa)
	}
}

func (b *epollBackend) forget(l *Listener) { forget(b, l) }

func (b *epollBackend) closeListener(l *Listener) error { return closeListener(b, l) }
