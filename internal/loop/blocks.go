package loop

// Block lists: FIFOs of fixed-size blocks, for the two queues that other
// goroutines fill under a lock and the loop takes whole: the inbox of
// submitted work (inbox.go) and the mailbox of hook events raised off the
// loop (hooks.go).
//
// A burst costs one block per blockSize elements at most, and an element
// once queued is never copied again: a slice that doubled as it grew copied
// its whole backlog at every doubling.
//
// Invariants (the user of a list guards all of it with one lock):
//   - head..tail holds the n queued elements in order; push writes only
//     tail.items[tail.n] and adds a block when tail is full;
//   - take hands the whole list over at once; the taker owns its blocks
//     until it gives them back with recycle;
//   - a block on the free list is empty: n == 0 and every slot zero, so it
//     keeps nothing alive.

// blockSize is how many elements one block holds.
const blockSize = 128

// block is a fixed-size piece of a blockList.
type block[T any] struct {
	items [blockSize]T
	n     int       // elements written
	next  *block[T] // the next block, in queue order
}

// blockList is a FIFO of elements stored in blocks; see the invariants
// above. The zero value is an empty list.
type blockList[T any] struct {
	head, tail *block[T]
	n          int       // elements in head..tail
	free       *block[T] // empty blocks for the next pushes
	nfree      int
}

// push appends v.
func (l *blockList[T]) push(v T) {
	t := l.tail
	if t == nil || t.n == blockSize {
		t = l.grow()
	}
	t.items[t.n] = v
	t.n++
	l.n++
}

// grow appends an empty block, from the free list if it has one.
func (l *blockList[T]) grow() *block[T] {
	b := l.free
	if b != nil {
		l.free, b.next = b.next, nil
		l.nfree--
	} else {
		b = new(block[T])
	}
	if l.tail == nil {
		l.head = b
	} else {
		l.tail.next = b
	}
	l.tail = b
	return b
}

// take removes every element and returns them as a list of blocks, with
// their number.
func (l *blockList[T]) take() (head *block[T], n int) {
	head, n = l.head, l.n
	l.head, l.tail, l.n = nil, nil, 0
	return head, n
}

// recycle clears the blocks of list, a list that take returned, and puts up
// to max of them on the free list (list may be nil).
func (l *blockList[T]) recycle(list *block[T], max int) {
	for list != nil && l.nfree < max {
		b := list
		list = b.next
		clear(b.items[:b.n])
		b.n, b.next = 0, l.free
		l.free = b
		l.nfree++
	}
}

// trimFree keeps at most max blocks on the free list.
func (l *blockList[T]) trimFree(max int) {
	for l.nfree > max {
		b := l.free
		l.free, b.next = b.next, nil
		l.nfree--
	}
}
