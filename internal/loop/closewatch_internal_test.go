package loop

import "testing"

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
