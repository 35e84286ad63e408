//go:build linux && !purego

package netio

// The io_uring backend: netio's sockets on the loop's io_uring
// (internal/uring), which both moves the bytes and is what the loop waits
// in. A receive is an IORING_OP_RECV into a buffer the kernel picks from
// a ring of provided buffers when the bytes arrive (so a connection
// waiting for input holds no buffer), submitted only while a receive is
// pending; a flush is an IORING_OP_SEND of the connection's output buffer,
// which stays the connection's (and is not moved or pooled) until its
// completion; an accept is an IORING_OP_ACCEPT, submitted only while an
// Accept is pending. Everything queued in a batch is handed to the kernel
// by the loop's next io_uring_enter, the one that also waits, so a
// request served costs no system call of its own. Each connection also has
// a multishot IORING_OP_POLL_ADD for the peer's end (EPOLLRDHUP, and the
// errors and hang-ups every poll reports), which tells a connection
// nobody receives from that its peer has gone. The connection and
// listener side is in uring_conn.go. Where the kernel refuses io_uring,
// init fails with errRefused and epoll serves the loop (backend.go).
//
// Invariants (all loop-owned):
//   - a completion names its socket as an epoll event does, slot index
//     and generation: the slot in the low 28 bits of user_data, the kind
//     of operation in the next 4, the generation's low 28 bits above (the
//     ring's tag in the top 4), so a completion for a slot freed since is
//     dropped;
//   - a connection's or listener's slot is freed only once every
//     operation it had in flight has completed (ringSlot.ops), so a
//     completion always finds its slot, and the memory a completion names
//     (the output a send reads, a buffer a receive writes) is held by the
//     slot until then;
//   - gone is set once the ring has closed: nothing is submitted after.

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/uring"
)

// uringBackend serves a loop's sockets through its io_uring.
type uringBackend struct {
	kernel
	r    *reactor
	ring *uring.Ring
	tag  uring.Tag
	br   *uring.BufRing // the receive buffers the kernel picks from
	rs   []ringSlot     // what each slot has in flight (uring_conn.go)
	gone bool
}

var (
	_ kernBackend   = (*uringBackend)(nil)
	_ uring.Handler = (*uringBackend)(nil)
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
	genMask  = 1<<28 - 1 // the generation bits user_data carries
)

func (b *uringBackend) name() Backend { return BackendURing }

// init takes the loop's ring (attached as the loop's IO by internal/uring,
// so it returns no IO of its own) and its receive buffers.
func (b *uringBackend) init(r *reactor) (loop.IO, error) {
	ring, err := uring.Of(r.lp)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRefused, err)
	}
	br, err := ring.NewBufRing(bufGroup, ringBufs, readBufSize, ringBufsMin)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRefused, err)
	}
	b.r, b.ring, b.br = r, ring, br
	b.tag = ring.Register(b)
	return nil, nil
}

// shut has nothing to close: the ring closes itself with the executor,
// after it has told the backend (Closing) and cancelled what is in flight.
func (b *uringBackend) shut(*reactor) {}

// data is the user_data of an operation of kind for slot i at gen.
func (b *uringBackend) data(i int32, gen, kind uint32) uint64 {
	return uring.UserData(b.tag, uint64(uint32(i)|kind<<slotBits)|uint64(gen&genMask)<<32)
}

// ctl is the user_data of a cancel or a close.
func (b *uringBackend) ctl() uint64 { return uring.UserData(b.tag, kindCtl<<slotBits) }

// Complete handles one completion (uring.Handler).
func (b *uringBackend) Complete(c uring.CQE) {
	bits := c.Bits()
	lo := uint32(bits)
	kind := lo >> slotBits
	if kind == kindCtl {
		return
	}
	i, gen := int32(lo&slotMask), uint32(bits>>32)
	if int(i) >= len(b.slots) || b.slots[i].gen&genMask != gen {
		return // stale: the socket closed since
	}
	b.complete(i, kind, c)
}

// complete hands a completion to slot i's socket.
func (b *uringBackend) complete(i int32, kind uint32, c uring.CQE) {
	s := &b.slots[i]
	last := kind != kindPoll || c.Flags&uring.CQEFMore == 0
	switch h := s.h.(type) {
	case nil:
		b.drop(i, kind, c)
		if last {
			b.rs[i].ops--
		}
		if b.rs[i].ops == 0 {
			b.freeSlot(i)
		}
	case *Conn:
		if last {
			b.rs[i].ops--
		}
		b.done(h, kind, c)
	case *Listener:
		if last {
			b.rs[i].ops--
		}
		b.accepted(h, c.Res)
	}
}

// drop lets go what a completed operation of a closed socket held.
func (b *uringBackend) drop(i int32, kind uint32, c uring.CQE) {
	switch kind {
	case kindSend:
		b.rs[i].sbuf = nil
	case kindRecv:
		b.rs[i].rown = nil
		if c.Flags&uring.CQEFBuffer != 0 {
			bid := uint16(c.Flags >> 16)
			b.br.Took(bid)
			b.br.GiveBack(bid, false) // never seen by anyone
		}
	case kindAccept:
		if c.Res >= 0 {
			unix.Close(int(c.Res))
		}
	}
}

// Closing is told by the ring that it closes: the executor closes, so the
// reactor closes every connection (their closes queued on the ring) and
// every listener accepting on the loop, where their own close watches have
// not yet: nothing may submit again once the ring cancels what is in
// flight (an accept cancelled must not be asked for again).
func (b *uringBackend) Closing() {
	b.r.closeNow()
}

// Pending reports whether a socket has an operation in flight.
func (b *uringBackend) Pending() bool {
	for i := range b.rs {
		if b.rs[i].ops > 0 {
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

// Closed is told by the ring that it has closed.
func (b *uringBackend) Closed(drained bool) {
	b.gone = true
	if !drained {
		ringOrphans.mu.Lock()
		ringOrphans.slots = append(ringOrphans.slots, b.rs)
		ringOrphans.bufs = append(ringOrphans.bufs, b.br.Bufs())
		ringOrphans.mu.Unlock()
	}
}
