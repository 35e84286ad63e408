package future

import (
	"unsafe"

	"github.com/spindle-rt/spindle/alloc"
	"github.com/spindle-rt/spindle/internal/loop"
)

// slabBytes is about how large one slab chunk is: as many objects as fit
// in it (at least 16). 13,568 bytes is one of the runtime's size classes,
// whose spans hold three chunks, so a chunk wastes no gap above it and most
// chunk allocations are served from a span already at hand. (Chunks of
// 8 KiB, a class of one object per span, took a span from the heap each
// time and made Chain/then_value_slab about 15% slower; chunks of 64
// objects left a gap and cost 6% more memory per pending Then link.)
const slabBytes = 13568

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
// asks only when the executor allocates from slabs, and says what it
// learnt (w), so that the object's hook id need not ask again (newID).
func newObjHere[N any](ex *loop.Loop) (n *N, w where) {
	if ex.Allocation() != loop.AllocSlab {
		return new(N), where{}
	}
	_, onLoop := ex.Current()
	return newObj[N](ex, onLoop), where{known: true, onLoop: onLoop}
}

// where says whether the caller holds the loop (onLoop), if it has asked
// (known).
type where struct{ known, onLoop bool }

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
