// This file implements FreeList, a bounded LIFO stack of recycled objects.
//
// Invariants:
//   - Ownership is exclusive: every object that has passed through a FreeList
//     is either owned by exactly one caller (returned by Get and not yet given
//     back to Put) or sits in free, never both. Put transfers ownership to the
//     list; a caller must not touch *p after Put(p).
//   - Every object in free is the zero value of T: Put zeroes before it
//     pushes, so Get hands out zeroed memory without zeroing again.
//   - free holds no nil (Put(nil) panics) and, given the ownership rule, no
//     duplicates (-tags allocdebug checks the rule); len(free) never exceeds
//     Max(), and a Put on a full list drops the object for the GC.
//   - The slots of free's backing array past len(free) are nil, so a popped
//     object is not kept alive by the list after its owner drops it.
//   - Stats: Gets == Reused + Allocated, Puts == Len() + Reused + Dropped
//     (when counting from an empty list).
//
// A FreeList is owned by one goroutine at a time (the event loop): it has no
// lock and must not be used concurrently or copied after first use.

package alloc

// DefaultFreeListMax is the number of objects the zero FreeList keeps.
const DefaultFreeListMax = 1024

// FreeList recycles objects of type T whose lifetime the runtime owns: Get
// takes one (reused when available, else new(T)), Put gives it back zeroed.
// It keeps at most Max() objects; Puts beyond that are dropped for the GC.
//
// The zero value is an empty list that keeps up to DefaultFreeListMax objects.
// A FreeList is not safe for concurrent use and must not be copied after
// first use (a copy would share the stack and could hand an object out twice;
// go vet reports copies).
//
// Only recycle objects whose every reference the runtime controls: once Put
// returns, the next Get may hand the same memory to someone else, so any
// reference kept past Put aliases an unrelated object. Objects that escape to
// users belong in a Slab (or on the heap), not in a FreeList.
type FreeList[T any] struct {
	_      noCopy
	free   []*T // LIFO stack of zeroed objects, len <= Max()
	max    int  // bound set by NewFreeList; meaningful only when hasMax
	hasMax bool // false for the zero value: bound is DefaultFreeListMax
	stats  FreeListStats
}

// FreeListStats counts a FreeList's traffic. The fields are plain counters
// updated by the owning goroutine.
type FreeListStats struct {
	Gets      uint64 // calls to Get
	Puts      uint64 // calls to Put
	Reused    uint64 // Gets served from the list
	Allocated uint64 // Gets served by new(T)
	Dropped   uint64 // Puts discarded because the list was full
}

// NewFreeList returns an empty FreeList that keeps at most max objects.
// max == 0 gives a list that keeps nothing (every Get allocates), which is
// the plain-heap strategy behind the same interface. NewFreeList panics if
// max is negative.
func NewFreeList[T any](max int) *FreeList[T] {
	if max < 0 {
		panic("alloc: NewFreeList with negative max " + itoa(max))
	}
	return &FreeList[T]{max: max, hasMax: true}
}

// Max returns the most objects the list keeps.
func (l *FreeList[T]) Max() int {
	if !l.hasMax {
		return DefaultFreeListMax
	}
	return l.max
}

// Len returns the number of objects currently kept for reuse.
func (l *FreeList[T]) Len() int { return len(l.free) }

// Stats returns the list's counters.
func (l *FreeList[T]) Stats() FreeListStats { return l.stats }

// Get returns a pointer to a zero T owned by the caller: the most recently
// Put object when the list is not empty, else new(T). It allocates only when
// the list is empty.
func (l *FreeList[T]) Get() *T {
	l.stats.Gets++
	n := len(l.free) - 1
	if n < 0 {
		l.stats.Allocated++
		return new(T)
	}
	p := l.free[n]
	l.free[n] = nil
	l.free = l.free[:n]
	l.stats.Reused++
	if debug {
		checkZero(p)
	}
	return p
}

// Put zeroes *p and keeps p for a later Get, or drops it if the list already
// holds Max() objects. p must have come from Get (or new(T)) and be owned by
// the caller, who must not use it, nor any pointer into it, after Put: the
// list may hand it to another caller at once. Put(nil) panics.
//
// Built with -tags allocdebug, Put also panics when p is already in the list
// (a double Put) and Get panics when an object was written after its Put.
func (l *FreeList[T]) Put(p *T) {
	if p == nil {
		panic("alloc: Put of nil")
	}
	l.stats.Puts++
	var zero T
	*p = zero
	if debug {
		checkNotIn(l.free, p)
	}
	if len(l.free) >= l.Max() {
		l.stats.Dropped++
		return
	}
	l.free = append(l.free, p)
}
