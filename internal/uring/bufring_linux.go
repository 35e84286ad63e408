//go:build linux && !purego

package uring

// Rings of provided buffers (IORING_REGISTER_PBUF_RING): buffers the
// kernel picks from when an operation's bytes arrive, so an operation
// waiting for input holds no buffer.
//
// Invariants (loop-owned):
//   - bufs[bid] is buffer bid; a buffer is either provided (the kernel may
//     pick it: avail counts those) or taken by a completion (Took) and
//     then its taker's until it is given back (GiveBack);
//   - the ring grows on demand (Grow), up to its entries, and never
//     shrinks: buffers given to the kernel stay there;
//   - entry 0's bid and the tail share one word, stored at once, so the
//     kernel never sees a new tail with a stale entry.

import (
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

type bufEntry struct {
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

// BufRing is a ring of provided buffers of one group.
type BufRing struct {
	mem   []byte
	ents  []bufEntry
	word  *uint32 // entry 0's bid and the tail: stored at once
	tail  uint16
	bid0  uint16
	n     uint16 // entries (a power of two)
	min   int    // buffers made at the first Grow
	size  int    // bytes of each buffer
	bufs  [][]byte
	avail int
}

// NewBufRing registers a ring of up to entries (a power of two) buffers
// of size bytes as buffer group group; Grow makes them, min at first.
// Loop only.
func (r *Ring) NewBufRing(group uint16, entries, size, min int) (*BufRing, error) {
	n := entries * int(unsafe.Sizeof(bufEntry{}))
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), ringEntries: uint32(entries), bgid: group}
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), regPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
	if e != 0 {
		unix.Munmap(mem)
		return nil, os.NewSyscallError("io_uring_register", e)
	}
	b := &BufRing{mem: mem, n: uint16(entries), min: min, size: size}
	b.ents = unsafe.Slice((*bufEntry)(unsafe.Pointer(&mem[0])), entries)
	b.word = (*uint32)(unsafe.Pointer(&b.ents[0].bid))
	r.bufs = append(r.bufs, b)
	return b, nil
}

func (b *BufRing) unmap() { unix.Munmap(b.mem) }

// provide hands buffer bid (back) to the kernel.
func (b *BufRing) provide(bid uint16) {
	k := b.tail & (b.n - 1)
	e := &b.ents[k]
	e.addr = uint64(uintptr(unsafe.Pointer(&b.bufs[bid][0])))
	e.len = uint32(b.size)
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

// Len returns how many buffers the ring has made.
func (b *BufRing) Len() int { return len(b.bufs) }

// Bufs returns the buffers, by id.
func (b *BufRing) Bufs() [][]byte { return b.bufs }

// Grow makes more buffers (min at first, then as many again) and provides
// them; it reports false when the ring is full.
func (b *BufRing) Grow() bool {
	n := len(b.bufs)
	add := min(max(b.min, n), int(b.n)-n)
	for i := 0; i < add; i++ {
		b.bufs = append(b.bufs, make([]byte, b.size))
		b.provide(uint16(n + i))
	}
	return add > 0
}

// GiveBack hands buffer bid back to the kernel; fresh says its memory may
// still be read by whoever took it, so the ring gets new memory for it.
func (b *BufRing) GiveBack(bid uint16, fresh bool) {
	if fresh {
		b.bufs[bid] = make([]byte, b.size)
	}
	b.provide(bid)
}

// Took records that a completion took buffer bid and returns it.
func (b *BufRing) Took(bid uint16) []byte {
	b.avail--
	return b.bufs[bid]
}
