package future

import (
	"unsafe"

	"github.com/spindle-rt/spindle/alloc"
	"github.com/spindle-rt/spindle/internal/loop"
)

// slabBytes is about how large one slab chunk is: as many objects as fit
// in 8 KiB (at least 16), so that a chunk fills the runtime's size class
// instead of wasting the gap above it.
const slabBytes = 8192

// newObj allocates an object that carries a future, following the
// executor's allocation strategy (executor.WithAllocation): from a loop-owned
// slab when the caller holds the loop and the executor asks for slabs, from
// the heap otherwise. While a Destroy hook is registered objects come from
// the heap, so that each is collected, and reported, on its own.
func newObj[N any](ex *loop.Loop, onLoop bool) *N {
	if onLoop && ex.Allocation() == loop.AllocSlab && !ex.DestroyHooked() {
		return slabOf[N](ex).New()
	}
	return new(N)
}

// newObjHere is newObj for callers that have not asked ex.Current yet: it
// asks only when the executor allocates from slabs.
func newObjHere[N any](ex *loop.Loop) *N {
	if ex.Allocation() != loop.AllocSlab {
		return new(N)
	}
	_, onLoop := ex.Current()
	return newObj[N](ex, onLoop)
}

// slabOf returns ex's slab of N, made on first use. Loop only.
func slabOf[N any](ex *loop.Loop) *alloc.Slab[N] {
	key := any((*N)(nil))
	if s, ok := ex.Local(key).(*alloc.Slab[N]); ok {
		return s
	}
	s := alloc.NewSlab[N](max(16, slabBytes/int(unsafe.Sizeof(*new(N)))))
	ex.SetLocal(key, s)
	return s
}
