package hooks_test

import (
	"testing"

	"github.com/spindle-rt/spindle/hooks"
)

type key string

func TestFrameWithLookup(t *testing.T) {
	var empty *hooks.Frame
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
		f    *hooks.Frame
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
	abc := (*hooks.Frame)(nil).With(key("a"), 1).With(key("b"), 2).With(key("c"), 3)
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

// fakeLoop is a Loop without an executor: the caller always holds it.
type fakeLoop struct{ fr *hooks.Frame }

func (l *fakeLoop) Frame() *hooks.Frame { return l.fr }

func (l *fakeLoop) WithFrame(fr *hooks.Frame, fn func()) {
	prev := l.fr
	l.fr = fr
	defer func() { l.fr = prev }()
	fn()
}

func TestStorageRunGetNested(t *testing.T) {
	l := &fakeLoop{}
	s1 := hooks.NewStorage[int]()
	s2 := hooks.NewStorage[string]()
	if _, ok := s1.Get(l); ok {
		t.Fatal("Get outside Run reported a value")
	}
	s1.Run(l, 1, func() {
		s2.Run(l, "x", func() {
			s1.Run(l, 2, func() {
				if v, _ := s1.Get(l); v != 2 {
					t.Errorf("inner s1 = %d, want 2", v)
				}
				if v, _ := s2.Get(l); v != "x" {
					t.Errorf("inner s2 = %q, want x", v)
				}
			})
			if v, _ := s1.Get(l); v != 1 {
				t.Errorf("s1 after inner Run = %d, want 1", v)
			}
		})
		if _, ok := s2.Get(l); ok {
			t.Error("s2 visible after its Run returned")
		}
	})
	if l.fr != nil {
		t.Fatal("frame not restored")
	}
}

// Two storages of the same type are distinct keys.
func TestStoragesAreDistinct(t *testing.T) {
	l := &fakeLoop{}
	a, b := hooks.NewStorage[int](), hooks.NewStorage[int]()
	a.Run(l, 1, func() {
		if _, ok := b.Get(l); ok {
			t.Error("b sees a's value")
		}
	})
}

// A nil value of an interface type is a value.
func TestStorageNilInterfaceValue(t *testing.T) {
	l := &fakeLoop{}
	s := hooks.NewStorage[error]()
	s.Run(l, nil, func() {
		if v, ok := s.Get(l); v != nil || !ok {
			t.Errorf("Get = %v, %v; want nil, true", v, ok)
		}
	})
}

func TestStorageRunRestoresOnPanic(t *testing.T) {
	l := &fakeLoop{}
	s := hooks.NewStorage[int]()
	func() {
		defer func() { _ = recover() }()
		s.Run(l, 1, func() { panic("boom") })
	}()
	if _, ok := s.Get(l); ok {
		t.Fatal("value still bound after Run panicked")
	}
}

func TestBindAndSnapshot(t *testing.T) {
	l := &fakeLoop{}
	s := hooks.NewStorage[int]()
	var bound func()
	var run func(func())
	s.Run(l, 1, func() {
		bound = hooks.Bind(l, func() {
			if v, _ := s.Get(l); v != 1 {
				t.Errorf("bound callback sees %d, want 1", v)
			}
		})
		run = hooks.Snapshot(l)
	})
	s.Run(l, 2, func() {
		bound()
		run(func() {
			if v, _ := s.Get(l); v != 1 {
				t.Errorf("snapshot sees %d, want 1", v)
			}
		})
		if v, _ := s.Get(l); v != 2 {
			t.Errorf("after the bound call the caller sees %d, want 2", v)
		}
	})
}

func TestGetDoesNotAllocate(t *testing.T) {
	l := &fakeLoop{}
	s := hooks.NewStorage[int]()
	other := hooks.NewStorage[string]()
	other.Run(l, "o", func() {
		s.Run(l, 12345, func() {
			n := testing.AllocsPerRun(100, func() {
				if v, ok := s.Get(l); !ok || v != 12345 {
					t.Fatal("bad value")
				}
			})
			if n != 0 {
				t.Fatalf("Get allocates %v times", n)
			}
		})
	})
}
