//go:build linux && !purego

package uring

// One ring per loop: Of makes it and attaches it to the loop as its IO;
// completions are handed to the component whose tag their user_data
// carries (doc.go states the rules).
//
// Invariants:
//   - the ring, handlers and closing are loop-owned; mu guards closed and
//     efd against a late Wake from another goroutine (Wake writes efd
//     under mu, close closes it under mu);
//   - the eventfd's multishot poll is armed from Of until close (armed
//     again when the kernel ends it), with user_data efdData (tag 0);
//   - a completion whose tag has no handler cannot exist: a tag is given
//     out only with its handler and never taken back.

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/internal/loop"
)

// Ring is a loop's io_uring (see the package doc).
type Ring struct {
	ring
	lp       *loop.Loop
	handlers [maxTags]Handler
	ntags    int
	bufs     []*BufRing      // the rings of provided buffers registered on it
	probed   *[probeOps]bool // the kernel's operations, once asked (Supports)
	closing  bool
	watch    loop.CloseWatch

	mu     sync.Mutex
	closed bool
	efd    int
	one    [8]byte // 1, little-endian: what Wake writes
	buf8   [8]byte // what the eventfd's reads land in
}

// Tag names a component's operations in their user_data (UserData).
type Tag uint8

const (
	maxTags  = 16
	tagShift = 60
	bitsMask = 1<<tagShift - 1

	efdData = 1 // tag 0: the eventfd's poll
	ctlData = 0 // tag 0: the ring's own cancels; their completions are dropped
)

// UserData is the user_data of an operation of the component tag: its
// own bits (the low 60 bits; the rest are dropped) and its tag.
func UserData(tag Tag, bits uint64) uint64 { return uint64(tag)<<tagShift | bits&bitsMask }

// CQE is a completion (struct io_uring_cqe).
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// Bits returns the component's own bits of the completion's user_data.
func (c CQE) Bits() uint64 { return c.UserData & bitsMask }

// Handler is a component that submits to a ring. Its methods run on the
// loop.
type Handler interface {
	// Complete handles the completion of one of the component's
	// operations.
	Complete(c CQE)
	// Closing says the ring closes: the component ends its work; it may
	// still queue entries (closes), which the ring submits.
	Closing()
	// Pending reports whether an operation of the component is in flight.
	Pending() bool
	// Closed says the ring has closed; drained false means operations
	// were still in flight, and the memory they name must never be used
	// again.
	Closed(drained bool)
}

type ringKey struct{}

// refusal is what a loop whose ring the kernel refused keeps, so that it
// asks once.
type refusal struct{ err error }

// ErrOtherIO is Of's error on a loop that already waits in another IO.
var ErrOtherIO = errors.New("uring: the loop waits in another IO")

// ErrSim is Of's error on a loop that a simulation steps.
var ErrSim = errors.New("uring: a simulated loop has no io_uring")

// declined holds the loops whose sockets netio.Use gave to epoll
// (Decline): any goroutine, under mu.
var declined struct {
	mu sync.Mutex
	m  map[weak.Pointer[loop.Loop]]struct{}
}

// Decline records that lp's sockets are to be served by epoll (on: netio.Use
// chose it), or no longer (on false), so that a component that would make
// the loop a ring only because the environment asks for io_uring (fileio)
// leaves it alone: a ring made for lp would take its sockets from epoll. Of
// itself does not ask: a component that needs the ring still makes it. Any
// goroutine.
func Decline(lp *loop.Loop, on bool) {
	declined.mu.Lock()
	defer declined.mu.Unlock()
	k := weak.Make(lp)
	_, was := declined.m[k]
	switch {
	case on && !was:
		if declined.m == nil {
			declined.m = make(map[weak.Pointer[loop.Loop]]struct{})
		}
		declined.m[k] = struct{}{}
		runtime.AddCleanup(lp, func(k weak.Pointer[loop.Loop]) {
			declined.mu.Lock()
			delete(declined.m, k)
			declined.mu.Unlock()
		}, k)
	case !on && was:
		delete(declined.m, k)
	}
}

// Declined reports whether lp's sockets are to be served by epoll
// (Decline). Any goroutine.
func Declined(lp *loop.Loop) bool {
	declined.mu.Lock()
	defer declined.mu.Unlock()
	_, ok := declined.m[weak.Make(lp)]
	return ok
}

// Of returns lp's ring, making it and attaching it to lp (as what lp
// waits in, and told when the executor closes) on first use; or nil and
// why lp has none: the kernel's refusal (asked once per loop), ErrSim,
// ErrOtherIO, or loop.ErrClosed once the executor has closed. Loop only.
func Of(lp *loop.Loop) (*Ring, error) {
	switch v := lp.Local(ringKey{}).(type) {
	case *Ring:
		return v, nil
	case refusal:
		return nil, v.err
	}
	if lp.Sim() != nil {
		return nil, ErrSim
	}
	if lp.HasIO() {
		return nil, ErrOtherIO
	}
	r, err := newLoopRing()
	if err != nil {
		lp.SetLocal(ringKey{}, refusal{err})
		return nil, err
	}
	r.lp = lp
	if !lp.Attach(loop.Attachment{Key: ringKey{}, Value: r, Watch: &r.watch, OnClose: (*ringWatch)(r), IO: r}) {
		r.shut(true)
		return nil, loop.ErrClosed
	}
	return r, nil
}

// Existing returns lp's ring if it has one already (another component
// made it), nil otherwise; it never makes one. Loop only.
func Existing(lp *loop.Loop) *Ring {
	r, _ := lp.Local(ringKey{}).(*Ring)
	return r
}

// Closing reports whether the ring has begun to close (its handlers have
// been told): nothing may be submitted to it but what ends work. Loop
// only.
func (r *Ring) Closing() bool { return r.closing }

// newLoopRing sets a ring up with its eventfd's poll armed.
func newLoopRing() (*Ring, error) {
	u, err := newRing(sqEntries)
	if err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		u.unmap()
		return nil, os.NewSyscallError("eventfd", err)
	}
	r := &Ring{ring: *u, efd: efd}
	r.one[0] = 1
	r.pollEfd()
	if err := r.enter(0, -1); err != nil {
		r.ring.unmap()
		unix.Close(efd)
		return nil, os.NewSyscallError("io_uring_enter", err)
	}
	return r, nil
}

// pollEfd arms the eventfd's multishot poll.
func (r *Ring) pollEfd() {
	e := r.next()
	e.Opcode = OpPollAdd
	e.Fd = int32(r.efd)
	e.Len = PollAddMulti
	e.OpFlags = unix.EPOLLIN
	e.UserData = efdData
}

// Register makes h a component of the ring and returns its tag. Loop
// only; it panics once every tag is given out.
func (r *Ring) Register(h Handler) Tag {
	if r.ntags+1 >= maxTags {
		panic("uring: Register: every tag is given out")
	}
	r.ntags++
	r.handlers[r.ntags] = h
	return Tag(r.ntags)
}

// Next returns a cleared submission entry for the caller to fill; it is
// handed to the kernel by the loop's next enter. When the queue is full
// what is queued is submitted first. Loop only; it panics once the ring
// has closed.
func (r *Ring) Next() *SQE {
	if r.closed {
		panic("uring: Next on a closed ring")
	}
	return r.next()
}

// Reserve makes room for n entries that the caller then fills one after
// the other, so that a linked chain is submitted whole. Loop only.
func (r *Ring) Reserve(n uint32) { r.reserve(n) }

// Submit hands what is queued to the kernel now. Loop only.
func (r *Ring) Submit() error { return r.enter(0, -1) }

// Unsubmitted reports whether an entry with user_data data is filled and
// not yet handed to the kernel. Loop only.
func (r *Ring) Unsubmitted(data uint64) bool {
	for k := r.sent; k != r.tail; k++ {
		if r.sqes[k&r.sqMask].UserData == data {
			return true
		}
	}
	return false
}

// Wait submits what is queued and waits for a completion for at most
// timeout (loop.IO).
func (r *Ring) Wait(timeout time.Duration) {
	if r.closed {
		return
	}
	r.wait(timeout)
}

// Dispatch hands each completion to its component (loop.IO).
func (r *Ring) Dispatch() {
	if r.closed {
		return
	}
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := r.cqes[head&r.cqMask]
		tag := c.UserData >> tagShift
		if tag == 0 {
			if c.UserData == efdData {
				unix.Read(r.efd, r.buf8[:])
				if c.Flags&CQEFMore == 0 && !r.closing {
					r.pollEfd()
				}
			}
			continue
		}
		// The handler may free what the completion names and queue more:
		// publish the head first, so that what it queues finds room.
		atomic.StoreUint32(r.cqHead, head+1)
		r.handlers[tag].Complete(c)
	}
	atomic.StoreUint32(r.cqHead, head)
}

// Wake makes the loop's wait return (loop.IO). Any goroutine.
func (r *Ring) Wake() {
	r.mu.Lock()
	if !r.closed {
		unix.Write(r.efd, r.one[:])
	}
	r.mu.Unlock()
}

// ringWatch is how the ring hears that its executor closes.
type ringWatch Ring

func (w *ringWatch) Interrupt(error) { (*Ring)(w).close() }

// pending reports whether a component has an operation in flight.
func (r *Ring) pending() bool {
	for _, h := range r.handlers[1 : r.ntags+1] {
		if h.Pending() {
			return true
		}
	}
	return false
}

// close ends the ring's work (doc.go): the components are told, what is
// queued is submitted, everything in flight is cancelled, and completions
// are handed on until none is in flight (at most two seconds); then the
// ring is closed.
func (r *Ring) close() {
	r.closing = true
	hs := r.handlers[1 : r.ntags+1]
	for _, h := range hs {
		h.Closing()
	}
	e := r.next()
	e.Opcode = OpAsyncCancel
	e.Fd = -1
	e.OpFlags = CancelAny | CancelAll
	e.UserData = ctlData
	r.enter(0, -1)
	for tries := 0; r.pending() && tries < 200; tries++ {
		r.enter(1, 10*time.Millisecond)
		r.Dispatch()
	}
	drained := !r.pending()
	for _, h := range hs {
		h.Closed(drained)
	}
	r.shut(drained)
}

// shut unmaps and closes the ring and its eventfd; the rings of provided
// buffers are unmapped only when nothing is in flight (drained).
func (r *Ring) shut(drained bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	if drained {
		for _, b := range r.bufs {
			b.unmap()
		}
	}
	r.ring.unmap()
	unix.Close(r.efd)
}
