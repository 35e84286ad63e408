package loop

import (
	"runtime"
	"testing"
)

type noInterrupt struct{}

func (noInterrupt) Interrupt(error) {}

// The list of close watches gives its memory back once a burst of watches
// has gone, and keeps the others in it.
func TestCloseWatchesShrink(t *testing.T) {
	e := New(Config{})
	ws := make([]CloseWatch, 10_000)
	for i := range ws {
		if !e.Watch(&ws[i], noInterrupt{}) {
			t.Fatal("Watch refused")
		}
	}
	for i := range ws[1:] {
		e.Unwatch(&ws[i+1])
	}
	if n, c := len(e.watches.list), cap(e.watches.list); n != 1 || c > 256 {
		t.Fatalf("after the burst: %d watches in a list of capacity %d", n, c)
	}
	if e.watches.list[0] != &ws[0] || ws[0].pos != 1 {
		t.Fatal("the watch that stayed was lost")
	}
}

// The hold table drops the slots of owners that are gone when a new slot
// makes it reach its limit, keeping the slots of owners that are alive
// (held or not) with their numbers right, and keeps its memory within
// four times what is left.
func TestCloseHoldsSweep(t *testing.T) {
	e := New(Config{})
	var kept, idle CloseHold
	e.Hold(&kept, noInterrupt{})
	e.Hold(&idle, noInterrupt{})
	e.Release(&idle)
	const n = 10_000
	func() {
		burst := make([]CloseHold, n)
		for i := range burst {
			if !e.Hold(&burst[i], noInterrupt{}) {
				t.Fatal("Hold refused")
			}
			e.Release(&burst[i])
		}
	}()
	boundary := (*holdFlusher)(&e.watches).Flush
	boundary()
	runtime.GC()
	runtime.GC()
	more := make([]CloseHold, 2*n)
	used := 0
	for before := len(e.watches.holds); used < len(more); {
		e.Hold(&more[used], noInterrupt{})
		e.Release(&more[used])
		boundary()
		used++
		if len(e.watches.holds) < before {
			break
		}
		before = len(e.watches.holds)
	}
	if got, want := len(e.watches.holds), 2+used; got != want {
		t.Fatalf("after the burst: %d slots, want %d (the owners still alive)", got, want)
	}
	if got := cap(e.watches.holds); got > 4*len(e.watches.holds) {
		t.Errorf("%d slots in a table of capacity %d", len(e.watches.holds), got)
	}
	for _, h := range append([]*CloseHold{&kept, &idle}, &more[0], &more[used-1]) {
		if h.slot == 0 || e.watches.holds[h.slot-1].owner.Value() != h {
			t.Fatalf("slot %d lost its owner", h.slot)
		}
	}
	if e.watches.holds[kept.slot-1].pin != &kept || e.watches.holds[idle.slot-1].pin != nil {
		t.Fatal("the sweep changed what is held")
	}
	runtime.KeepAlive(&idle)
}

// A released owner stays pinned until the batch boundary, and past it if
// it is held again first; Holds and Releases within a batch queue it for
// review once.
func TestCloseHoldPinnedUntilBoundary(t *testing.T) {
	e := New(Config{})
	boundary := (*holdFlusher)(&e.watches).Flush
	var h CloseHold
	pinned := func() bool { return h.pinned && e.watches.holds[h.slot-1].pin == &h }
	for range 100 {
		e.Hold(&h, noInterrupt{})
		e.Release(&h)
	}
	if !pinned() || len(e.watches.review) != 1 {
		t.Fatalf("within a batch: pinned %v, %d in review; want pinned, 1", pinned(), len(e.watches.review))
	}
	e.Hold(&h, noInterrupt{})
	boundary()
	if !pinned() || len(e.watches.review) != 0 {
		t.Fatalf("held across the boundary: pinned %v, %d in review; want pinned, 0", pinned(), len(e.watches.review))
	}
	e.Release(&h)
	boundary()
	if h.pinned || e.watches.holds[h.slot-1].pin != nil {
		t.Fatal("released before the boundary: still pinned after it")
	}
	boundary() // nothing to review
	e.Hold(&h, noInterrupt{})
	if !pinned() {
		t.Fatal("held again: not pinned")
	}
}
