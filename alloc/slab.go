// This file implements Slab, a chunked bump allocator that never reuses memory.
//
// Invariants:
//   - cur is the unused tail of the current chunk (a fresh, zeroed []T of
//     chunkSize() elements); New hands out &cur[0] and advances cur, so each
//     element is handed out at most once and always zeroed.
//   - A Slab never takes objects back and never writes to an element after
//     handing it out, so a pointer from New is owned by its holder for as long
//     as it is reachable, exactly like new(T). The GC keeps a chunk's whole
//     backing array alive while any interior pointer into it is reachable;
//     that is what makes slab objects safe to give to users.
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
	cur   []T // unused tail of the current chunk
	chunk int // chunk size set by NewSlab; 0 means DefaultSlabChunk
	stats SlabStats
}

// SlabStats counts a Slab's allocations. The fields are plain counters
// updated by the owning goroutine.
type SlabStats struct {
	Allocated uint64 // objects handed out by New
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
	if len(s.cur) == 0 {
		s.refill()
	}
	p := &s.cur[0]
	s.cur = s.cur[1:]
	s.stats.Allocated++
	return p
}

// refill starts a new chunk. It is kept out of New so New stays inlinable.
func (s *Slab[T]) refill() {
	s.cur = make([]T, s.ChunkSize())
	s.stats.Chunks++
}
