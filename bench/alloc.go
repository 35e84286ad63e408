package main

// BenchmarkAlloc: Boost.Cobalt's composed-operation benchmark in Go. Each op
// acquires operation state of 512 and 256 bytes, yields to the loop five
// times (each yield re-queues the operation behind the loop's other work),
// releases and re-acquires the 256-byte state after the first three yields,
// and releases both at the end; the next op starts when one finishes. The
// cases differ only in where the state comes from.

import (
	"sync"
	"testing"

	"github.com/spindle-rt/spindle/alloc"
	"github.com/spindle-rt/spindle/executor"
)

func init() {
	register(
		benchCase{Group: "Alloc", Name: "heap", Unit: "op", Fn: func(b *testing.B) { composed(b, &heapStates{}) }},
		benchCase{Group: "Alloc", Name: "sync_pool", Unit: "op", Baseline: "heap", Fn: func(b *testing.B) { composed(b, newPoolStates()) }},
		benchCase{Group: "Alloc", Name: "freelist", Unit: "op", Baseline: "heap", Fn: func(b *testing.B) { composed(b, &freeListStates{}) }},
		benchCase{Group: "Alloc", Name: "slab", Unit: "op", Baseline: "heap", Fn: func(b *testing.B) { composed(b, &slabStates{}) }},
	)
}

// bigState and smallState are operation state: bytes plus the pointer back
// to the operation that a real one keeps.
type bigState struct {
	op *composedOp
	_  [504]byte
}

type smallState struct {
	op *composedOp
	_  [248]byte
}

// states is an allocation strategy for operation state.
type states interface {
	big() *bigState
	putBig(*bigState)
	small() *smallState
	putSmall(*smallState)
}

type heapStates struct{}

func (*heapStates) big() *bigState         { return new(bigState) }
func (*heapStates) putBig(*bigState)       {}
func (*heapStates) small() *smallState     { return new(smallState) }
func (*heapStates) putSmall(*smallState)   {}
func (*freeListStates) big() *bigState     { return fl(&bigFL) }
func (*freeListStates) small() *smallState { return fl(&smallFL) }

type poolStates struct{ bigs, smalls sync.Pool }

func newPoolStates() *poolStates {
	return &poolStates{
		bigs:   sync.Pool{New: func() any { return new(bigState) }},
		smalls: sync.Pool{New: func() any { return new(smallState) }},
	}
}

func (p *poolStates) big() *bigState { return p.bigs.Get().(*bigState) }
func (p *poolStates) putBig(s *bigState) {
	*s = bigState{}
	p.bigs.Put(s)
}
func (p *poolStates) small() *smallState { return p.smalls.Get().(*smallState) }
func (p *poolStates) putSmall(s *smallState) {
	*s = smallState{}
	p.smalls.Put(s)
}

// The free lists are loop-owned: every op runs on the one loop.
var (
	bigFL   alloc.FreeList[bigState]
	smallFL alloc.FreeList[smallState]
)

func fl[T any](l *alloc.FreeList[T]) *T { return l.Get() }

type freeListStates struct{}

func (*freeListStates) putBig(s *bigState)     { bigFL.Put(s) }
func (*freeListStates) putSmall(s *smallState) { smallFL.Put(s) }

type slabStates struct {
	bigs   alloc.Slab[bigState]
	smalls alloc.Slab[smallState]
}

func (s *slabStates) big() *bigState         { return s.bigs.New() }
func (s *slabStates) putBig(p *bigState)     { s.bigs.Release(p) }
func (s *slabStates) small() *smallState     { return s.smalls.New() }
func (s *slabStates) putSmall(p *smallState) { s.smalls.Release(p) }

// composedOp is one operation, written as a state machine that the loop
// runs one step per yield.
type composedOp struct {
	ex    *executor.Executor
	next  func() // o.Run, made once: posting it allocates nothing
	st    states
	step  int
	left  int // ops still to run, this one included
	big   *bigState
	small *smallState
}

func (o *composedOp) Run() {
	switch {
	case o.step == 0:
		o.big, o.small = o.st.big(), o.st.small()
		o.big.op, o.small.op = o, o
	case o.step <= 3:
		o.st.putSmall(o.small)
		o.small = o.st.small()
		o.small.op = o
	case o.step == 5:
		o.st.putSmall(o.small)
		o.st.putBig(o.big)
		o.big, o.small = nil, nil
		o.step = 0
		if o.left--; o.left > 0 {
			o.ex.Post(o.next) // the next op
		}
		return
	}
	o.step++
	o.ex.Post(o.next) // yield to the loop
}

func composed(b *testing.B, st states) {
	ex := newExecutor()
	defer ex.Close()
	op := &composedOp{ex: ex, st: st, left: 64}
	op.next = op.Run
	ex.Drive(op.Run) // warm the allocators
	op.left = b.N
	t0 := ex.Stats().TasksRun
	m := startMeter(b)
	ex.Drive(op.Run)
	m.Stop(b, "op", float64(b.N), float64(ex.Stats().TasksRun-t0))
	if op.left != 0 {
		b.Fatalf("%d ops did not run", op.left)
	}
}
