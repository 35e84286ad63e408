package alloc

import (
	"math/rand"
	"testing"
)

// payload is a small object whose mark field records who owns it.
type payload struct {
	mark uint64
	_    [3]uint64
}

func TestSlabReleaseLIFO(t *testing.T) {
	tests := []struct {
		name    string
		chunk   int
		release func(s *Slab[payload], a, b *payload) (bool, bool)
		reuseB  bool // the next New returns b's space again
	}{
		{"top then next", 4, func(s *Slab[payload], a, b *payload) (bool, bool) { return s.Release(b), s.Release(a) }, true},
		{"not the top", 4, func(s *Slab[payload], a, b *payload) (bool, bool) { return s.Release(a), s.Release(b) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSlab[payload](tc.chunk)
			a, b := s.New(), s.New()
			a.mark, b.mark = 1, 2
			okA, okB := tc.release(s, a, b)
			if tc.name == "top then next" && (!okA || !okB) {
				t.Fatalf("LIFO releases refused: %v %v", okA, okB)
			}
			if tc.name == "not the top" {
				if okA {
					t.Fatal("Release of an object that is not the top succeeded")
				}
				if !okB {
					t.Fatal("Release of the top refused")
				}
				if a.mark != 1 {
					t.Fatal("a refused Release changed the object")
				}
			}
			c := s.New()
			want := b // only b was given back
			if okA && okB {
				want = a // both were given back: the bottom one comes first
			}
			if tc.reuseB && c != want {
				t.Fatal("New after releasing the top did not reuse its space")
			}
			if c.mark != 0 {
				t.Fatal("reused object not zeroed")
			}
		})
	}
}

// A random mix of New and Release (of random held objects) never hands out
// an object that is still held.
func TestSlabReleaseNoDoubleHandOut(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	s := NewSlab[payload](8)
	held := map[*payload]uint64{}
	var order []*payload
	var seq uint64
	for range 20000 {
		if len(order) > 0 && rng.Intn(3) == 0 {
			i := len(order) - 1
			if rng.Intn(2) == 0 {
				i = rng.Intn(len(order))
			}
			p := order[i]
			if s.Release(p) {
				delete(held, p)
				order = append(order[:i:i], order[i+1:]...)
			}
			continue
		}
		p := s.New()
		if _, dup := held[p]; dup {
			t.Fatal("New handed out an object that is still held")
		}
		if p.mark != 0 {
			t.Fatal("New handed out a non-zero object")
		}
		seq++
		p.mark = seq
		held[p] = seq
		order = append(order, p)
	}
	for p, m := range held {
		if p.mark != m {
			t.Fatal("a held object was changed by the slab")
		}
	}
	st := s.Stats()
	if st.Allocated-st.Released != uint64(len(held)) {
		t.Fatalf("stats: Allocated %d - Released %d != held %d", st.Allocated, st.Released, len(held))
	}
}

func TestSlabReleaseNilPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != "alloc: Release of nil" {
			t.Fatalf("panic %v", r)
		}
	}()
	var s Slab[payload]
	s.Release(nil)
}
