// This file implements Slab, a chunked bump allocator.
//
// Invariants:
//   - cur is the current chunk (a zeroed []T of chunkSize() elements) and
//     cur[next:] its unused part; New hands out &cur[next] and advances next.
//   - Release gives back only the object New handed out last (the top of the
//     bump stack), as Boost.Cobalt's small-buffer allocator does for frees in
//     LIFO order: it zeroes it and moves next back, so that element is handed
//     out again. Any other Release is refused and changes nothing. An element
//     is therefore owned by exactly one holder at a time: the caller who got it
//     from New until it calls Release, or nobody.
//   - A Slab never writes to an element it has handed out and not taken back,
//     so a pointer from New that is never released is owned by its holder for
//     as long as it is reachable, exactly like new(T). The GC keeps a chunk's
//     whole backing array alive while any interior pointer into it is
//     reachable; that is what makes slab objects safe to give to users.
//   - The Slab references only its current chunk: a finished chunk lives
//     exactly as long as the objects in it (and no longer than the next New
//     once it is exhausted).
//   - Stats: Allocated counts New calls, Chunks counts chunks made, and
//     Chunks == ceil(Allocated / chunkSize()).
//
// A Slab is owned by one goroutine at a time (the event loop): it has no lock
// and must not be used concurrently or copied after first use.

package alloc

// DefaultSlabChunk is the chunk size, in objects, of the zero Slab.
const DefaultSlabChunk = 64

// Slab hands out zeroed objects of type T carved from chunks ([]T of
// ChunkSize() elements), so N objects cost ceil(N/ChunkSize()) allocations.
// Objects are never reused: a slab object may escape to users and live as
// long as they like.
//
// The price is memory: one reachable object keeps its whole chunk alive.
// Use a Slab for objects of similar lifetimes (see the package guide).
//
// The zero value is a ready Slab with chunks of DefaultSlabChunk objects.
// A Slab is not safe for concurrent use and must not be copied after first
// use (a copy would share the current chunk and hand its elements out twice;
// go vet reports copies).
type Slab[T any] struct {
	_     noCopy
	cur   []T // the current chunk
	next  int // cur[next:] is unused
	chunk int // chunk size set by NewSlab; 0 means DefaultSlabChunk
	stats SlabStats
}

// SlabStats counts a Slab's allocations. The fields are plain counters
// updated by the owning goroutine.
type SlabStats struct {
	Allocated uint64 // objects handed out by New
	Released  uint64 // objects taken back by Release
	Chunks    uint64 // chunks allocated
}

// NewSlab returns a Slab whose chunks hold chunk objects each. It panics if
// chunk < 1.
func NewSlab[T any](chunk int) *Slab[T] {
	if chunk < 1 {
		panic("alloc: NewSlab with chunk size " + itoa(chunk) + " < 1")
	}
	return &Slab[T]{chunk: chunk}
}

// ChunkSize returns the number of objects per chunk.
func (s *Slab[T]) ChunkSize() int {
	if s.chunk == 0 {
		return DefaultSlabChunk
	}
	return s.chunk
}

// Stats returns the slab's counters.
func (s *Slab[T]) Stats() SlabStats { return s.stats }

// New returns a pointer to a zero T that no other caller has received. It
// allocates a new chunk once every ChunkSize() calls and otherwise allocates
// nothing.
func (s *Slab[T]) New() *T {
	if s.next == len(s.cur) {
		s.refill()
	}
	p := &s.cur[s.next]
	s.next++
	s.stats.Allocated++
	return p
}

// Release gives p back if it is the object New handed out last and not yet
// released, so the next New reuses its space; it reports whether it did.
// Releasing in LIFO order (the last acquired first) therefore reuses memory,
// and any other order simply leaves the object to the garbage collector. The
// caller must not use p after a successful Release.
func (s *Slab[T]) Release(p *T) bool {
	if p == nil {
		panic("alloc: Release of nil")
	}
	if s.next == 0 || p != &s.cur[s.next-1] {
		return false
	}
	s.next--
	var zero T
	*p = zero
	s.stats.Released++
	return true
}

// refill starts a new chunk. It is kept out of New so New stays inlinable.
func (s *Slab[T]) refill() {
	s.cur = make([]T, s.ChunkSize())
	s.next = 0
	s.stats.Chunks++
}
