package loop

import (
	"fmt"
	"slices"
	"testing"
)

// record is a Runnable that appends its name to a log when it runs and
// counts its drops.
type record struct {
	name    string
	log     *[]string
	dropped int
}

func (r *record) Run()  { *r.log = append(*r.log, r.name) }
func (r *record) Drop() { r.dropped++ }

// The inbox keeps the order of submission across blocks, whether its blocks
// are consumed in place or copied behind posted work, and the blocks it
// hands back to its free list hold no items.
func TestInboxOrderAcrossBlocks(t *testing.T) {
	for _, n := range []int{1, blockSize - 1, blockSize, blockSize + 1, 3*blockSize + 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			e := New(Config{})
			defer e.Close()
			var log, want []string
			// Batch a: n items, consumed in place. Each posts one item and
			// submits one: the posts queue at the back while a is consumed,
			// so the submissions are copied behind them.
			for i := range n {
				a := fmt.Sprint("a", i)
				p, s := &record{name: fmt.Sprint("p", i), log: &log}, &record{name: fmt.Sprint("s", i), log: &log}
				fn := func() {
					log = append(log, a)
					e.Post(p.Run)
					if err := e.Submit(s.Run); err != nil {
						t.Error(err)
					}
				}
				if err := e.Submit(fn); err != nil {
					t.Fatal(err)
				}
				want = append(want, a)
			}
			for _, prefix := range []string{"p", "s"} {
				for i := range n {
					want = append(want, fmt.Sprint(prefix, i))
				}
			}
			if ran := e.RunUntilIdle(); ran != 3*n {
				t.Errorf("ran %d tasks, want %d", ran, 3*n)
			}
			if !slices.Equal(log, want) {
				t.Fatalf("ran in the order %v\nwant %v", log, want)
			}
			// One more submission and take: the consumed blocks go back to the
			// free list.
			if err := e.Submit(func() {}); err != nil {
				t.Fatal(err)
			}
			e.RunUntilIdle()
			e.mu.Lock()
			defer e.mu.Unlock()
			for c := e.inbox.free; c != nil; c = c.next {
				if c.n != 0 || c.items != [blockSize]item{} {
					t.Fatalf("a free block holds %d items", c.n)
				}
			}
		})
	}
}

// Close drops every submitted item exactly once, across blocks, and runs
// none of them.
func TestInboxDropsOnClose(t *testing.T) {
	e := New(Config{})
	var log []string
	rs := make([]*record, 2*blockSize+3)
	for i := range rs {
		rs[i] = &record{name: fmt.Sprint(i), log: &log}
		if err := e.SubmitRunnable(rs[i], nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if len(log) != 0 {
		t.Fatalf("Close ran %d submitted items", len(log))
	}
	for i, r := range rs {
		if r.dropped != 1 {
			t.Fatalf("item %d dropped %d times, want 1", i, r.dropped)
		}
	}
}

// After a burst the free list keeps the blocks for the next one until the
// loop trims it, and then at most inboxFreeBlocks.
func TestInboxFreeListTrimmed(t *testing.T) {
	e := New(Config{})
	defer e.Close()
	n := 0
	for range 20 * blockSize {
		if err := e.Submit(func() { n++ }); err != nil {
			t.Fatal(err)
		}
	}
	e.RunUntilIdle()
	if e.q.nused != 20 || !e.oversized() {
		t.Fatalf("after the burst: %d consumed blocks kept (oversized: %v), want 20 (true)", e.q.nused, e.oversized())
	}
	e.Drive(e.trim)
	e.mu.Lock()
	free := e.inbox.nfree
	e.mu.Unlock()
	if free != inboxFreeBlocks || e.q.nused != 0 || e.oversized() {
		t.Fatalf("after the trim: %d free blocks and %d consumed ones kept (oversized: %v), want %d and 0 (false)",
			free, e.q.nused, e.oversized(), inboxFreeBlocks)
	}
	if n != 20*blockSize {
		t.Fatalf("ran %d items, want %d", n, 20*blockSize)
	}
}
