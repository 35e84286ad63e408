package hooks_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeLoop is a Loop without an executor: the caller always holds it.
type fakeLoop struct{ frame.Holder }

// newFakeLoop returns a loop that the calling goroutine holds.
func newFakeLoop() *fakeLoop {
	l := &fakeLoop{}
	l.Hold()
	return l
}

func TestStorageRunGetNested(t *testing.T) {
	l := newFakeLoop()
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
	if l.Cur != nil {
		t.Fatal("frame not restored")
	}
}

// Two storages of the same type are distinct keys.
func TestStoragesAreDistinct(t *testing.T) {
	l := newFakeLoop()
	a, b := hooks.NewStorage[int](), hooks.NewStorage[int]()
	a.Run(l, 1, func() {
		if _, ok := b.Get(l); ok {
			t.Error("b sees a's value")
		}
	})
}

// A nil value of an interface type is a value.
func TestStorageNilInterfaceValue(t *testing.T) {
	l := newFakeLoop()
	s := hooks.NewStorage[error]()
	s.Run(l, nil, func() {
		if v, ok := s.Get(l); v != nil || !ok {
			t.Errorf("Get = %v, %v; want nil, true", v, ok)
		}
	})
}

func TestStorageRunRestoresOnPanic(t *testing.T) {
	l := newFakeLoop()
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
	l := newFakeLoop()
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
	l := newFakeLoop()
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
