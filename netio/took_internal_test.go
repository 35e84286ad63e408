package netio

import (
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// took resolves, in order, exactly the flushes whose output the kernel has
// taken, and keeps the others queued in order.
func TestTookResolvesFlushesMet(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	c := &Conn{}
	c.ext, c.written = &connExt{}, 100
	targets := []uint64{10, 20, 20, 30, 40}
	ps := make([]*future.Promise[struct{}], len(targets))
	for i, tg := range targets {
		ps[i] = future.NewPromise[struct{}](ex)
		c.ext.flushq = append(c.ext.flushq, flushWait{tg, ps[i]})
	}
	for _, step := range []struct {
		n     int
		ready int // how many of ps are ready after it
	}{{5, 0}, {20, 3}, {4, 3}, {10, 4}, {60, 5}} {
		c.took(step.n)
		for i, p := range ps {
			if got, want := p.Future().Ready(), i < step.ready; got != want {
				t.Fatalf("after took(%d) to %d: flush %d (target %d) ready %v, want %v", step.n, c.taken, i, targets[i], got, want)
			}
		}
		q := c.flushq()
		if len(q) != len(ps)-step.ready {
			t.Fatalf("after took(%d): %d flushes queued, want %d", step.n, len(q), len(ps)-step.ready)
		}
		for k, w := range q {
			if w.p != ps[step.ready+k] {
				t.Fatalf("after took(%d): queued flush %d is not flush %d", step.n, k, step.ready+k)
			}
		}
	}
}
