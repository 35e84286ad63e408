// Package ring is a growable FIFO ring buffer for single-owner queues: the
// executor's task queue, channel buffers and waiter queues, the merge's ready
// queue.
//
// Invariants:
//   - len(buf) is zero or a power of two, so an index wraps with a mask;
//   - the n live elements sit at buf[(head+i)&mask] for i in [0, n);
//   - every other slot holds the zero value, so a popped element is not kept
//     alive by the buffer.
//
// A Ring is not safe for concurrent use; its owner (the loop) serialises it.
package ring

// Ring is a FIFO queue of T backed by a circular buffer that doubles when
// full. The zero value is an empty ring ready to use.
type Ring[T any] struct {
	buf  []T
	head int
	n    int
}

// Len returns the number of queued elements.
func (r *Ring[T]) Len() int { return r.n }

// Cap returns the number of elements the ring holds before it grows.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Push appends v at the back.
func (r *Ring[T]) Push(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// PushFront inserts v at the front, so it is popped next.
func (r *Ring[T]) PushFront(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.head = (r.head - 1) & (len(r.buf) - 1)
	r.buf[r.head] = v
	r.n++
}

// Pop removes and returns the front element; ok is false when empty.
func (r *Ring[T]) Pop() (v T, ok bool) {
	if r.n == 0 {
		return v, false
	}
	p := &r.buf[r.head]
	v = *p
	var zero T
	*p = zero
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return v, true
}

// Peek returns a pointer to the front element, or nil when empty. The pointer
// is valid until the next Push or Pop.
func (r *Ring[T]) Peek() *T {
	if r.n == 0 {
		return nil
	}
	return &r.buf[r.head]
}

// At returns a pointer to the i-th element from the front (0 <= i < Len).
func (r *Ring[T]) At(i int) *T {
	if i < 0 || i >= r.n {
		panic("ring: index out of range")
	}
	return &r.buf[(r.head+i)&(len(r.buf)-1)]
}

// RemoveAt removes the i-th element from the front, keeping the order of the
// rest. It costs O(min(i, Len-i)) moves.
func (r *Ring[T]) RemoveAt(i int) {
	if i < 0 || i >= r.n {
		panic("ring: index out of range")
	}
	mask := len(r.buf) - 1
	var zero T
	if i < r.n/2 {
		for j := i; j > 0; j-- {
			r.buf[(r.head+j)&mask] = r.buf[(r.head+j-1)&mask]
		}
		r.buf[r.head] = zero
		r.head = (r.head + 1) & mask
	} else {
		for j := i; j < r.n-1; j++ {
			r.buf[(r.head+j)&mask] = r.buf[(r.head+j+1)&mask]
		}
		r.buf[(r.head+r.n-1)&mask] = zero
	}
	r.n--
}

// Clear removes every element, keeping the buffer.
func (r *Ring[T]) Clear() {
	clear(r.buf)
	r.head, r.n = 0, 0
}

func (r *Ring[T]) grow() {
	size := 2 * len(r.buf)
	if size == 0 {
		size = 16
	}
	buf := make([]T, size)
	if r.n > 0 {
		k := copy(buf, r.buf[r.head:])
		copy(buf[k:], r.buf[:r.head])
	}
	r.buf, r.head = buf, 0
}
