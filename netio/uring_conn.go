//go:build linux && !purego

package netio

// The io_uring backend's sockets (the backend and its completions are uring_ring.go):
// receives, sends and accepts as ring operations, and the slots that hold
// what they use until they complete.
//
// Invariants (all loop-owned; a listener's ringAccept also under l.mu):
//   - at most one receive and one send of a connection are in flight
//     (rfRecv, rfSend). A receive is submitted only by readNow, that is for
//     a receive that is pending (or a lingering close that discards), so a
//     connection whose owner is not receiving is not read from;
//   - a receive picks its buffer from the ring of provided buffers when
//     the bytes arrive: c.rbuf is that buffer (rbid its id) from the
//     completion until the next readNow, which gives it back to the ring
//     (the bytes the last receive returned are valid until the next
//     receive). A completed receive not yet returned is rfDone, with its
//     result in rres. Only when the ring cannot grow does a receive use a
//     buffer of the reactor's pool (rbid bidOwn), held by the slot (rown)
//     until it completes;
//   - a send reads c.out[woff:] as it was when it was submitted; the slot
//     holds that array (sbuf, slen bytes handed) until the completion,
//     c.out is neither compacted nor pooled while the send is in flight,
//     and Writes only append to it. The completion advances woff by what the kernel took
//     and submits the rest (with what was written meanwhile) at once,
//     unless the batch's flush will;
//   - a closed connection's operations are cancelled (IORING_OP_ASYNC_CANCEL
//     by descriptor, hard-linked to an IORING_OP_CLOSE of it) by the enter
//     that ends the batch; its slot is freed once the last of them has
//     completed. A buffer the closer may still read is not given back to
//     the ring: the ring gets fresh memory for its id;
//   - a listener has at most one accept in flight; what it accepted (afd)
//     or the error it met waits in ringAccept for the next acceptNow. A
//     listener's Close (any goroutine) shuts the socket down before it
//     closes it, which ends the accept in flight and frees the address at
//     once although the ring still holds the socket's file.

import (
	"io"
	"net"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/uring"
)

// Receive buffers: the ring of buffers the kernel picks from, grown on
// demand (ringBufsMin at the first receive, then doubled each time a
// receive finds none left) up to ringBufs, as many as the reactor's pool
// keeps: buffers given to the kernel stay there, so the ring is bounded as
// the pool is. A receive submitted asks the kernel to wait for the bytes
// before it picks a buffer (IORING_RECVSEND_POLL_FIRST), so a receive
// finds the ring empty only when its bytes are there; it then takes a
// buffer of the pool, and completes at once.
const (
	ringBufs    = poolMax
	ringBufsMin = 8
	bufGroup    = 0

	bidNone = 0xffff // the connection holds no receive buffer
	bidOwn  = 0xfffe // it holds one of the reactor's pool
)

// A receive's result is kept in an int16 (uringSock.rres): a buffer holds
// at most 32767 bytes.
const _ = uint16(32767 - readBufSize)

// uringSock is io_uring's part of a connection's sock.
type uringSock struct {
	rres int16  // the result of the receive that completed
	rbid uint16 // the id of the receive buffer c.rbuf is, or bidNone, bidOwn
	rf   uint8  // rfRecv, rfDone, rfSend, rfFull
}

// Bits of uringSock.rf.
const (
	rfRecv = 1 << iota // a receive is in flight
	rfDone             // a receive completed and its result is not yet returned
	rfSend             // a send is in flight
	rfFull             // the last send took less than it was handed
)

// ringSlot is what a slot holds for the operations in flight on the ring.
type ringSlot struct {
	ops  uint8  // operations in flight (a multishot poll until its last completion)
	slen uint32 // the bytes handed to the send in flight
	sbuf *byte  // the first byte it reads: keeps its array alive
	rown *byte  // the pool buffer a receive in flight writes
}

func (b *uringBackend) newSock(s *sock) { s.ur.rbid = bidNone }

// op queues an operation of kind on slot i's socket.
func (b *uringBackend) op(i int32, kind uint32) *uring.SQE {
	e := b.ring.Next()
	e.Fd = b.slots[i].fd
	e.UserData = b.data(i, b.slots[i].gen, kind)
	b.rs[i].ops++
	return e
}

// register sets a slot up on the ring for h: a connection's poll for its
// peer's end; a listener's accepts come with its Accepts.
func (b *uringBackend) register(fd int, h any) (int32, error) {
	i := b.take(fd, h)
	for len(b.rs) < len(b.slots) {
		b.rs = append(b.rs, ringSlot{})
	}
	if _, ok := h.(*Conn); ok {
		b.pollEnd(i)
	}
	return i, nil
}

// pollEnd arms slot i's multishot poll for its peer's end (a poll reports
// hang-ups and errors whatever it asks for).
func (b *uringBackend) pollEnd(i int32) {
	e := b.op(i, kindPoll)
	e.Opcode = uring.OpPollAdd
	e.Len = uring.PollAddMulti
	e.OpFlags = unix.EPOLLRDHUP
}

// unregister frees slot i once its operations have completed. A
// connection's are cancelled and its descriptor closed by the ring, in
// that order, at the batch's enter; a listener's descriptor is closed by
// its owner.
func (b *uringBackend) unregister(i int32) {
	s := &b.slots[i]
	if _, ok := s.h.(*Conn); ok && b.gone {
		unix.Close(int(s.fd))
	} else if ok {
		b.ring.Reserve(2) // the linked pair
		e := b.ring.Next()
		e.Opcode = uring.OpAsyncCancel
		e.Fd = s.fd
		e.OpFlags = uring.CancelFd | uring.CancelAll
		e.Flags = uring.SQEHardLink | uring.SQESkipSuccess
		e.UserData = b.ctl()
		e = b.ring.Next()
		e.Opcode = uring.OpClose
		e.Fd = s.fd
		e.Flags = uring.SQESkipSuccess
		e.UserData = b.ctl()
	}
	s.h = nil
	if b.rs[i].ops == 0 {
		b.freeSlot(i)
	}
}

// freeSlot frees slot i for a new socket.
func (b *uringBackend) freeSlot(i int32) {
	if int(i) < len(b.rs) {
		b.rs[i] = ringSlot{}
	}
	if b.release(i) {
		b.rs = nil // every socket gone after a burst: give the table back
	}
}

// busyConns reports whether a closed connection's slot still waits for
// its operations to complete (for the tests).
func (b *uringBackend) busyConns() bool {
	for i := range b.slots {
		if b.slots[i].h == nil && b.rs[i].ops > 0 {
			return true
		}
	}
	return false
}

// done handles the completion of one of c's operations.
func (b *uringBackend) done(c *Conn, kind uint32, e uring.CQE) {
	switch kind {
	case kindRecv:
		b.recvDone(c, e.Res, e.Flags)
	case kindSend:
		b.sendDone(c, e.Res)
	case kindPoll, kindDial:
		if e.Res == -int32(unix.ECANCELED) {
			return
		}
		if kind == kindPoll && e.Flags&uring.CQEFMore == 0 && e.Res >= 0 && !c.isReleased() {
			b.pollEnd(c.sk.slot) // the kernel ended it (a full completion ring)
		}
		ev := uint32(e.Res)
		if e.Res < 0 {
			ev = unix.EPOLLERR
		}
		b.event(c, ev)
	}
}

// event handles a poll's readiness: the end of a connect, or the peer's
// end while nobody receives (a pending receive hears of it from its own
// completion).
func (b *uringBackend) event(c *Conn, ev uint32) {
	if c.sk.kf&kDial != 0 {
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return
		}
		b.connected(c)
		if c.isReleased() || c.sk.kf&kDial != 0 {
			return
		}
	}
	if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 && !c.isReleased() &&
		!c.receiving() && c.sk.ur.rf&(rfRecv|rfDone) == 0 {
		peerEnd(c)
	}
}

// armDial arms the one-shot poll whose EPOLLOUT ends a connect.
func (b *uringBackend) armDial(c *Conn) {
	e := b.op(c.sk.slot, kindDial)
	e.Opcode = uring.OpPollAdd
	e.OpFlags = unix.EPOLLOUT
}

// readNow returns the result of the receive that completed, or (giving
// back the buffer the last receive returned) submits a receive and
// reports ok false.
func (b *uringBackend) readNow(c *Conn) (int, error, bool) {
	s := &c.sk.ur
	if c.isReleased() {
		return 0, net.ErrClosed, true
	}
	if s.rf&rfDone != 0 {
		s.rf &^= rfDone
		switch res := s.rres; {
		case res > 0:
			return int(res), nil, true
		case res == 0:
			return 0, nil, true // EOF
		default:
			return 0, sysOpError(c, "read", unix.Errno(-res)), true
		}
	}
	b.putR(c)
	if s.rf&rfRecv == 0 {
		b.recv(c, false)
	}
	return 0, nil, false
}

// recv queues a receive: into a buffer the kernel picks from the ring,
// or, when own, into one of the reactor's pool.
func (b *uringBackend) recv(c *Conn, own bool) {
	s := &c.sk
	if !own && b.br.Len() == 0 {
		b.br.Grow()
	}
	e := b.op(s.slot, kindRecv)
	e.Opcode = uring.OpRecv
	e.Ioprio = uring.RecvPollFirst
	if own {
		c.rbuf = c.r.getR()
		s.ur.rbid = bidOwn
		b.rs[s.slot].rown = &c.rbuf[0]
		e.Addr = uint64(uintptr(unsafe.Pointer(&c.rbuf[0])))
		e.Len = uint32(len(c.rbuf))
	} else {
		e.Flags = uring.SQEBufferSelect
		e.BufIndex = bufGroup
	}
	s.ur.rf |= rfRecv
}

// putR gives back the buffer the last receive returned.
func (b *uringBackend) putR(c *Conn) {
	s := &c.sk.ur
	switch s.rbid {
	case bidNone:
		return
	case bidOwn:
		c.r.putR(c.rbuf)
	default:
		b.br.GiveBack(s.rbid, false)
	}
	c.rbuf, s.rbid = nil, bidNone
}

// recvDone handles a receive's completion.
func (b *uringBackend) recvDone(c *Conn, res int32, flags uint32) {
	s := &c.sk.ur
	s.rf &^= rfRecv
	b.rs[c.sk.slot].rown = nil // the pool buffer, if any, is c.rbuf
	if flags&uring.CQEFBuffer != 0 {
		bid := uint16(flags >> 16)
		c.rbuf, s.rbid = b.br.Took(bid), bid
	}
	switch unix.Errno(-res) {
	case unix.ENOBUFS:
		b.putR(c)
		b.recv(c, !b.br.Grow()) // the ring is at its largest: a pool buffer
		return
	case unix.EINTR, unix.EAGAIN:
		b.putR(c)
		b.recv(c, false)
		return
	}
	if res <= 0 {
		b.putR(c)
	}
	s.rres = int16(res) // at most readBufSize bytes, or an errno
	s.rf |= rfDone
	c.readable()
	if !c.isReleased() && s.rf&rfDone != 0 && res <= 0 && !c.receiving() {
		// the peer's end, and nobody to receive it: see leave
		if res == 0 {
			c.leave(io.EOF)
		} else {
			c.leave(sysOpError(c, "read", unix.Errno(-res)))
		}
	}
}

// flushOut queues one send of everything buffered, unless one is in
// flight (its completion sends the rest).
func (b *uringBackend) flushOut(c *Conn) {
	s := &c.sk
	if s.ur.rf&rfSend != 0 || c.out == nil || c.isReleased() || s.kf&kDial != 0 || int(s.woff) == len(c.out) {
		return
	}
	p := s.pending(c.out)
	e := b.op(s.slot, kindSend)
	e.Opcode = uring.OpSend
	e.Addr = uint64(uintptr(unsafe.Pointer(&p[0])))
	e.Len = uint32(len(p))
	e.OpFlags = unix.MSG_NOSIGNAL
	b.rs[s.slot].sbuf, b.rs[s.slot].slen = &p[0], e.Len
	s.ur.rf |= rfSend
}

// sendDone handles a send's completion: what the kernel took leaves the
// output, and the rest is sent.
func (b *uringBackend) sendDone(c *Conn, res int32) {
	s := &c.sk
	rs := &b.rs[s.slot]
	handed := int(rs.slen)
	s.ur.rf &^= rfSend
	rs.sbuf = nil
	if res < 0 {
		switch unix.Errno(-res) {
		case unix.EINTR, unix.EAGAIN:
			b.flushOut(c)
		default:
			c.abort(sysOpError(c, "write", unix.Errno(-res)))
		}
		return
	}
	n := int(res)
	if n < handed {
		s.ur.rf |= rfFull // the socket's buffer is full: the rest waits in the kernel
	} else {
		s.ur.rf &^= rfFull
	}
	if !s.taken(c, n) {
		s.ur.rf &^= rfFull
	}
	if !c.isReleased() && c.out != nil && !c.isDirty() {
		b.flushOut(c)
	}
}

// full reports whether the last send took less than it was handed, or a
// send handed to the kernel is still waiting for room.
func (b *uringBackend) full(c *Conn) bool {
	s := &c.sk
	if c.out == nil {
		return false
	}
	if s.ur.rf&rfFull != 0 {
		return true
	}
	if s.ur.rf&rfSend == 0 {
		return false
	}
	return !b.ring.Unsubmitted(b.data(s.slot, b.slots[s.slot].gen, kindSend))
}

// lastWrite leaves a send already in flight to the ring's last enter;
// otherwise it sends what the socket takes at once.
func (b *uringBackend) lastWrite(c *Conn) {
	if !c.isReleased() && c.out != nil && c.sk.kf&kDial == 0 && c.sk.ur.rf&rfSend == 0 {
		unix.Write(int(c.sk.fd), c.sk.pending(c.out))
	}
}

// mayReset: a receive brought bytes nobody has read, or the kernel says
// so (kernel.mayReset).
func (b *uringBackend) mayReset(c *Conn) bool {
	if c.sk.ur.rf&rfDone != 0 && c.sk.ur.rres > 0 {
		return true
	}
	return b.kernel.mayReset(c)
}

// closeSock cancels the slot's operations and has the ring close the
// descriptor (unregister); the buffers a completion may still use stay
// with the slot.
func (b *uringBackend) closeSock(c *Conn) {
	s := &c.sk
	switch s.ur.rbid {
	case bidNone, bidOwn:
		// a pool buffer is left to the garbage collector (release)
	default:
		b.br.GiveBack(s.ur.rbid, true)
	}
	s.ur.rbid = bidNone
	s.dropOut(c, s.ur.rf&rfSend != 0)
	if s.slot >= 0 {
		b.unregister(s.slot)
		s.slot = -1
	} else {
		unix.Close(int(s.fd))
	}
	s.fd = -1
	b.endSock(c)
}

// ringAccept is a listener's accept on the ring.
type ringAccept struct {
	rsa  unix.RawSockaddrAny // the peer's address, written by the accept in flight
	alen uint32
	afd  int32 // a connection accepted and not yet handed on, or -1
	err  unix.Errno
	busy bool // an accept is in flight
}

// acceptNow returns the connection the last accept took, or its error,
// or submits an accept and reports ok false.
func (b *uringBackend) acceptNow(l *Listener) (*Conn, error, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err, done := acceptReady(b, l); done {
		return nil, err, true
	}
	s := &l.ls
	a := s.ur
	if a == nil {
		a = &ringAccept{afd: -1}
		s.ur = a
	}
	if a.afd >= 0 {
		fd := int(a.afd)
		a.afd = -1
		return accepted(l, fd, rawSockaddr(&a.rsa))
	}
	if a.err != 0 {
		err := a.err
		a.err = 0
		return nil, os.NewSyscallError("accept4", err), true
	}
	if !a.busy {
		e := b.op(s.slot, kindAccept)
		e.Opcode = uring.OpAccept
		a.alen = uint32(unsafe.Sizeof(a.rsa))
		e.Addr = uint64(uintptr(unsafe.Pointer(&a.rsa)))
		e.Off = uint64(uintptr(unsafe.Pointer(&a.alen)))
		e.OpFlags = unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC
		a.busy = true
	}
	return nil, nil, false
}

// accepted handles an accept's completion.
func (b *uringBackend) accepted(l *Listener, res int32) {
	l.mu.Lock()
	a := l.ls.ur
	a.busy = false
	switch {
	case res >= 0 && l.closed:
		unix.Close(int(res))
	case res >= 0:
		a.afd = res
	case l.closed:
	default:
		if e := unix.Errno(-res); !acceptAgain(e) && e != unix.EAGAIN && e != unix.ECANCELED {
			a.err = e
		}
	}
	l.mu.Unlock()
	l.acceptable()
}

func (b *uringBackend) forget(l *Listener) { forget(b, l) }

// closeListener readies a listener's socket on the ring for its close
// (under l.mu): a shutdown ends the accept in flight and stops the
// listening although the ring holds the socket's file until that accept's
// completion, and a connection accepted and not handed on is closed.
func (b *uringBackend) closeListener(l *Listener) error {
	if a := l.ls.ur; a != nil {
		unix.Shutdown(l.ls.fd, unix.SHUT_RDWR)
		if a.afd >= 0 {
			unix.Close(int(a.afd))
			a.afd = -1
		}
	}
	return closeListener(b, l)
}

// rawSockaddr converts the address an accept wrote.
func rawSockaddr(rsa *unix.RawSockaddrAny) unix.Sockaddr {
	port := func(p uint16) int {
		b := (*[2]byte)(unsafe.Pointer(&p))
		return int(b[0])<<8 | int(b[1])
	}
	switch rsa.Addr.Family {
	case unix.AF_INET:
		a := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		return &unix.SockaddrInet4{Port: port(a.Port), Addr: a.Addr}
	case unix.AF_INET6:
		a := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		return &unix.SockaddrInet6{Port: port(a.Port), ZoneId: a.Scope_id, Addr: a.Addr}
	case unix.AF_UNIX:
		a := (*unix.RawSockaddrUnix)(unsafe.Pointer(rsa))
		n := 0
		for n < len(a.Path) && a.Path[n] != 0 {
			n++
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(a.Path[i])
		}
		return &unix.SockaddrUnix{Name: string(b)}
	}
	return nil
}

// sendFile: the ring's sends take a file by the copy path.
func (b *uringBackend) sendFile(*Conn, *fileOut) (*future.Future[struct{}], bool) { return nil, false }
