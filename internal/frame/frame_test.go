package frame_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/internal/frame"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type key string

func TestFrameWithLookup(t *testing.T) {
	var empty *frame.Frame
	if _, ok := empty.Lookup(key("a")); ok {
		t.Fatal("empty frame has a binding")
	}
	if empty.Len() != 0 {
		t.Fatalf("empty Len = %d", empty.Len())
	}
	a := empty.With(key("a"), 1)
	ab := a.With(key("b"), 2)
	abc := ab.With(key("c"), 3)
	for _, tc := range []struct {
		f    *frame.Frame
		k    key
		want any
		ok   bool
	}{
		{a, "a", 1, true}, {a, "b", nil, false},
		{ab, "a", 1, true}, {ab, "b", 2, true},
		{abc, "c", 3, true}, {abc, "a", 1, true},
	} {
		if v, ok := tc.f.Lookup(tc.k); v != tc.want || ok != tc.ok {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tc.k, v, ok, tc.want, tc.ok)
		}
	}
}

// Rebinding a key replaces its binding: the older frames are unchanged, the
// new one has one binding per key, in the same order.
func TestFrameRebindCopiesOnWrite(t *testing.T) {
	abc := (*frame.Frame)(nil).With(key("a"), 1).With(key("b"), 2).With(key("c"), 3)
	for _, k := range []key{"a", "b", "c"} {
		f := abc.With(k, 9)
		if f.Len() != 3 {
			t.Errorf("rebinding %q: Len = %d, want 3", k, f.Len())
		}
		for _, other := range []key{"a", "b", "c"} {
			want := map[key]int{"a": 1, "b": 2, "c": 3}[other]
			if other == k {
				want = 9
			}
			if v, _ := f.Lookup(other); v != want {
				t.Errorf("rebinding %q: %q = %v, want %v", k, other, v, want)
			}
			if v, _ := abc.Lookup(other); v != map[key]int{"a": 1, "b": 2, "c": 3}[other] {
				t.Errorf("rebinding %q changed the old frame: %q = %v", k, other, v)
			}
		}
	}
	// Rebinding in a loop does not grow the frame.
	f := abc
	for i := range 1000 {
		f = f.With(key("a"), i)
	}
	if f.Len() != 3 {
		t.Fatalf("after 1000 rebinds Len = %d, want 3", f.Len())
	}
}
