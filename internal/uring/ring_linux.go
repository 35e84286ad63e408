//go:build linux && !purego

package uring

// The ring itself: io_uring_setup, the mappings of the submission and
// completion queues, and io_uring_enter, over the raw system calls.
//
// Invariants (loop-owned):
//   - tail is the submission tail the loop has filled and sent the part
//     the kernel has consumed; the kernel sees tail at the next enter,
//     which submits tail-sent entries;
//   - the submission array is the identity (entry i at index i), set once.

import (
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Operations (IORING_OP_*) the project submits.
const (
	OpNop         = 0
	OpFsync       = 3
	OpPollAdd     = 6
	OpPollRemove  = 7
	OpAccept      = 13
	OpAsyncCancel = 14
	OpOpenat      = 18
	OpClose       = 19
	OpStatx       = 21
	OpRead        = 22
	OpWrite       = 23
	OpSend        = 26
	OpRecv        = 27
	OpRenameat    = 35
	OpUnlinkat    = 36
	OpFtruncate   = 55 // Linux 6.9
)

// Flags of a submission entry, of a cancel, of a poll and of a completion.
const (
	SQEHardLink     = 1 << 3 // IOSQE_IO_HARDLINK
	SQEAsync        = 1 << 4 // IOSQE_ASYNC: straight to the kernel's workers
	SQEBufferSelect = 1 << 5 // IOSQE_BUFFER_SELECT
	SQESkipSuccess  = 1 << 6 // IOSQE_CQE_SKIP_SUCCESS

	CancelAll = 1 << 0 // IORING_ASYNC_CANCEL_ALL
	CancelFd  = 1 << 1 // IORING_ASYNC_CANCEL_FD
	CancelAny = 1 << 2 // IORING_ASYNC_CANCEL_ANY

	PollAddMulti = 1 << 0 // IORING_POLL_ADD_MULTI

	FsyncDatasync = 1 << 0 // IORING_FSYNC_DATASYNC

	RecvPollFirst = 1 << 0 // IORING_RECVSEND_POLL_FIRST

	CQEFBuffer = 1 << 0 // IORING_CQE_F_BUFFER: the buffer id is in the top 16 bits of flags
	CQEFMore   = 1 << 1 // IORING_CQE_F_MORE: a multishot operation goes on
)

const (
	sqEntries = 256
	cqEntries = 4096 // completions the ring holds (IORING_SETUP_CQSIZE)

	setupCQSize    = 1 << 3 // IORING_SETUP_CQSIZE
	setupSubmitAll = 1 << 7 // IORING_SETUP_SUBMIT_ALL

	sqCQOverflow = 1 << 1 // IORING_SQ_CQ_OVERFLOW

	enterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS
	enterExtArg    = 1 << 3 // IORING_ENTER_EXT_ARG

	featSingleMmap = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	featNoDrop     = 1 << 1 // IORING_FEAT_NODROP
	featExtArg     = 1 << 8 // IORING_FEAT_EXT_ARG

	regProbe    = 8  // IORING_REGISTER_PROBE
	regPbufRing = 22 // IORING_REGISTER_PBUF_RING

	offSQEs = 0x10000000 // IORING_OFF_SQES
)

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

// SQE is a submission entry (struct io_uring_sqe).
type SQE struct {
	Opcode   uint8
	Flags    uint8
	Ioprio   uint16
	Fd       int32
	Off      uint64
	Addr     uint64
	Len      uint32
	OpFlags  uint32
	UserData uint64
	BufIndex uint16
	Person   uint16
	SpliceFd int32
	Addr3    uint64
	pad      uint64
}

type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	pad       uint32
	ts        uint64
}

// ring is one io_uring: its descriptor and the mappings of its queues.
type ring struct {
	fd     int
	ringM  []byte
	sqesM  []byte
	sqHead *uint32
	sqTail *uint32
	sqFlag *uint32
	sqMask uint32
	sqN    uint32
	sqes   []SQE
	cqHead *uint32
	cqTail *uint32
	cqMask uint32
	cqes   []CQE
	tail   uint32 // filled, not yet published
	sent   uint32 // published to the kernel
	ts     unix.Timespec
	arg    getEventsArg
}

// setup is io_uring_setup; a variable so that a test can make the kernel
// refuse it (Refuse).
var setup = func(entries uint32, p *params) (int, error) {
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// Refuse makes every ring set up from now on fail as if the kernel
// refused it with err, until the returned func is called. For tests; not
// safe while rings are being made.
func Refuse(err error) (restore func()) {
	real := setup
	setup = func(uint32, *params) (int, error) { return -1, err }
	return func() { setup = real }
}

// newRing sets up a ring of entries submissions, or fails with the
// kernel's refusal (and then has opened nothing).
func newRing(entries uint32) (*ring, error) {
	p := params{flags: setupCQSize | setupSubmitAll, cqEntries: cqEntries}
	fd, err := setup(entries, &p)
	if err != nil {
		return nil, os.NewSyscallError("io_uring_setup", err)
	}
	need := uint32(featSingleMmap | featNoDrop | featExtArg)
	if p.features&need != need {
		unix.Close(fd)
		return nil, os.NewSyscallError("io_uring_setup", unix.ENOSYS)
	}
	size := p.sqOff.array + p.sqEntries*4
	if c := p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(CQE{})); c > size {
		size = c
	}
	ringM, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("mmap", err)
	}
	sqesM, err := unix.Mmap(fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(SQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Munmap(ringM)
		unix.Close(fd)
		return nil, os.NewSyscallError("mmap", err)
	}
	u := &ring{fd: fd, ringM: ringM, sqesM: sqesM}
	u.mapQueues(&p)
	return u, nil
}

// mapQueues points the ring's fields into its mappings.
func (u *ring) mapQueues(p *params) {
	at := func(off uint32) unsafe.Pointer { return unsafe.Pointer(&u.ringM[off]) }
	u.sqHead = (*uint32)(at(p.sqOff.head))
	u.sqTail = (*uint32)(at(p.sqOff.tail))
	u.sqFlag = (*uint32)(at(p.sqOff.flags))
	u.sqMask = *(*uint32)(at(p.sqOff.ringMask))
	u.sqN = p.sqEntries
	u.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&u.sqesM[0])), p.sqEntries)
	array := unsafe.Slice((*uint32)(at(p.sqOff.array)), p.sqEntries)
	for i := range array {
		array[i] = uint32(i) // the submission array is the identity
	}
	u.cqHead = (*uint32)(at(p.cqOff.head))
	u.cqTail = (*uint32)(at(p.cqOff.tail))
	u.cqMask = *(*uint32)(at(p.cqOff.ringMask))
	u.cqes = unsafe.Slice((*CQE)(at(p.cqOff.cqes)), p.cqEntries)
	u.tail = atomic.LoadUint32(u.sqTail)
	u.sent = u.tail
}

// unmap unmaps the queues and closes the ring (which cancels its polls).
func (u *ring) unmap() {
	unix.Munmap(u.sqesM)
	unix.Munmap(u.ringM)
	unix.Close(u.fd)
}

// next returns a cleared submission entry to fill, submitting what is
// queued first when the queue is full.
func (u *ring) next() *SQE {
	if u.tail-atomic.LoadUint32(u.sqHead) >= u.sqN {
		u.enter(0, -1)
	}
	e := &u.sqes[u.tail&u.sqMask]
	*e = SQE{}
	u.tail++
	return e
}

// reserve makes room for n entries filled one after the other (a linked
// chain must not be split by a submission).
func (u *ring) reserve(n uint32) {
	if u.tail-atomic.LoadUint32(u.sqHead)+n > u.sqN {
		u.enter(0, -1)
	}
}

// ready reports how many completions wait in the ring.
func (u *ring) ready() uint32 {
	return atomic.LoadUint32(u.cqTail) - atomic.LoadUint32(u.cqHead)
}

// enter submits what is queued and, when minComplete is not zero and no
// completion is there yet, waits for one for at most wait (negative: no
// bound). It reports the kernel's error (ETIME at the timeout, EINTR).
func (u *ring) enter(minComplete uint32, wait time.Duration) error {
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
		if e == unix.ETIME || e == unix.EINTR {
			// the entries were still consumed when the wait ends early
			u.sent = atomic.LoadUint32(u.sqHead)
		}
		return e
	}
	u.sent += uint32(r)
	return nil
}

// wait submits what is queued and waits for a completion for at most
// timeout (negative: no bound), unless one is there already: one
// io_uring_enter, or none when nothing is queued and completions are
// waiting (or timeout is zero and the ring has nothing to hand over).
func (u *ring) wait(timeout time.Duration) {
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
