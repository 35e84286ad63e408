package shard

// lockedQueue: a mutex-guarded slice swapped whole per batch.
//
// Invariants:
//   - the producer owns local (pushed, not yet published); the consumer
//     owns taken and pos (taken[pos:] is the batch being consumed, taken[:pos]
//     is cleared); shared (published, not yet taken) and spare (an empty
//     slice the consumer gave back) are guarded by mu;
//   - publish moves local into shared under mu: when shared is empty the two
//     slices are swapped (nothing is copied) and the producer takes spare
//     as its next local; otherwise local is appended to shared;
//   - pop takes all of shared under mu once taken is used up, and hands the
//     used-up slice back as spare. A slice longer than maxIdleBatch is not
//     kept, so a burst does not pin its peak memory;
//   - the three slices are distinct: a slice is owned by one of local,
//     shared, taken or spare at a time.

import "sync"

// maxIdleBatch is the capacity of an empty batch slice kept for reuse.
const maxIdleBatch = 1024

type lockedQueue struct {
	local []message
	_     [64]byte

	mu     sync.Mutex
	shared []message
	spare  []message
	_      [64]byte

	taken []message
	pos   int
}

func (q *lockedQueue) push(m message) bool {
	q.local = append(q.local, m)
	return len(q.local) >= batchSize
}

func (q *lockedQueue) publish() bool {
	if len(q.local) == 0 {
		return false
	}
	q.mu.Lock()
	if len(q.shared) == 0 {
		q.shared, q.local = q.local, q.spare
		q.spare = nil
	} else {
		q.shared = append(q.shared, q.local...)
		clear(q.local)
		q.local = q.local[:0]
	}
	q.mu.Unlock()
	return true
}

func (q *lockedQueue) pop() (message, bool) {
	if q.pos == len(q.taken) {
		used := q.taken[:0]
		if cap(used) > maxIdleBatch {
			used = nil
		}
		q.mu.Lock()
		q.taken, q.shared = q.shared, nil
		if q.spare == nil {
			q.spare = used
		}
		q.mu.Unlock()
		q.pos = 0
		if len(q.taken) == 0 {
			return nil, false
		}
	}
	m := q.taken[q.pos]
	q.taken[q.pos] = nil
	q.pos++
	return m, true
}

func (q *lockedQueue) ready() bool {
	if q.pos < len(q.taken) {
		return true
	}
	q.mu.Lock()
	n := len(q.shared)
	q.mu.Unlock()
	return n > 0
}

func (q *lockedQueue) sweep(fn func(message)) {
	for _, part := range [][]message{q.taken[q.pos:], q.shared, q.local} {
		for i, m := range part {
			part[i] = nil
			fn(m)
		}
	}
	q.taken, q.pos, q.shared, q.local = nil, 0, nil, nil
}
