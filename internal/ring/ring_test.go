package ring

import (
	"math/rand"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAgainstSlice pushes, pops and removes at random and compares the ring
// with a plain slice model after every step.
func TestAgainstSlice(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var r Ring[int]
	var model []int
	next := 0
	for step := range 20000 {
		switch op := rng.Intn(13); {
		case op == 12:
			// TryPush takes v exactly when Push would not have to grow.
			full := r.Len() == r.Cap()
			if got := r.TryPush(next); got == full {
				t.Fatalf("step %d: TryPush=%v with Len %d, Cap %d", step, got, r.Len(), r.Cap())
			}
			if !full {
				model = append(model, next)
				next++
			}
		case op >= 10:
			r.PushFront(next)
			model = append([]int{next}, model...)
			next++
		case op < 5:
			r.Push(next)
			model = append(model, next)
			next++
		case op < 9:
			v, ok := r.Pop()
			if ok != (len(model) > 0) {
				t.Fatalf("step %d: Pop ok=%v with model len %d", step, ok, len(model))
			}
			if ok {
				if v != model[0] {
					t.Fatalf("step %d: Pop=%d want %d", step, v, model[0])
				}
				model = model[1:]
			}
		default:
			if len(model) > 0 {
				i := rng.Intn(len(model))
				r.RemoveAt(i)
				model = append(model[:i:i], model[i+1:]...)
			}
		}
		if r.Len() != len(model) {
			t.Fatalf("step %d: Len=%d want %d", step, r.Len(), len(model))
		}
		for i, want := range model {
			if got := *r.At(i); got != want {
				t.Fatalf("step %d: At(%d)=%d want %d", step, i, got, want)
			}
		}
	}
}

func TestPopClearsSlot(t *testing.T) {
	var r Ring[*int]
	x := 1
	r.Push(&x)
	r.Pop()
	for i, p := range r.buf {
		if p != nil {
			t.Fatalf("slot %d still holds a popped pointer", i)
		}
	}
	if _, ok := r.Pop(); ok {
		t.Fatal("Pop on empty ring reported an element")
	}
	if r.Peek() != nil {
		t.Fatal("Peek on empty ring is not nil")
	}
}

func TestGrowKeepsOrderAcrossWrap(t *testing.T) {
	var r Ring[int]
	for i := range 10 {
		r.Push(i)
	}
	for range 8 {
		r.Pop()
	}
	for i := 10; i < 40; i++ { // wraps, then grows from 16 to 32 to 64
		r.Push(i)
	}
	for want := 8; want < 40; want++ {
		v, ok := r.Pop()
		if !ok || v != want {
			t.Fatalf("Pop=%d,%v want %d", v, ok, want)
		}
	}
	if r.Cap()&(r.Cap()-1) != 0 {
		t.Fatalf("Cap %d is not a power of two", r.Cap())
	}
}

func TestIndexPanics(t *testing.T) {
	var r Ring[int]
	for _, f := range []func(){func() { r.At(0) }, func() { r.RemoveAt(-1) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic on out-of-range index")
				}
			}()
			f()
		}()
	}
}

func BenchmarkPushPop(b *testing.B) {
	var r Ring[func()]
	f := func() {}
	b.ReportAllocs()
	for range b.N {
		r.Push(f)
		r.Pop()
	}
}

type fatItem struct {
	r  interface{ Run() }
	fr *int
	id uint64
}

type runner struct{}

func (runner) Run() {}

func BenchmarkPushPopItem(b *testing.B) {
	var r Ring[fatItem]
	x := 1
	it := fatItem{r: runner{}, fr: &x, id: 1}
	b.ReportAllocs()
	for range b.N {
		r.Push(it)
		r.Pop()
	}
}
