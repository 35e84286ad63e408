package alloc

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"weak"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// node is a typical runtime-owned object: a pointer, a scalar and a payload.
type node struct {
	next *node
	id   int
	buf  [4]uint64
}

// mark writes an identity into n; owned reports whether n still carries it.
// A live object whose mark changed was handed to (and written by) someone else.
func (n *node) mark(id int) {
	n.id = id
	for i := range n.buf {
		n.buf[i] = uint64(id)*31 + uint64(i)
	}
}

func (n *node) owned(id int) bool {
	if n.id != id || n.next != nil {
		return false
	}
	for i, v := range n.buf {
		if v != uint64(id)*31+uint64(i) {
			return false
		}
	}
	return true
}

func isZero(n *node) bool { return *n == node{} }

func TestFreeListReuse(t *testing.T) {
	var l FreeList[node]
	p := l.Get()
	if !isZero(p) {
		t.Fatalf("new object not zero: %+v", *p)
	}
	p.mark(7)
	p.next = p
	l.Put(p)
	if !isZero(p) {
		t.Fatalf("Put did not zero the object: %+v", *p)
	}
	if l.Len() != 1 {
		t.Fatalf("Len = %d after one Put, want 1", l.Len())
	}
	q := l.Get()
	if q != p {
		t.Fatalf("Get after Put returned %p, want the recycled %p", q, p)
	}
	if !isZero(q) {
		t.Fatalf("recycled object not zero: %+v", *q)
	}
	if l.Len() != 0 {
		t.Fatalf("Len = %d after Get, want 0", l.Len())
	}
	want := FreeListStats{Gets: 2, Puts: 1, Reused: 1, Allocated: 1}
	if got := l.Stats(); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

func TestFreeListLIFO(t *testing.T) {
	l := NewFreeList[node](8)
	a, b, c := l.Get(), l.Get(), l.Get()
	l.Put(a)
	l.Put(b)
	l.Put(c)
	for i, want := range []*node{c, b, a} {
		if got := l.Get(); got != want {
			t.Fatalf("Get #%d = %p, want %p (most recently Put first)", i, got, want)
		}
	}
}

func TestFreeListBound(t *testing.T) {
	tests := []struct {
		name string
		l    *FreeList[node]
		max  int
	}{
		{"zero value", new(FreeList[node]), DefaultFreeListMax},
		{"max=0", NewFreeList[node](0), 0},
		{"max=1", NewFreeList[node](1), 1},
		{"max=16", NewFreeList[node](16), 16},
		{"max=5000", NewFreeList[node](5000), 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.l
			if l.Max() != tt.max {
				t.Fatalf("Max = %d, want %d", l.Max(), tt.max)
			}
			const extra = 10
			n := tt.max + extra
			held := make([]*node, n)
			for i := range held {
				held[i] = new(node)
				held[i].mark(i)
			}
			for _, p := range held {
				l.Put(p)
			}
			if l.Len() != tt.max {
				t.Fatalf("Len = %d after %d Puts, want the bound %d", l.Len(), n, tt.max)
			}
			st := l.Stats()
			if st.Puts != uint64(n) || st.Dropped != extra {
				t.Fatalf("Stats = %+v, want Puts=%d Dropped=%d", st, n, extra)
			}
			// The kept objects are the first max Put, returned LIFO; then
			// Get allocates.
			for i := tt.max - 1; i >= 0; i-- {
				if p := l.Get(); p != held[i] || !isZero(p) {
					t.Fatalf("Get = %p (zero %v), want kept object %d %p", p, isZero(p), i, held[i])
				}
			}
			p := l.Get()
			for _, h := range held {
				if p == h {
					t.Fatalf("Get on an empty list returned a dropped or handed-out object")
				}
			}
			st = l.Stats()
			if st.Reused != uint64(tt.max) || st.Allocated != 1 || l.Len() != 0 {
				t.Fatalf("Stats = %+v Len=%d, want Reused=%d Allocated=1 Len=0", st, l.Len(), tt.max)
			}
		})
	}
}

// checkDistinct fails if two live objects share a pointer or if any live
// object lost its mark (someone else wrote to it).
func checkDistinct(t *testing.T, live map[int]*node) {
	t.Helper()
	seen := make(map[*node]int, len(live))
	for id, p := range live {
		if other, dup := seen[p]; dup {
			t.Fatalf("objects %d and %d share pointer %p", other, id, p)
		}
		seen[p] = id
		if !p.owned(id) {
			t.Fatalf("object %d at %p was modified by another owner: %+v", id, p, *p)
		}
	}
}

func TestFreeListNoDoubleHandOut(t *testing.T) {
	var l FreeList[node]
	live := make(map[int]*node)
	id := 0
	get := func(n int) {
		for range n {
			p := l.Get()
			if !isZero(p) {
				t.Fatalf("Get returned a non-zero object: %+v", *p)
			}
			p.mark(id)
			live[id] = p
			id++
		}
	}
	get(1000)
	checkDistinct(t, live)
	for i := 0; i < 1000; i += 2 { // Put every other object back
		l.Put(live[i])
		delete(live, i)
	}
	if l.Len() != 500 {
		t.Fatalf("Len = %d, want 500", l.Len())
	}
	get(1000) // 500 recycled, 500 new
	if len(live) != 1500 {
		t.Fatalf("%d live objects, want 1500", len(live))
	}
	checkDistinct(t, live)
	want := FreeListStats{Gets: 2000, Puts: 500, Reused: 500, Allocated: 1500}
	if got := l.Stats(); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

// TestFreeListModel runs random Get/Put sequences against a model of who owns
// what and checks the invariants after every step.
func TestFreeListModel(t *testing.T) {
	for _, max := range []int{0, 1, 7, 64} {
		t.Run(fmt.Sprintf("max=%d", max), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(max), 42))
			l := NewFreeList[node](max)
			var owned []*node
			ids := make(map[*node]int)
			inList := make(map[*node]bool)
			for step := range 20000 {
				if len(owned) == 0 || r.IntN(2) == 0 {
					p := l.Get()
					if _, dup := ids[p]; dup {
						t.Fatalf("step %d: Get handed out %p, which is still owned", step, p)
					}
					if !isZero(p) {
						t.Fatalf("step %d: Get returned non-zero %+v", step, *p)
					}
					delete(inList, p)
					p.mark(step)
					ids[p] = step
					owned = append(owned, p)
				} else {
					i := r.IntN(len(owned))
					p := owned[i]
					if !p.owned(ids[p]) {
						t.Fatalf("step %d: owned object %p was modified: %+v", step, p, *p)
					}
					owned[i] = owned[len(owned)-1]
					owned = owned[:len(owned)-1]
					delete(ids, p)
					before := l.Len()
					l.Put(p)
					if l.Len() > before {
						inList[p] = true
					}
				}
				st := l.Stats()
				if st.Gets != st.Reused+st.Allocated {
					t.Fatalf("step %d: Gets %d != Reused %d + Allocated %d", step, st.Gets, st.Reused, st.Allocated)
				}
				if st.Puts != uint64(l.Len())+st.Reused+st.Dropped {
					t.Fatalf("step %d: Puts %d != Len %d + Reused %d + Dropped %d", step, st.Puts, l.Len(), st.Reused, st.Dropped)
				}
				if l.Len() > max || l.Len() != len(inList) {
					t.Fatalf("step %d: Len %d, model %d, max %d", step, l.Len(), len(inList), max)
				}
			}
		})
	}
}

func TestSlabChunks(t *testing.T) {
	tests := []struct {
		name  string
		s     *Slab[node]
		chunk int
	}{
		{"zero value", new(Slab[node]), DefaultSlabChunk},
		{"chunk=1", NewSlab[node](1), 1},
		{"chunk=3", NewSlab[node](3), 3},
		{"chunk=64", NewSlab[node](64), 64},
		{"chunk=1000", NewSlab[node](1000), 1000},
	}
	for _, tt := range tests {
		for _, n := range []int{0, 1, tt.chunk - 1, tt.chunk, tt.chunk + 1, 3*tt.chunk + 2, 1000} {
			t.Run(fmt.Sprintf("%s/n=%d", tt.name, n), func(t *testing.T) {
				s := tt.s
				s.cur, s.next, s.stats = nil, 0, SlabStats{} // fresh slab, same chunk size
				if s.ChunkSize() != tt.chunk {
					t.Fatalf("ChunkSize = %d, want %d", s.ChunkSize(), tt.chunk)
				}
				live := make(map[int]*node, n)
				for i := range n {
					p := s.New()
					if !isZero(p) {
						t.Fatalf("New #%d returned non-zero %+v", i, *p)
					}
					p.mark(i)
					live[i] = p
				}
				checkDistinct(t, live)
				want := SlabStats{Allocated: uint64(n), Chunks: uint64((n + tt.chunk - 1) / tt.chunk)}
				if got := s.Stats(); got != want {
					t.Fatalf("Stats = %+v, want %+v", got, want)
				}
			})
		}
	}
}

// TestNoDoubleHandOutMixed holds objects from a FreeList and a Slab at once,
// recycling the free-list ones, and checks no live object is shared.
func TestNoDoubleHandOutMixed(t *testing.T) {
	var l FreeList[node]
	var s Slab[node]
	live := make(map[int]*node)
	id := 0
	for round := range 5 {
		for range 1000 {
			p := l.Get()
			p.mark(id)
			live[id] = p
			id++
			q := s.New()
			q.mark(-id)
			live[-id] = q
		}
		checkDistinct(t, live)
		for i := range live { // give back half of the free-list objects
			if i >= 0 && (i+round)%2 == 0 {
				l.Put(live[i])
				delete(live, i)
			}
		}
		checkDistinct(t, live)
	}
}

func TestZeroValues(t *testing.T) {
	var l FreeList[node]
	if l.Len() != 0 || l.Max() != DefaultFreeListMax || l.Stats() != (FreeListStats{}) {
		t.Fatalf("zero FreeList: Len=%d Max=%d Stats=%+v", l.Len(), l.Max(), l.Stats())
	}
	p := l.Get()
	l.Put(p)
	if l.Get() != p {
		t.Fatal("zero FreeList did not recycle")
	}

	var s Slab[node]
	if s.ChunkSize() != DefaultSlabChunk || s.Stats() != (SlabStats{}) {
		t.Fatalf("zero Slab: ChunkSize=%d Stats=%+v", s.ChunkSize(), s.Stats())
	}
	a, b := s.New(), s.New()
	if a == nil || b == nil || a == b {
		t.Fatalf("zero Slab New: %p %p", a, b)
	}
	if s.Stats() != (SlabStats{Allocated: 2, Chunks: 1}) {
		t.Fatalf("zero Slab Stats = %+v", s.Stats())
	}

	// Element types of other shapes.
	var li FreeList[int]
	if x := li.Get(); *x != 0 {
		t.Fatal("FreeList[int] Get not zero")
	}
	var ss Slab[string]
	if x := ss.New(); *x != "" {
		t.Fatal("Slab[string] New not zero")
	}
}

func TestPanics(t *testing.T) {
	tests := []struct {
		name string
		fn   func()
		want string
	}{
		{"NewFreeList(-1)", func() { NewFreeList[node](-1) }, "alloc: NewFreeList with negative max -1"},
		{"NewFreeList(minInt)", func() { NewFreeList[node](-1 << 63) }, "alloc: NewFreeList with negative max -9223372036854775808"},
		{"NewSlab(0)", func() { NewSlab[node](0) }, "alloc: NewSlab with chunk size 0 < 1"},
		{"NewSlab(-5)", func() { NewSlab[node](-5) }, "alloc: NewSlab with chunk size -5 < 1"},
		{"Put(nil) zero list", func() { new(FreeList[node]).Put(nil) }, "alloc: Put of nil"},
		{"Put(nil) max=0", func() { NewFreeList[node](0).Put(nil) }, "alloc: Put of nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := catch(tt.fn)
			if got != tt.want {
				t.Fatalf("panic %q, want %q", got, tt.want)
			}
			if !strings.HasPrefix(got, "alloc: ") {
				t.Fatalf("panic %q lacks the alloc: prefix", got)
			}
		})
	}
}

// catch runs fn and returns its panic value as a string ("" if none).
func catch(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	fn()
	return ""
}

func TestDebugChecks(t *testing.T) {
	if !debug {
		t.Skip("build with -tags allocdebug")
	}
	t.Run("double Put", func(t *testing.T) {
		var l FreeList[node]
		p := l.Get()
		l.Put(p)
		if got := catch(func() { l.Put(p) }); got != "alloc: double Put of the same object" {
			t.Fatalf("panic %q", got)
		}
	})
	t.Run("write after Put", func(t *testing.T) {
		var l FreeList[node]
		p := l.Get()
		l.Put(p)
		p.id = 1 // the bug the check exists for
		if got := catch(func() { l.Get() }); got != "alloc: object written after Put (use after Put)" {
			t.Fatalf("panic %q", got)
		}
	})
}

func TestSteadyStateAllocs(t *testing.T) {
	if spindletest.RaceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	var l FreeList[node]
	l.Put(l.Get())
	if n := testing.AllocsPerRun(1000, func() { l.Put(l.Get()) }); n != 0 {
		t.Fatalf("FreeList Get+Put: %v allocs/op in steady state, want 0", n)
	}

	s := NewSlab[node](64)
	const objs = 64 * 100
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for range objs {
		sinkNode = s.New()
	}
	runtime.ReadMemStats(&ms1)
	if n := ms1.Mallocs - ms0.Mallocs; n > objs/64+5 {
		t.Fatalf("Slab: %d mallocs for %d objects, want about %d", n, objs, objs/64)
	}
}

var sinkNode *node

type big struct {
	self *big // a pointer keeps the chunk out of the tiny allocator
	data [30]uint64
}

func (b *big) fill(seed uint64) {
	for i := range b.data {
		b.data[i] = seed ^ uint64(i)*0x9e3779b97f4a7c15
	}
}

func (b *big) intact(seed uint64) bool {
	for i := range b.data {
		if b.data[i] != seed^uint64(i)*0x9e3779b97f4a7c15 {
			return false
		}
	}
	return true
}

// TestSlabObjectOutlivesChunkmates holds one slab object alone (no slab, no
// chunk-mates) across GCs and heap churn: its chunk must stay alive and its
// data intact. Once the object is dropped, the chunk may be reclaimed.
func TestSlabObjectOutlivesChunkmates(t *testing.T) {
	held, sibling := makeLoneSlabObject()
	for round := range 5 {
		runtime.GC()
		churn()
		if !held.intact(0xfeed) {
			t.Fatalf("round %d: held slab object corrupted after GC", round)
		}
		if held.self != held {
			t.Fatalf("round %d: held slab object's pointer field corrupted", round)
		}
		if sibling.Value() == nil {
			t.Fatalf("round %d: chunk reclaimed while one of its objects is live", round)
		}
	}
	runtime.KeepAlive(held) // held is dead from here on
	for range 10 {
		runtime.GC()
		if sibling.Value() == nil {
			return
		}
	}
	t.Log("chunk not reclaimed after its last object died (allowed, not expected)")
}

// makeLoneSlabObject fills a 64-object chunk and returns one object from the
// middle plus a weak pointer to another object of the same chunk. Nothing
// else from the chunk, or the slab, stays reachable.
func makeLoneSlabObject() (*big, weak.Pointer[big]) {
	s := NewSlab[big](64)
	var held *big
	var sibling weak.Pointer[big]
	for i := range 64 {
		p := s.New()
		p.fill(uint64(i))
		switch i {
		case 0:
			sibling = weak.Make(p)
		case 37:
			held = p
			p.self = p
			p.fill(0xfeed)
		}
	}
	return held, sibling
}

// churn allocates and drops objects of the chunk's size class so freed memory
// would be reused (and overwritten) if the chunk had been freed.
func churn() {
	var keep [][]byte
	for range 200 {
		b := make([]byte, 64*256)
		for i := range b {
			b[i] = 0xa5
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
}
