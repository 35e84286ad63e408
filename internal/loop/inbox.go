package loop

// The inbox: work submitted by goroutines that do not hold the loop.
//
// The inbox is a blockList of items (blocks.go), guarded by Loop.mu.
// Submit pushes under mu; the loop takes the whole list between batches
// and consumes its blocks in place (taskQueue.in), clearing each slot as it
// goes, and gives the consumed blocks back at its next take. An inbox slice
// that doubled as it grew copied its whole backlog at every doubling; when
// the loop fell behind a busy submitter (whenever the scheduler leaves the
// two on one core for a while) that copying made Submit two to three times
// slower.

// inboxFreeBlocks is how many free blocks the inbox of a loop that has been
// idle for trimIdle keeps (8 KiB): enough for a steady trickle of
// submissions, little for an executor that sits idle.
const inboxFreeBlocks = 2

// inbox is the list of submitted items.
type inbox = blockList[item]

// unbounded lets recycle keep every block: during a burst the loop keeps
// what it consumed for the next one, and trims the free list once idle.
const unbounded = int(^uint(0) >> 1)
