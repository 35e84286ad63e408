package ring

// Invariants:
//   - len(buf) is zero or a power of two, so an index wraps with a mask;
//   - head and tail count pushes and pops for ever (they wrap as unsigned
//     integers); the tail-head live elements sit at buf[(head+i)&mask];
//   - every other slot holds the zero value, so a popped element is not kept
//     alive by the buffer.

// Ring is a FIFO queue of T backed by a circular buffer that doubles when
// full. The zero value is an empty ring ready to use.
type Ring[T any] struct {
	buf  []T
	head uint
	tail uint
}

// Len returns the number of queued elements.
func (r *Ring[T]) Len() int { return int(r.tail - r.head) }

// Cap returns the number of elements the ring holds before it grows.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Push appends v at the back.
func (r *Ring[T]) Push(v T) {
	if int(r.tail-r.head) == len(r.buf) {
		r.grow()
	}
	r.buf[r.tail&uint(len(r.buf)-1)] = v
	r.tail++
}

// TryPush appends v at the back if the buffer has room, and reports whether
// it did: the fast path of Push, small enough to inline where a queue is hot.
func (r *Ring[T]) TryPush(v T) bool {
	if r.tail-r.head == uint(len(r.buf)) {
		return false
	}
	r.buf[r.tail&uint(len(r.buf)-1)] = v
	r.tail++
	return true
}

// PushFront inserts v at the front, so it is popped next.
func (r *Ring[T]) PushFront(v T) {
	if int(r.tail-r.head) == len(r.buf) {
		r.grow()
	}
	r.head--
	r.buf[r.head&uint(len(r.buf)-1)] = v
}

// Pop removes and returns the front element; ok is false when empty.
func (r *Ring[T]) Pop() (v T, ok bool) {
	if r.head == r.tail {
		return v, false
	}
	p := &r.buf[r.head&uint(len(r.buf)-1)]
	v = *p
	*p = *new(T)
	r.head++
	return v, true
}

// Peek returns a pointer to the front element, or nil when empty. The pointer
// is valid until the next Push or Pop.
func (r *Ring[T]) Peek() *T {
	if r.head == r.tail {
		return nil
	}
	return &r.buf[r.head&uint(len(r.buf)-1)]
}

// At returns a pointer to the i-th element from the front (0 <= i < Len).
func (r *Ring[T]) At(i int) *T {
	if i < 0 || i >= r.Len() {
		panic("ring: index out of range")
	}
	return &r.buf[(r.head+uint(i))&uint(len(r.buf)-1)]
}

// RemoveAt removes the i-th element from the front, keeping the order of the
// rest. It costs O(min(i, Len-i)) moves.
func (r *Ring[T]) RemoveAt(i int) {
	n := r.Len()
	if i < 0 || i >= n {
		panic("ring: index out of range")
	}
	mask := uint(len(r.buf) - 1)
	var zero T
	if i < n/2 {
		for j := uint(i); j > 0; j-- {
			r.buf[(r.head+j)&mask] = r.buf[(r.head+j-1)&mask]
		}
		r.buf[r.head&mask] = zero
		r.head++
	} else {
		for j := uint(i); j < uint(n-1); j++ {
			r.buf[(r.head+j)&mask] = r.buf[(r.head+j+1)&mask]
		}
		r.tail--
		r.buf[r.tail&mask] = zero
	}
}

// Clear removes every element, keeping the buffer.
func (r *Ring[T]) Clear() {
	clear(r.buf)
	r.head, r.tail = 0, 0
}

// Trim releases the buffer of an empty ring whose capacity exceeds max, so
// that a ring that grew for a burst gives the memory back; the next Push
// starts small again.
func (r *Ring[T]) Trim(max int) {
	if r.head == r.tail && len(r.buf) > max {
		r.buf, r.head, r.tail = nil, 0, 0
	}
}

func (r *Ring[T]) grow() {
	n := r.Len()
	size := 2 * len(r.buf)
	if size == 0 {
		size = 16
	}
	buf := make([]T, size)
	if n > 0 {
		h := int(r.head & uint(len(r.buf)-1))
		k := copy(buf, r.buf[h:])
		if k < n {
			copy(buf[k:], r.buf[:n-k])
		}
	}
	r.buf, r.head, r.tail = buf, 0, uint(n)
}
