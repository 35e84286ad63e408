package sim_test

import (
	"testing"
	"time"

	"github.com/spindle-rt/spindle/sim"
)

// An operation ends once: what ends it first wins, on the world's clock.
func TestHistoryEndsOnce(t *testing.T) {
	w := sim.New(1)
	defer w.Close()
	h := sim.NewHistory[string, int](w)
	a, b, c, d := h.Call(1, "a"), h.Call(2, "b"), h.Call(3, "c"), h.Call(4, "d")
	ex := w.Host("x").Executor()
	_ = ex.Submit(func() { ex.AfterFunc(5*time.Millisecond, func() {}) })
	w.RunUntil(func() bool { return false }, time.Second) // the clock moves to the timer: 5 ms
	steps := []struct {
		name string
		end  func() bool
		want bool
	}{
		{"return a", func() bool { return h.Return(a, 7) }, true},
		{"return a again", func() bool { return h.Return(a, 8) }, false},
		{"a unknown after its return", func() bool { return h.Unknown(a) }, false},
		{"b unknown", func() bool { return h.Unknown(b) }, true},
		{"b returns late", func() bool { return h.Return(b, 9) }, false},
		{"c fails", func() bool { return h.Fail(c) }, true},
		{"c fails again", func() bool { return h.Fail(c) }, false},
	}
	for _, s := range steps {
		if got := s.end(); got != s.want {
			t.Fatalf("%s: %v, want %v", s.name, got, s.want)
		}
	}
	h.Settle(func(op *sim.Op[string, int]) sim.Outcome {
		if op.Input == "a" || op.Input == "b" || op.Input == "c" {
			t.Fatalf("Settle offered %q, which had ended", op.Input)
		}
		return sim.Unknown
	})
	want := []struct {
		out     int
		outcome sim.Outcome
	}{{7, sim.Returned}, {0, sim.Unknown}, {0, sim.Failed}, {0, sim.Unknown}}
	if h.Len() != len(want) {
		t.Fatalf("%d operations", h.Len())
	}
	for i, op := range h.Ops() {
		if op.Output != want[i].out || op.Outcome != want[i].outcome || op.Call != 0 || op.Return != 5*time.Millisecond {
			t.Fatalf("operation %d: %+v, want output %d, outcome %d, called at 0 and ended at 5ms", i, op, want[i].out, want[i].outcome)
		}
	}
	if h.Op(d).Client != 4 {
		t.Fatalf("Op(d): %+v", h.Op(d))
	}
}
