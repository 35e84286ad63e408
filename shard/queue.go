package shard

// The storage of a lane: one producer (the source shard's loop), one
// consumer (the destination shard's loop).
//
// Two implementations were measured against each other (docs/shards.md):
// ringQueue, lock-free single-producer/single-consumer ring segments, and
// lockedQueue, a mutex-guarded slice swapped whole per batch. Both are
// unbounded (a burst never waits for room: a loop that waits must be woken,
// which costs more than the memory) and keep these rules:
//   - push, publish: producer only. Pushed messages are invisible to the
//     consumer until publish, which makes every message pushed so far
//     visible;
//   - pop, ready: consumer only. pop returns published messages in the
//     order they were pushed, each once, and clears its slot so the queue
//     keeps no delivered message alive;
//   - sweep: only once neither loop runs any more (the group's sweep after
//     every shard has closed): it hands over every message still in the
//     queue, published or not, in order.

// batchSize is how many messages a lane gathers before it publishes them
// without waiting for the batch boundary of its source loop (Seastar's
// batch of 16).
const batchSize = 16

// queue is a lane's storage; the rules above apply.
type queue interface {
	// push appends m and reports whether a full batch now waits to be
	// published.
	push(m message) (full bool)
	// publish makes the pushed messages visible and reports whether there
	// were any.
	publish() (moved bool)
	// pop takes the next published message.
	pop() (message, bool)
	// ready reports whether a published message waits for pop.
	ready() bool
	// sweep calls fn for every message left, in order.
	sweep(fn func(message))
}

// transport chooses the storage of a group's lanes. The group uses
// ringTransport; lockedTransport stays to be measured against it (the
// package's BenchmarkTransport).
type transport uint8

const (
	// ringTransport: lock-free single-producer/single-consumer ring
	// segments of 128 messages per pair of shards, published in batches of
	// 16 with one atomic store.
	ringTransport transport = iota
	// lockedTransport: a mutex-guarded slice per pair of shards, swapped
	// whole per batch: one lock by the producer per batch published and one
	// by the consumer per batch taken.
	lockedTransport
)

// String names the transport.
func (t transport) String() string {
	if t == lockedTransport {
		return "locked"
	}
	return "ring"
}

func (t transport) newQueue() queue {
	if t == lockedTransport {
		return new(lockedQueue)
	}
	return newRingQueue()
}
