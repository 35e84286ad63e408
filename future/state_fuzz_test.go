package future

import (
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

// countWaiter is a waiter that counts its wake-ups. A quit one is linked
// through q, a plain one through l.
type countWaiter struct {
	l         link
	q         quitLink
	quit      bool
	wakes     int
	withdrawn bool // withdraw succeeded
	early     bool // registered after completion: never linked
}

// link returns the link w is registered with.
func (w *countWaiter) link() *link {
	if w.quit {
		return &w.q.link
	}
	return &w.l
}

func (w *countWaiter) wake(bool) { w.wakes++ }

// stateModel drives a future's state machine (add a waiter, withdraw one,
// complete, cancel, compact) from a byte string and checks it against a
// model after every step.
type stateModel struct {
	t         *testing.T
	c         *core
	waiters   []*countWaiter
	done      bool
	cancelled bool
}

func (m *stateModel) step(op, arg byte) {
	switch op % 6 {
	case 0, 1: // add a waiter that may (0) or may not (1) withdraw
		w := &countWaiter{quit: op%6 == 0}
		w.l.w = w
		w.q.init(w)
		linked := m.c.addWaiter(w.link())
		if linked == m.done {
			m.t.Fatalf("addWaiter = %v on a future done=%v", linked, m.done)
		}
		w.early = !linked
		m.waiters = append(m.waiters, w)
	case 2: // withdraw a quit waiter
		if len(m.waiters) == 0 {
			return
		}
		w := m.waiters[int(arg)%len(m.waiters)]
		if !w.quit || w.withdrawn || w.early {
			return
		}
		ok := m.c.withdraw(&w.q)
		if ok == m.done {
			m.t.Fatalf("withdraw = %v on a future done=%v", ok, m.done)
		}
		w.withdrawn = ok
	case 3, 4: // complete (3) or cancel (4)
		h, ok := m.c.claim()
		if ok == m.done {
			m.t.Fatalf("claim = %v on a future done=%v", ok, m.done)
		}
		if !ok {
			return
		}
		by := fromAnywhere
		if op%6 == 4 {
			by = fromCancel
		}
		m.c.publish(h, by)
		m.done, m.cancelled = true, by == fromCancel
	case 5:
		m.c.compact(int(arg))
	}
	m.check()
}

// check compares the future with the model.
func (m *stateModel) check() {
	if m.c.ready() != m.done || m.c.cancelled() != m.cancelled {
		m.t.Fatalf("ready=%v cancelled=%v, model %v %v", m.c.ready(), m.c.cancelled(), m.done, m.cancelled)
	}
	for i, w := range m.waiters {
		want := 0
		if m.done && !w.withdrawn && !w.early {
			want = 1
		}
		if w.wakes != want {
			m.t.Fatalf("waiter %d (quit=%v withdrawn=%v early=%v) woken %d times, want %d", i, w.quit, w.withdrawn, w.early, w.wakes, want)
		}
	}
	if m.done {
		return
	}
	// Pending: the stack holds every live waiter once, newest first, and a
	// dead link only beneath compactScan live ones (every withdrawal cleans
	// the top of the stack).
	var live []*link
	above := 0 // live links above the current one
	for l := m.c.head.Load(); l != nil; l = l.next {
		if q := quitOf(l); q != nil && q.state.Load() == linkDead {
			if above < compactScan {
				m.t.Fatalf("a dead link beneath only %d live ones", above)
			}
			continue
		}
		live = append(live, l)
		above++
	}
	k := len(live) - 1
	for _, w := range m.waiters {
		if w.withdrawn {
			continue
		}
		if k < 0 || live[k] != w.link() {
			m.t.Fatalf("live waiters in the stack out of order or missing")
		}
		k--
	}
	if k != -1 {
		m.t.Fatalf("%d unknown links in the stack", k+1)
	}
}

func FuzzPromiseStates(f *testing.F) {
	f.Add([]byte{0, 0, 2, 0, 3, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 2, 2, 2, 3, 2, 4, 2, 5, 2, 6, 2, 7, 2, 8, 5, 0, 4, 0})
	f.Add([]byte{1, 0, 0, 0, 2, 1, 3, 0, 2, 0, 0, 0})
	seed := make([]byte, 0, 200)
	for i := range 40 {
		seed = append(seed, 0, 0, 2, byte(i))
	}
	f.Add(append(seed, 3, 0))
	ex := executor.New()
	f.Cleanup(func() { ex.Close() })
	f.Fuzz(func(t *testing.T, ops []byte) {
		m := &stateModel{t: t, c: &core{ex: (*loop.Loop)(ex)}}
		for i := 0; i+1 < len(ops); i += 2 {
			m.step(ops[i], ops[i+1])
		}
	})
}
