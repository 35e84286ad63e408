package alloc_test

import (
	"fmt"

	"github.com/spindle-rt/spindle/alloc"
)

// waiter is a runtime-owned node: the loop creates it when something starts
// waiting and unlinks it when the wait ends. No reference escapes the loop.
type waiter struct {
	next *waiter
	id   int
}

func ExampleFreeList() {
	var waiters alloc.FreeList[waiter] // the zero value keeps up to 1024

	// Three waits start.
	a, b, c := waiters.Get(), waiters.Get(), waiters.Get()
	a.id, b.id, c.id = 1, 2, 3

	// Wait b ends: unlink it and give it back. b must not be used again.
	waiters.Put(b)

	// The next wait reuses b's memory, zeroed.
	d := waiters.Get()
	fmt.Println("recycled:", d == b, "zeroed:", d.id == 0 && d.next == nil)
	d.id = 4

	st := waiters.Stats()
	fmt.Printf("gets=%d puts=%d reused=%d allocated=%d kept=%d\n",
		st.Gets, st.Puts, st.Reused, st.Allocated, waiters.Len())
	fmt.Println(a.id, c.id, d.id)
	// Output:
	// recycled: true zeroed: true
	// gets=4 puts=1 reused=1 allocated=3 kept=0
	// 1 3 4
}

// state is operation state that escapes to users, like a future.
type state struct {
	value int
}

func ExampleSlab() {
	slab := alloc.NewSlab[state](4) // 4 objects per chunk

	// Ten futures cost three chunk allocations, not ten.
	futures := make([]*state, 10)
	for i := range futures {
		futures[i] = slab.New()
		futures[i].value = i * i
	}
	st := slab.Stats()
	fmt.Printf("objects=%d chunks=%d\n", st.Allocated, st.Chunks)

	// A user may keep any of them as long as they like: the slab never hands
	// the same object out again, and the GC keeps its chunk alive meanwhile.
	kept := futures[9]
	fmt.Println("kept value:", kept.value)
	// Output:
	// objects=10 chunks=3
	// kept value: 81
}
