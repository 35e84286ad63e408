//go:build linux && !purego

package netio

// The io_uring backend (SPINDLE_NETIO=uring): the loop's own ring, over
// the raw system calls, that both moves the bytes and is what the loop
// waits in. A receive is an IORING_OP_RECV into a buffer the kernel picks
// from a ring of provided buffers when the bytes arrive (so a connection
// waiting for input holds no buffer), submitted only while a receive is
// pending; a flush is an IORING_OP_SEND of the connection's output buffer,
// which stays the connection's (and is not moved or pooled) until its
// completion; an accept is an IORING_OP_ACCEPT, submitted only while an
// Accept is pending. Everything queued in a batch is handed to the kernel
// by the loop's next io_uring_enter, the one that also waits for
// completions with the next timer as its timeout (IORING_ENTER_EXT_ARG),
// so a request served costs no system call of its own. Each connection
// also has a multishot IORING_OP_POLL_ADD for the peer's end (EPOLLRDHUP,
// and the errors and hang-ups every poll reports), which tells a
// connection nobody receives from that its peer has gone; the eventfd
// that Submit writes is watched the same way. The connection and listener
// side is in uring_conn_linux.go. Where the kernel refuses io_uring
// (ENOSYS, EPERM, a seccomp filter, kernel.io_uring_disabled, or a kernel
// without the features used) the loop uses epoll.
//
// Invariants (all loop-owned):
//   - a completion names its socket as the epoll event does, slot index
//     and generation (slot in the low 28 bits of user_data, the kind of
//     operation in the next 4, generation in the high 32), so a
//     completion for a slot freed since is dropped;
//   - a connection's or listener's slot is freed only once every
//     operation it had in flight has completed (ringSlot.ops), so a
//     completion always finds its slot, and the memory a completion names
//     (the output a send reads, a buffer a receive writes) is held by the
//     slot until then;
//   - sqTail is the tail the loop has filled; the kernel sees it at the
//     next enter, which submits sqTail-sqSent entries.

import (
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	uringEntries = 256

	cqEntries = 4096 // completions the ring holds (IORING_SETUP_CQSIZE)

	opPollAdd     = 6
	opPollRemove  = 7
	opAccept      = 13
	opAsyncCancel = 14
	opClose       = 19
	opSend        = 26
	opRecv        = 27

	setupCQSize    = 1 << 3 // IORING_SETUP_CQSIZE
	setupSubmitAll = 1 << 7 // IORING_SETUP_SUBMIT_ALL

	sqeHardLink     = 1 << 3 // IOSQE_IO_HARDLINK
	sqeBufferSelect = 1 << 5 // IOSQE_BUFFER_SELECT
	sqeSkipSuccess  = 1 << 6 // IOSQE_CQE_SKIP_SUCCESS

	cancelAll = 1 << 0 // IORING_ASYNC_CANCEL_ALL
	cancelFd  = 1 << 1 // IORING_ASYNC_CANCEL_FD
	cancelAny = 1 << 2 // IORING_ASYNC_CANCEL_ANY

	sqCQOverflow = 1 << 1 // IORING_SQ_CQ_OVERFLOW

	pollAddMulti = 1 << 0 // IORING_POLL_ADD_MULTI
	cqeFBuffer   = 1 << 0 // IORING_CQE_F_BUFFER
	cqeFMore     = 1 << 1 // IORING_CQE_F_MORE

	enterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS
	enterExtArg    = 1 << 3 // IORING_ENTER_EXT_ARG

	featSingleMmap = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	featNoDrop     = 1 << 1 // IORING_FEAT_NODROP
	featExtArg     = 1 << 8 // IORING_FEAT_EXT_ARG

	regPbufRing = 22 // IORING_REGISTER_PBUF_RING

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
	sqFlag *uint32
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
	br     bufRing // the receive buffers the kernel picks from (uring_conn_linux.go)
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
	p := uringParams{flags: setupCQSize | setupSubmitAll, cqEntries: cqEntries}
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
	u.sqFlag = (*uint32)(at(p.sqOff.flags))
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
	if u.br.mem != nil {
		unix.Munmap(u.br.mem)
	}
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

// refusedOnce makes uringRefused log once per process.
var refusedOnce sync.Once

// uringRefused says, once, that io_uring was asked for and the kernel
// refused it (err): the loops are served by epoll instead.
func uringRefused(err error) {
	refusedOnce.Do(func() {
		slog.Warn("netio: SPINDLE_NETIO=uring asks for io_uring, which the kernel refuses; the loops use epoll",
			"err", err)
	})
}

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
	if err := u.br.init(u.fd); err != nil {
		u.close()
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

// waitUring submits what the batch queued and waits for a completion for
// at most timeout (negative: no bound), unless one is there already: one
// io_uring_enter, or none when nothing is queued and completions are
// waiting (or timeout is zero and the ring has nothing to hand over).
func (p *poller) waitUring(timeout time.Duration) {
	u := p.ring
	if atomic.LoadUint32(u.sqFlag)&sqCQOverflow != 0 {
		u.enter(1, 0) // completions the ring had no room for: flush them in
		return
	}
	if u.ready() > 0 || timeout == 0 {
		u.enter(0, -1) // a no-op when nothing is queued
		return
	}
	u.enter(1, timeout)
}

// dispatchUring hands each completion to its socket (ringComplete), and
// arms again the eventfd's poll when the kernel ended it.
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
		// The slot is freed as the completion is handled: publish the
		// head first, so that what the handler queues finds room.
		atomic.StoreUint32(u.cqHead, head+1)
		p.ringComplete(&c)
	}
	atomic.StoreUint32(u.cqHead, head)
}
