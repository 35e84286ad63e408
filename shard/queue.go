package shard

// The storage of a lane: one producer (the source shard's loop), one
// consumer (the destination shard's loop).
//
// The storage is ringQueue (ring.go), lock-free single-producer/
// single-consumer ring segments; a lane calls it directly, with no
// interface between them. A mutex-guarded slice swapped whole per batch
// was measured against it and lost where both sides run at once
// (docs/shards.md keeps the figures). The queue is unbounded (a burst
// never waits for room: a loop that waits must be woken, which costs more
// than the memory) and keeps these rules:
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
