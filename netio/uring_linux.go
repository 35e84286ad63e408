//go:build linux && !purego

package netio

// A small io_uring of the loop's own, over the raw system calls: the
// first step of an io_uring backend. With SPINDLE_NETIO=uring the loop
// waits in io_uring_enter instead of epoll_wait: each socket is watched by
// one multishot, edge-triggered IORING_OP_POLL_ADD (its completions carry
// the same readiness bits epoll reports), the eventfd that Submit writes
// is watched the same way, and the next timer is the enter's timeout
// (IORING_ENTER_EXT_ARG). Registrations are queued as submissions and
// handed to the kernel by the next enter, so a new socket costs no
// epoll_ctl. Reads and writes still go through read(2) and write(2).
// Where the kernel refuses io_uring (ENOSYS, EPERM, a seccomp filter,
// kernel.io_uring_disabled, or a kernel without the features used) the
// loop uses epoll.
//
// Invariants (all loop-owned):
//   - a completion names its socket as the epoll event does: slot index
//     in the low 32 bits of user_data, slot generation in the high 32, so
//     a completion for a slot freed since is dropped;
//   - a slot freed (unregister) has its poll removed at once (an enter
//     that only submits), since the poll holds the socket's file open;
//   - sqTail is the tail the loop has filled; the kernel sees it at the
//     next enter, which submits sqTail-sqSent entries.

import (
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	uringEntries = 256

	opPollAdd    = 6
	opPollRemove = 7

	pollAddMulti = 1 << 0 // IORING_POLL_ADD_MULTI
	cqeFMore     = 1 << 1 // IORING_CQE_F_MORE

	enterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS
	enterExtArg    = 1 << 3 // IORING_ENTER_EXT_ARG

	featSingleMmap = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	featNoDrop     = 1 << 1 // IORING_FEAT_NODROP
	featExtArg     = 1 << 8 // IORING_FEAT_EXT_ARG

	offSQEs = 0x10000000 // IORING_OFF_SQES

	pollMask = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP
)

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqe struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	opFlags  uint32
	userData uint64
	bufIndex uint16
	person   uint16
	spliceFd int32
	addr3    uint64
	pad      uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	pad       uint32
	ts        uint64
}

// uring is one io_uring: its descriptor and the mappings of its rings.
type uring struct {
	fd     int
	ringM  []byte
	sqesM  []byte
	sqHead *uint32
	sqTail *uint32
	sqMask uint32
	sqN    uint32
	sqes   []sqe
	cqHead *uint32
	cqTail *uint32
	cqMask uint32
	cqes   []cqe
	tail   uint32 // filled, not yet published
	sent   uint32 // published to the kernel
	ts     unix.Timespec
	arg    getEventsArg
}

// uringSetup is io_uring_setup; a variable so that a test can make the
// kernel refuse it.
var uringSetup = func(entries uint32, p *uringParams) (int, error) {
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// newUring sets up a ring of entries submissions, or fails with the
// kernel's refusal.
func newUring(entries uint32) (*uring, error) {
	var p uringParams
	fd, err := uringSetup(entries, &p)
	if err != nil {
		return nil, os.NewSyscallError("io_uring_setup", err)
	}
	need := uint32(featSingleMmap | featNoDrop | featExtArg)
	if p.features&need != need {
		unix.Close(fd)
		return nil, os.NewSyscallError("io_uring_setup", unix.ENOSYS)
	}
	size := p.sqOff.array + p.sqEntries*4
	if c := p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(cqe{})); c > size {
		size = c
	}
	ringM, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("mmap", err)
	}
	sqesM, err := unix.Mmap(fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Munmap(ringM)
		unix.Close(fd)
		return nil, os.NewSyscallError("mmap", err)
	}
	u := &uring{fd: fd, ringM: ringM, sqesM: sqesM}
	at := func(off uint32) unsafe.Pointer { return unsafe.Pointer(&ringM[off]) }
	u.sqHead = (*uint32)(at(p.sqOff.head))
	u.sqTail = (*uint32)(at(p.sqOff.tail))
	u.sqMask = *(*uint32)(at(p.sqOff.ringMask))
	u.sqN = p.sqEntries
	u.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&sqesM[0])), p.sqEntries)
	array := unsafe.Slice((*uint32)(at(p.sqOff.array)), p.sqEntries)
	for i := range array {
		array[i] = uint32(i) // the submission array is the identity
	}
	u.cqHead = (*uint32)(at(p.cqOff.head))
	u.cqTail = (*uint32)(at(p.cqOff.tail))
	u.cqMask = *(*uint32)(at(p.cqOff.ringMask))
	u.cqes = unsafe.Slice((*cqe)(at(p.cqOff.cqes)), p.cqEntries)
	u.tail = atomic.LoadUint32(u.sqTail)
	u.sent = u.tail
	return u, nil
}

// close unmaps the rings and closes the ring (which cancels its polls).
func (u *uring) close() {
	unix.Munmap(u.sqesM)
	unix.Munmap(u.ringM)
	unix.Close(u.fd)
}

// next returns a cleared submission entry to fill, submitting what is
// queued first when the ring is full.
func (u *uring) next() *sqe {
	if u.tail-atomic.LoadUint32(u.sqHead) >= u.sqN {
		u.enter(0, -1)
	}
	e := &u.sqes[u.tail&u.sqMask]
	*e = sqe{}
	u.tail++
	return e
}

// pollAdd queues a multishot, edge-triggered poll of fd for mask.
func (u *uring) pollAdd(fd int, mask uint32, data uint64) {
	e := u.next()
	e.opcode = opPollAdd
	e.fd = int32(fd)
	e.len = pollAddMulti
	e.opFlags = mask
	e.userData = data
}

// pollRemove queues the removal of the poll whose user_data is data.
func (u *uring) pollRemove(data uint64) {
	e := u.next()
	e.opcode = opPollRemove
	e.fd = -1
	e.addr = data
	e.userData = data | removeBit
}

// removeBit marks the user_data of a removal: the removed poll's user_data
// with the top bit of its slot index set (slot indices stay below 1<<31).
const removeBit = 1 << 31

// ready reports how many completions wait in the ring.
func (u *uring) ready() uint32 {
	return atomic.LoadUint32(u.cqTail) - atomic.LoadUint32(u.cqHead)
}

// enter submits what is queued and, when wait is not zero and no
// completion is there yet, waits for one for at most wait (negative: no
// bound). It reports the kernel's error (ETIME at the timeout, EINTR).
func (u *uring) enter(minComplete uint32, wait time.Duration) error {
	atomic.StoreUint32(u.sqTail, u.tail)
	n := u.tail - u.sent
	var flags uintptr
	var argp unsafe.Pointer
	if minComplete > 0 {
		flags = enterGetEvents | enterExtArg
		u.arg = getEventsArg{}
		if wait >= 0 {
			u.ts = unix.NsecToTimespec(int64(wait))
			u.arg.ts = uint64(uintptr(unsafe.Pointer(&u.ts)))
		}
		argp = unsafe.Pointer(&u.arg)
	}
	if n == 0 && flags == 0 {
		return nil
	}
	r, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), uintptr(n), uintptr(minComplete), flags, uintptr(argp), unsafe.Sizeof(u.arg))
	if e != 0 {
		if e == unix.EBUSY || e == unix.EAGAIN {
			return e
		}
		if e != unix.ETIME && e != unix.EINTR {
			return e
		}
		// the entries were still consumed when the wait ends early
		u.sent = atomic.LoadUint32(u.sqHead)
		return e
	}
	u.sent += uint32(r)
	return nil
}

// reap calls f for each completion in the ring, then frees them.
func (u *uring) reap(f func(c *cqe)) {
	head := atomic.LoadUint32(u.cqHead)
	tail := atomic.LoadUint32(u.cqTail)
	for ; head != tail; head++ {
		c := u.cqes[head&u.cqMask]
		f(&c)
	}
	atomic.StoreUint32(u.cqHead, head)
}

// wantUring reports whether the loop should wait in io_uring: the
// environment variable SPINDLE_NETIO is "uring".
func wantUring() bool { return os.Getenv("SPINDLE_NETIO") == "uring" }

// efdData is the user_data of the eventfd's poll.
const efdData = uint64(1<<32 - 1) // slot efdSlot, generation 0

// slotData is the user_data of slot i's poll at generation gen.
func slotData(i int32, gen uint32) uint64 { return uint64(uint32(i)) | uint64(gen)<<32 }

// initUring sets the poller up on an io_uring, or fails with the kernel's
// refusal (and then has opened nothing).
func (p *poller) initUring() error {
	u, err := newUring(uringEntries)
	if err != nil {
		return err
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		u.close()
		return os.NewSyscallError("eventfd", err)
	}
	u.pollAdd(efd, unix.EPOLLIN, efdData)
	if err := u.enter(0, -1); err != nil {
		u.close()
		unix.Close(efd)
		return os.NewSyscallError("io_uring_enter", err)
	}
	p.ring, p.efd, p.epfd = u, efd, -1
	p.one[0] = 1
	return nil
}

// waitUring submits what is queued and waits for a completion for at most
// timeout (negative: no bound), unless one is there already.
func (p *poller) waitUring(timeout time.Duration) {
	if p.ring.ready() > 0 {
		p.ring.enter(0, -1)
		return
	}
	p.ring.enter(1, timeout)
}

// dispatchUring hands each completed poll's readiness to its socket, and
// arms again a poll the kernel ended.
func (p *poller) dispatchUring() {
	u := p.ring
	head := atomic.LoadUint32(u.cqHead)
	tail := atomic.LoadUint32(u.cqTail)
	for ; head != tail; head++ {
		c := u.cqes[head&u.cqMask]
		if c.userData == efdData {
			unix.Read(p.efd, p.buf8[:])
			if c.flags&cqeFMore == 0 && !p.closed {
				u.pollAdd(p.efd, unix.EPOLLIN, efdData)
			}
			continue
		}
		if c.userData&removeBit != 0 {
			// A removal that found its poll completing, not armed, is
			// tried again until the poll's last completion is seen.
			data := c.userData &^ removeBit
			if _, ok := p.dying[data]; ok && c.res < 0 && !p.closed {
				u.pollRemove(data)
			}
			continue
		}
		if c.flags&cqeFMore == 0 {
			delete(p.dying, c.userData) // the poll's last completion
		}
		i, gen := int32(uint32(c.userData)), uint32(c.userData>>32)
		if int(i) >= len(p.slots) {
			continue
		}
		s := &p.slots[i]
		if s.gen != gen || s.h == nil {
			continue // stale: the socket closed since
		}
		if c.flags&cqeFMore == 0 && c.res >= 0 {
			// the kernel ended the poll (a full completion ring): arm
			// it again; one that failed is reported, not armed again
			u.pollAdd(int(s.fd), pollMask, c.userData)
		}
		ev := uint32(c.res)
		if c.res < 0 {
			ev = unix.EPOLLERR
		}
		s.h.event(ev)
	}
	atomic.StoreUint32(u.cqHead, head)
}
