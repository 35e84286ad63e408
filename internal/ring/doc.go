// Package ring is a growable FIFO ring buffer for single-owner queues: the
// executor's task queue, channel buffers and waiter queues, the merge's ready
// queue. A Ring is not safe for concurrent use; its owner (the loop)
// serialises it.
package ring
