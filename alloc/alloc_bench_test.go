package alloc

import (
	"sync"
	"testing"
)

// obj256 is a 256-byte object with a pointer, like operation state.
type obj256 struct {
	next *obj256
	data [31]uint64
}

// use writes both fields, as code that fills operation state does.
func (p *obj256) use(next *obj256) {
	p.next = next
	p.data[0] = 1
}

var sink256 *obj256

// BenchmarkNew is the baseline: one heap allocation per object.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		p := new(obj256)
		p.use(nil)
		sink256 = p
	}
}

// BenchmarkFreeListGetPut is the steady state of a runtime-owned object:
// Get, use, Put.
func BenchmarkFreeListGetPut(b *testing.B) {
	b.ReportAllocs()
	var l FreeList[obj256]
	l.Put(l.Get())
	for b.Loop() {
		p := l.Get()
		p.use(p)
		l.Put(p)
	}
}

// BenchmarkSlabNew hands out objects that are then dropped, as escaping
// objects are; the amortized cost includes one chunk allocation per 64.
func BenchmarkSlabNew(b *testing.B) {
	b.ReportAllocs()
	var s Slab[obj256]
	for b.Loop() {
		p := s.New()
		p.use(nil)
		sink256 = p
	}
}

// BenchmarkSyncPoolGetPut is the concurrent-safe alternative, for reference
// (the allocators do not use sync.Pool).
func BenchmarkSyncPoolGetPut(b *testing.B) {
	b.ReportAllocs()
	pool := sync.Pool{New: func() any { return new(obj256) }}
	for b.Loop() {
		p := pool.Get().(*obj256)
		p.use(p)
		*p = obj256{}
		pool.Put(p)
	}
}
