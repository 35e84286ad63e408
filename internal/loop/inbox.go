package loop

// The inbox: work submitted by goroutines that do not hold the loop.
//
// Submitted items go into a list of fixed-size chunks. A burst thus costs
// one chunk per chunkItems items at most, and an item once queued is never
// copied again: an inbox slice that doubled as it grew copied its whole
// backlog at every doubling, and when the loop fell behind a busy
// submitter (which happens whenever the scheduler leaves the two on one
// core for a while) that copying made Submit two to three times slower.
//
// Invariants:
//   - head, tail, n, free and nfree are guarded by Loop.mu;
//   - head..tail holds the n submitted items in order; submitters write only
//     tail.items[tail.n], under mu, and add a chunk when tail is full;
//   - take moves the whole list to the loop at once; its chunks are then
//     loop-owned (taskQueue.in) until the loop has consumed them, clearing
//     each slot as it goes, and gives them back at its next take;
//   - a chunk on the free list is empty: n == 0, next unused, every slot
//     zero, so it keeps nothing alive.

// chunkItems is how many items one inbox chunk holds (4 KiB of items).
const chunkItems = 128

// maxFreeChunks is how many free chunks an idle loop keeps (trimCap items).
const maxFreeChunks = trimCap / chunkItems

// chunk is a fixed-size piece of the inbox.
type chunk struct {
	items [chunkItems]item
	n     int    // items written
	next  *chunk // the next chunk, in submission order
}

// inbox is the list of submitted items; see the invariants above.
type inbox struct {
	head, tail *chunk
	n          int    // items in head..tail
	free       *chunk // empty chunks for the next submissions
	nfree      int
}

// push appends it. Call with mu held.
func (in *inbox) push(it item) {
	t := in.tail
	if t == nil || t.n == chunkItems {
		t = in.newChunk()
	}
	t.items[t.n] = it
	t.n++
	in.n++
}

// newChunk appends an empty chunk, from the free list if it has one.
func (in *inbox) newChunk() *chunk {
	c := in.free
	if c != nil {
		in.free, c.next = c.next, nil
		in.nfree--
	} else {
		c = new(chunk)
	}
	if in.tail == nil {
		in.head = c
	} else {
		in.tail.next = c
	}
	in.tail = c
	return c
}

// take removes and returns every submitted item, as a list of chunks and
// its length. Call with mu held.
func (in *inbox) take() (head *chunk, n int) {
	head, n = in.head, in.n
	in.head, in.tail, in.n = nil, nil, 0
	return head, n
}

// recycle puts the consumed chunks of list back on the free list. Call with
// mu held.
func (in *inbox) recycle(list *chunk) {
	for list != nil {
		c := list
		list = c.next
		c.next = in.free
		in.free = c
		in.nfree++
	}
}

// trimFree lets the free list keep at most maxFreeChunks chunks. Call with
// mu held.
func (in *inbox) trimFree() {
	for in.nfree > maxFreeChunks {
		c := in.free
		in.free, c.next = c.next, nil
		in.nfree--
	}
}
