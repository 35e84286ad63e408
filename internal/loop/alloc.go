package loop

// Allocation says how packages built on the executor allocate the objects
// behind futures (promises, Then and Transform links, Call results).
type Allocation uint8

// The allocation strategies; executor.Allocation documents them.
const (
	// AllocHeap allocates each object on its own: memory goes back to the
	// garbage collector as soon as the object is unreachable.
	AllocHeap Allocation = iota
	// AllocSlab carves objects created on the loop out of chunks of about
	// 13 KiB (at least 16 objects), so a chunk's objects cost one allocation;
	// a chunk stays alive while any object in it is reachable. Objects created off the loop, and all objects while a
	// Destroy hook is registered (so that Destroy stays prompt), still come
	// from the heap.
	AllocSlab
)

// String names the strategy.
func (a Allocation) String() string {
	switch a {
	case AllocHeap:
		return "heap"
	case AllocSlab:
		return "slab"
	}
	return "unknown"
}

// Allocation returns the executor's allocation strategy.
func (e *Loop) Allocation() Allocation { return e.alloc }
