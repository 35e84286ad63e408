// Package alloc provides single-threaded allocators for operation state:
// [FreeList], which recycles objects whose lifetime the runtime owns, and [Slab],
// which carves objects from chunks so that N objects cost one allocation.
//
// Both are owned by one event loop. They have no locks, use no unsafe code
// and no sync.Pool, and must not be shared between goroutines that run at the
// same time or copied after first use. alloc is a leaf package: it imports
// nothing from the rest of spindle.
//
// # Which one to use
//
// Use a FreeList when the runtime alone decides when an object dies: task
// nodes, waiter nodes, timer entries, queue cells. The runtime Gets a node,
// links it into its own structures, and Puts it back when it unlinks it; no
// reference leaves the runtime, so nobody can observe the reuse. In steady
// state Get and Put are a slice push and pop that allocate nothing and create
// no GC work. The list is bounded ([DefaultFreeListMax] by default), so a burst
// does not pin its peak memory forever.
//
// The rule a FreeList depends on: an object is either owned by one caller or
// in the list, never both. After Put(p) the caller must drop p and every
// pointer into *p, because the next Get may hand the same memory to someone
// else. Breaking the rule is a use-after-free in Go clothing: no crash, but
// two owners silently sharing one object. Build with -tags allocdebug to make
// FreeList panic on a double Put and on a write to an object after its Put.
//
// Use a Slab when the object escapes to code the runtime does not control,
// such as a future or promise handed to a user, who may keep it for any
// time. A Slab never reuses an object: it bumps through a chunk ([]T) and
// starts a new chunk when the current one is used up, so N objects cost
// ceil(N/ChunkSize()) allocations instead of N. Safety comes from Go's
// garbage collector: a pointer into a chunk keeps the whole chunk alive, so a
// slab object can never be freed or handed out again while it is reachable.
//
// The Slab's trade-off is memory: one live object pins its whole chunk. If
// one future in a chunk of 64 is kept for an hour while the other 63 die at
// once, the memory of all 64 stays allocated for that hour. Slabs suit
// objects that are made together and die together (the links of a chain, the
// futures of a request); keep ChunkSize small ([NewSlab]) for objects whose
// lifetimes spread widely, and use plain new(T) for the rare long-lived one.
//
// In short:
//
//	runtime-owned lifetime, reused at a high rate    FreeList
//	escapes to users, made in batches or at a rate   Slab
//	escapes to users, rare or very long-lived        new(T)
//
// Neither allocator is a general replacement for the Go heap: measure. The
// package benchmarks compare both with new(T) for a 256-byte object.
package alloc
