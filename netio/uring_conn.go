//go:build linux && !purego

package netio

// The io_uring backend's sockets (the ring itself is uring_linux.go):
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
//     holds that array (sbuf, slen bytes handed) until the completion, c.out is neither
//     compacted nor pooled while the send is in flight, and Writes only
//     append to it. The completion advances woff by what the kernel took
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
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kinds of operation, in bits 28-31 of the low word of user_data.
const (
	kindPoll   = 0 // the peer's end (multishot); a test handler's readiness
	kindRecv   = 1
	kindSend   = 2
	kindAccept = 3
	kindDial   = 4 // the one-shot EPOLLOUT poll that ends a connect
	kindCtl    = 7 // cancels and closes: their completions are dropped

	slotBits = 28
	slotMask = 1<<slotBits - 1
)

// ctlData is the user_data of a cancel or a close.
const ctlData = uint64(kindCtl << slotBits)

// opData is the user_data of an operation of kind for slot i at gen.
func opData(i int32, gen, kind uint32) uint64 {
	return uint64(uint32(i)|kind<<slotBits) | uint64(gen)<<32
}

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

	recvPollFirst = 1 << 0 // IORING_RECVSEND_POLL_FIRST

	bidNone = 0xffff // the connection holds no receive buffer
	bidOwn  = 0xfffe // it holds one of the reactor's pool
)

// A receive's result is kept in an int16 (sock.rres): a buffer holds at
// most 32767 bytes.
const _ = uint16(32767 - readBufSize)

// Bits of sock.rf.
const (
	rfRecv = 1 << iota // a receive is in flight
	rfDone             // a receive completed and its result is not yet returned
	rfSend             // a send is in flight
	rfFull             // the last send took less than it was handed
)

type ringBufEntry struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16 // of entry 0: the ring's tail
}

type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// bufRing is the ring of provided receive buffers (IORING_REGISTER_PBUF_RING).
type bufRing struct {
	mem   []byte
	ents  []ringBufEntry
	word  *uint32 // entry 0's bid and the tail: stored at once
	tail  uint16
	bid0  uint16
	bufs  [][]byte // by buffer id
	avail int      // provided and not yet taken by a completion
}

// init maps the ring and registers it with the io_uring fd.
func (b *bufRing) init(fd int) error {
	size := ringBufs * int(unsafe.Sizeof(ringBufEntry{}))
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return os.NewSyscallError("mmap", err)
	}
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), ringEntries: ringBufs, bgid: bufGroup}
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(fd), regPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
	if e != 0 {
		unix.Munmap(mem)
		return os.NewSyscallError("io_uring_register", e)
	}
	b.mem = mem
	b.ents = unsafe.Slice((*ringBufEntry)(unsafe.Pointer(&mem[0])), ringBufs)
	b.word = (*uint32)(unsafe.Pointer(&b.ents[0].bid))
	return nil
}

// provide hands buffer bid (back) to the kernel.
func (b *bufRing) provide(bid uint16) {
	k := b.tail & (ringBufs - 1)
	e := &b.ents[k]
	e.addr = uint64(uintptr(unsafe.Pointer(&b.bufs[bid][0])))
	e.len = readBufSize
	if k == 0 {
		b.bid0 = bid // stored with the tail
	} else {
		e.bid = bid
	}
	b.tail++
	b.avail++
	w := [2]uint16{b.bid0, b.tail}
	atomic.StoreUint32(b.word, *(*uint32)(unsafe.Pointer(&w)))
}

// grow makes more buffers; it reports false when the ring is full.
func (b *bufRing) grow() bool {
	n := len(b.bufs)
	add := min(max(ringBufsMin, n), ringBufs-n)
	for i := 0; i < add; i++ {
		b.bufs = append(b.bufs, make([]byte, readBufSize))
		b.provide(uint16(n + i))
	}
	return add > 0
}

// giveBack hands buffer bid back to the kernel; fresh says its memory may
// still be read (by whoever closed the connection that held it), so the
// ring gets new memory for it.
func (b *bufRing) giveBack(bid uint16, fresh bool) {
	if fresh {
		b.bufs[bid] = make([]byte, readBufSize)
	}
	b.provide(bid)
}

// took records that a completion took buffer bid and returns it.
func (b *bufRing) took(bid uint16) []byte {
	b.avail--
	return b.bufs[bid]
}

// ringSlot is what a slot holds for the operations in flight on the ring.
type ringSlot struct {
	ops  uint8  // operations in flight (a multishot poll until its last completion)
	slen uint32 // the bytes handed to the send in flight
	sbuf *byte  // the first byte it reads: keeps its array alive
	rown *byte  // the pool buffer a receive in flight writes
}

// ringOp queues an operation of kind on slot i's socket.
func (p *poller) ringOp(i int32, kind uint32) *sqe {
	e := p.ring.next()
	e.fd = p.slots[i].fd
	e.userData = opData(i, p.slots[i].gen, kind)
	p.rs[i].ops++
	return e
}

// ringRegister sets slot i up on the ring for h: a connection's poll for
// its peer's end; a listener's accepts come with its Accepts; another
// handler (the poller's tests) gets the readiness epoll would report.
func (p *poller) ringRegister(i int32, fd int, h handler) {
	for len(p.rs) < len(p.slots) {
		p.rs = append(p.rs, ringSlot{})
	}
	switch h.(type) {
	case *Conn:
		p.ringPollEnd(i)
	case *Listener:
	default:
		p.ring.pollAdd(fd, pollMask, slotData(i, p.slots[i].gen))
	}
}

// ringPollEnd arms slot i's multishot poll for its peer's end (a poll
// reports hang-ups and errors whatever it asks for).
func (p *poller) ringPollEnd(i int32) {
	e := p.ringOp(i, kindPoll)
	e.opcode = opPollAdd
	e.len = pollAddMulti
	e.opFlags = unix.EPOLLRDHUP
}

// ringUnregister frees slot i once its operations have completed. A
// connection's are cancelled and its descriptor closed by the ring, in
// that order, at the batch's enter; a listener's descriptor is closed by
// its owner. Another handler's poll is removed at once.
func (p *poller) ringUnregister(i int32) {
	s := &p.slots[i]
	switch s.h.(type) {
	case *Conn:
		if p.closed {
			unix.Close(int(s.fd))
			break
		}
		u := p.ring
		if u.tail-atomic.LoadUint32(u.sqHead)+2 > u.sqN {
			u.enter(0, -1) // room for the linked pair
		}
		e := u.next()
		e.opcode = opAsyncCancel
		e.fd = s.fd
		e.opFlags = cancelFd | cancelAll
		e.flags = sqeHardLink | sqeSkipSuccess
		e.userData = ctlData
		e = u.next()
		e.opcode = opClose
		e.fd = s.fd
		e.flags = sqeSkipSuccess
		e.userData = ctlData
	case *Listener:
	default:
		if !p.closed {
			// the poll holds the socket's file: remove it now, so that
			// closing the descriptor closes the socket
			d := slotData(i, s.gen)
			if p.dying == nil {
				p.dying = make(map[uint64]struct{})
			}
			p.dying[d] = struct{}{}
			p.ring.pollRemove(d)
			p.ring.enter(0, -1)
		}
		p.freeSlot(i)
		return
	}
	s.h = nil
	if p.rs[i].ops == 0 {
		p.freeSlot(i)
	}
}

// ringComplete handles one completion.
func (p *poller) ringComplete(c *cqe) {
	lo := uint32(c.userData)
	if lo&removeBit != 0 {
		// A removal that found its poll completing, not armed, is tried
		// again until the poll's last completion is seen.
		data := c.userData &^ removeBit
		if _, ok := p.dying[data]; ok && c.res < 0 && !p.closed {
			p.ring.pollRemove(data)
		}
		return
	}
	kind := lo >> slotBits
	if kind == kindCtl {
		return
	}
	i, gen := int32(lo&slotMask), uint32(c.userData>>32)
	if int(i) >= len(p.slots) || p.slots[i].gen != gen {
		if c.flags&cqeFMore == 0 {
			delete(p.dying, c.userData) // a removed poll's last completion
		}
		return // stale: the socket closed since
	}
	s := &p.slots[i]
	last := kind != kindPoll || c.flags&cqeFMore == 0
	switch h := s.h.(type) {
	case nil:
		p.ringDrop(i, kind, c)
		if last {
			p.rs[i].ops--
		}
		if p.rs[i].ops == 0 {
			p.freeSlot(i)
		}
	case *Conn:
		if last {
			p.rs[i].ops--
		}
		h.ringDone(kind, c)
	case *Listener:
		if last {
			p.rs[i].ops--
		}
		h.ringAccepted(c.res)
	default:
		if c.flags&cqeFMore == 0 && c.res >= 0 {
			// the kernel ended the poll (a full completion ring): arm
			// it again; one that failed is reported, not armed again
			p.ring.pollAdd(int(s.fd), pollMask, c.userData)
		}
		ev := uint32(c.res)
		if c.res < 0 {
			ev = unix.EPOLLERR
		}
		h.event(ev)
	}
}

// ringDrop lets go what a completed operation of a closed socket held.
func (p *poller) ringDrop(i int32, kind uint32, c *cqe) {
	switch kind {
	case kindSend:
		p.rs[i].sbuf = nil
	case kindRecv:
		p.rs[i].rown = nil
		if c.flags&cqeFBuffer != 0 {
			bid := uint16(c.flags >> 16)
			p.ring.br.took(bid)
			p.ring.br.giveBack(bid, false) // never seen by anyone
		}
	case kindAccept:
		if c.res >= 0 {
			unix.Close(int(c.res))
		}
	}
}

// freeSlot frees slot i for a new socket.
func (p *poller) freeSlot(i int32) {
	p.slots[i].h = nil
	p.slots[i].gen++
	if int(i) < len(p.rs) {
		p.rs[i] = ringSlot{}
	}
	p.free = append(p.free, i)
	if len(p.free) == len(p.slots) && cap(p.slots) > 1024 {
		p.slots, p.free, p.rs = nil, nil, nil // every socket gone after a burst: give the table back
	}
}

// ringBusy reports whether an operation is still in flight.
func (p *poller) ringBusy() bool {
	for i := range p.rs {
		if p.rs[i].ops > 0 {
			return true
		}
	}
	return false
}

// ringOrphans holds the slots of rings closed while the kernel still had
// operations in flight on them (it did not finish cancelling them in
// time): their buffers must not be reused, so they are never let go.
var ringOrphans struct {
	mu    sync.Mutex
	slots [][]ringSlot
	bufs  [][][]byte
}

// ringShut ends the ring's work before it is closed: what is queued is
// submitted (the closes of the sockets the executor's close released),
// everything still in flight is cancelled, and the loop waits (briefly)
// for the cancellations to complete, so that no buffer is let go while the
// kernel may still write into it. Called under p.mu, once.
func (p *poller) ringShut() {
	u := p.ring
	e := u.next()
	e.opcode = opAsyncCancel
	e.fd = -1
	e.opFlags = cancelAny | cancelAll
	e.userData = ctlData
	u.enter(0, -1)
	for tries := 0; p.ringBusy() && tries < 200; tries++ {
		u.enter(1, 10*time.Millisecond)
		u.reap(func(c *cqe) {
			lo := uint32(c.userData)
			kind := lo >> slotBits
			if c.userData == efdData || lo&removeBit != 0 || kind == kindCtl {
				return
			}
			i, gen := int32(lo&slotMask), uint32(c.userData>>32)
			if int(i) >= len(p.rs) || p.slots[i].gen != gen {
				return
			}
			if _, ok := p.slots[i].h.(*Conn); !ok && p.slots[i].h != nil {
				if _, ok := p.slots[i].h.(*Listener); !ok {
					return // a test handler's poll: not counted
				}
			}
			p.ringDrop(i, kind, c)
			if kind != kindPoll || c.flags&cqeFMore == 0 {
				p.rs[i].ops--
			}
		})
	}
	if p.ringBusy() {
		ringOrphans.mu.Lock()
		ringOrphans.slots = append(ringOrphans.slots, p.rs)
		ringOrphans.bufs = append(ringOrphans.bufs, u.br.bufs)
		ringOrphans.mu.Unlock()
	}
}

// ringDone handles the completion of one of c's operations.
func (c *Conn) ringDone(kind uint32, e *cqe) {
	switch kind {
	case kindRecv:
		c.ringRecvDone(e.res, e.flags)
	case kindSend:
		c.ringSendDone(e.res)
	case kindPoll, kindDial:
		if e.res == -int32(unix.ECANCELED) {
			return
		}
		if kind == kindPoll && e.flags&cqeFMore == 0 && e.res >= 0 && !c.released {
			c.r.ringPollEnd(c.sk.slot) // the kernel ended it (a full completion ring)
		}
		ev := uint32(e.res)
		if e.res < 0 {
			ev = unix.EPOLLERR
		}
		c.ringEvent(ev)
	}
}

// ringEvent handles a poll's readiness: the end of a connect, or the
// peer's end while nobody receives (a pending receive hears of it from its
// own completion).
func (c *Conn) ringEvent(ev uint32) {
	if c.dialP() != nil {
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return
		}
		c.connected()
		if c.released || c.dialP() != nil {
			return
		}
	}
	if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 && !c.released &&
		!c.receiving() && c.sk.rf&(rfRecv|rfDone) == 0 {
		c.peerEnd()
	}
}

// ringDialPoll arms the one-shot poll whose EPOLLOUT ends a connect.
func (c *Conn) ringDialPoll() {
	e := c.r.ringOp(c.sk.slot, kindDial)
	e.opcode = opPollAdd
	e.opFlags = unix.EPOLLOUT
}

// ringReadNow is readNow on the ring: the result of the receive that
// completed, or (giving back the buffer the last receive returned) a
// receive submitted, and ok false.
func (c *Conn) ringReadNow() (int, error, bool) {
	s := &c.sk
	if c.released {
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
			return 0, c.opError("read", unix.Errno(-res)), true
		}
	}
	c.ringPutR()
	if s.rf&rfRecv == 0 {
		c.ringRecv(false)
	}
	return 0, nil, false
}

// ringRecv queues a receive: into a buffer the kernel picks from the ring,
// or, when own, into one of the reactor's pool.
func (c *Conn) ringRecv(own bool) {
	s := &c.sk
	p := &c.r.poller
	br := &p.ring.br
	if !own && len(br.bufs) == 0 {
		br.grow()
	}
	e := p.ringOp(s.slot, kindRecv)
	e.opcode = opRecv
	e.ioprio = recvPollFirst
	if own {
		c.rbuf = c.r.getR()
		s.rbid = bidOwn
		p.rs[s.slot].rown = &c.rbuf[0]
		e.addr = uint64(uintptr(unsafe.Pointer(&c.rbuf[0])))
		e.len = uint32(len(c.rbuf))
	} else {
		e.flags = sqeBufferSelect
		e.bufIndex = bufGroup
	}
	s.rf |= rfRecv
}

// ringPutR gives back the buffer the last receive returned.
func (c *Conn) ringPutR() {
	s := &c.sk
	switch s.rbid {
	case bidNone:
		return
	case bidOwn:
		c.r.putR(c.rbuf)
	default:
		c.r.ring.br.giveBack(s.rbid, false)
	}
	c.rbuf, s.rbid = nil, bidNone
}

// ringRecvDone handles a receive's completion.
func (c *Conn) ringRecvDone(res int32, flags uint32) {
	s := &c.sk
	p := &c.r.poller
	s.rf &^= rfRecv
	p.rs[s.slot].rown = nil // the pool buffer, if any, is c.rbuf
	if flags&cqeFBuffer != 0 {
		bid := uint16(flags >> 16)
		c.rbuf, s.rbid = p.ring.br.took(bid), bid
	}
	switch unix.Errno(-res) {
	case unix.ENOBUFS:
		c.ringPutR()
		c.ringRecv(!p.ring.br.grow()) // the ring is at its largest: a pool buffer
		return
	case unix.EINTR, unix.EAGAIN:
		c.ringPutR()
		c.ringRecv(false)
		return
	}
	if res <= 0 {
		c.ringPutR()
	}
	s.rres = int16(res) // at most readBufSize bytes, or an errno
	s.rf |= rfDone
	c.readable()
	if !c.released && s.rf&rfDone != 0 && res <= 0 && !c.receiving() {
		// the peer's end, and nobody to receive it: see leave
		if res == 0 {
			c.leave(io.EOF)
		} else {
			c.leave(c.opError("read", unix.Errno(-res)))
		}
	}
}

// ringFlush is flushOut on the ring: one send of everything buffered,
// unless one is in flight (its completion sends the rest).
func (c *Conn) ringFlush() {
	s := &c.sk
	if s.rf&rfSend != 0 || c.out == nil || c.released || c.dialP() != nil || s.woff == len(c.out) {
		return
	}
	p := &c.r.poller
	e := p.ringOp(s.slot, kindSend)
	e.opcode = opSend
	e.addr = uint64(uintptr(unsafe.Pointer(&c.out[s.woff])))
	e.len = uint32(len(c.out) - s.woff)
	e.opFlags = unix.MSG_NOSIGNAL
	p.rs[s.slot].sbuf, p.rs[s.slot].slen = &c.out[s.woff], e.len
	s.rf |= rfSend
}

// ringSendDone handles a send's completion: what the kernel took leaves
// the output, and the rest is sent.
func (c *Conn) ringSendDone(res int32) {
	s := &c.sk
	p := &c.r.poller
	handed := int(p.rs[s.slot].slen)
	s.rf &^= rfSend
	p.rs[s.slot].sbuf = nil
	if res < 0 {
		switch unix.Errno(-res) {
		case unix.EINTR, unix.EAGAIN:
			c.ringFlush()
		default:
			c.abort(c.opError("write", unix.Errno(-res)))
		}
		return
	}
	n := int(res)
	s.woff += n
	if s.woff == len(c.out) {
		c.r.putW(c.out)
		c.out, s.woff = nil, 0
		s.rf &^= rfFull
	} else {
		if n < handed {
			s.rf |= rfFull // the socket's buffer is full: the rest waits in the kernel
		} else {
			s.rf &^= rfFull
		}
		if s.woff >= len(c.out)/2 {
			k := copy(c.out, c.out[s.woff:])
			c.out, s.woff = c.out[:k], 0
		}
	}
	c.took(n)
	if !c.released && c.out != nil && !c.dirty {
		c.ringFlush()
	}
}

// ringFull is full on the ring: the last send took less than it was
// handed, or a send handed to the kernel is still waiting for room.
func (c *Conn) ringFull() bool {
	s := &c.sk
	if c.out == nil {
		return false
	}
	if s.rf&rfFull != 0 {
		return true
	}
	if s.rf&rfSend == 0 {
		return false
	}
	u := c.r.ring
	d := opData(s.slot, c.r.slots[s.slot].gen, kindSend)
	for k := u.sent; k != u.tail; k++ {
		if u.sqes[k&u.sqMask].userData == d {
			return false // not handed to the kernel yet
		}
	}
	return true
}

// ringLastWrite is lastWrite on the ring: a send already in flight goes
// with the ring's last enter; otherwise what the socket takes at once.
func (c *Conn) ringLastWrite() {
	if !c.released && c.out != nil && c.dialP() == nil && c.sk.rf&rfSend == 0 {
		unix.Write(int(c.sk.fd), c.out[c.sk.woff:])
	}
}

// ringCloseSock is closeSock on the ring: the slot's operations are
// cancelled and the descriptor closed by the ring (ringUnregister); the
// buffers a completion may still use stay with the slot.
func (c *Conn) ringCloseSock() {
	s := &c.sk
	br := &c.r.ring.br
	switch s.rbid {
	case bidNone, bidOwn:
		// a pool buffer is left to the garbage collector (release)
	default:
		br.giveBack(s.rbid, true)
	}
	s.rbid = bidNone
	if c.out != nil {
		if s.rf&rfSend == 0 {
			c.r.putW(c.out)
		}
		c.out, s.woff = nil, 0
	}
	if s.slot >= 0 {
		c.r.unregister(s.slot)
		s.slot = -1
	}
	s.fd = -1
}

// ringAccept is a listener's accept on the ring.
type ringAccept struct {
	rsa  unix.RawSockaddrAny // the peer's address, written by the accept in flight
	alen uint32
	afd  int32 // a connection accepted and not yet handed on, or -1
	err  unix.Errno
	busy bool // an accept is in flight
}

// ringAcceptNow is acceptNow on the ring (under l.mu, registered): the
// connection the last accept took, or its error, or an accept submitted
// and ok false.
func (l *Listener) ringAcceptNow() (*Conn, error, bool) {
	s := &l.ls
	a := s.ring
	if a == nil {
		a = &ringAccept{afd: -1}
		s.ring = a
	}
	if a.afd >= 0 {
		fd := int(a.afd)
		a.afd = -1
		c, err, ok := l.accepted(fd, rawSockaddr(&a.rsa))
		return c, err, ok
	}
	if a.err != 0 {
		err := a.err
		a.err = 0
		return nil, os.NewSyscallError("accept4", err), true
	}
	if !a.busy {
		e := l.r.ringOp(s.slot, kindAccept)
		e.opcode = opAccept
		a.alen = uint32(unsafe.Sizeof(a.rsa))
		e.addr = uint64(uintptr(unsafe.Pointer(&a.rsa)))
		e.off = uint64(uintptr(unsafe.Pointer(&a.alen)))
		e.opFlags = unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC
		a.busy = true
	}
	return nil, nil, false
}

// ringAccepted handles an accept's completion.
func (l *Listener) ringAccepted(res int32) {
	l.mu.Lock()
	a := l.ls.ring
	a.busy = false
	switch {
	case res >= 0 && l.closed:
		unix.Close(int(res))
	case res >= 0:
		a.afd = res
	case l.closed:
	default:
		switch e := unix.Errno(-res); e {
		case unix.EINTR, unix.ECONNABORTED, unix.EAGAIN, unix.ECANCELED:
		default:
			a.err = e
		}
	}
	l.mu.Unlock()
	l.acceptable()
}

// ringCloseListener readies a listener's socket on the ring for its
// close (under l.mu): a shutdown ends the accept in flight and stops the
// listening although the ring holds the socket's file until that accept's
// completion, and a connection accepted and not handed on is closed.
func (l *Listener) ringCloseListener() {
	a := l.ls.ring
	if a == nil {
		return
	}
	unix.Shutdown(l.ls.fd, unix.SHUT_RDWR)
	if a.afd >= 0 {
		unix.Close(int(a.afd))
		a.afd = -1
	}
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

// ringBusyConns reports whether a closed connection's slot still waits for
// its operations to complete (for the tests).
func (p *poller) ringBusyConns() bool {
	for i := range p.slots {
		if p.slots[i].h == nil && p.rs[i].ops > 0 {
			return true
		}
	}
	return false
}
