package loop

// Timers are kept by the loop itself in a binary min-heap ordered by
// (deadline, sequence number), so timers with the same deadline fire in the
// order they were started.
//
// Invariants:
//   - the heap is loop-owned;
//   - a timer's state moves once, from pending to stopped (Stop, from any
//     goroutine) or from pending to fired (the loop), by compare-and-swap,
//     so a callback runs at most once and never after Stop returned true;
//   - a stopped timer may stay in the heap until the loop pops it or
//     compacts the heap (when stopped entries outnumber pending ones), so
//     Stop costs one atomic operation and takes no lock;
//   - timersActive counts pending timers for Stats;
//   - the heap's backing array follows live timers: once it holds fewer
//     than a quarter of its capacity (beyond minTimerCap) it is copied into
//     one twice the size of what it holds (shrink), so a burst of timers
//     that fired or were stopped gives its memory back.

import (
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/frame"
)

const (
	timerPending int32 = iota
	timerStopped
	timerFired
)

var epoch = time.Now()

// mono returns the loop's monotonic clock in nanoseconds.
func mono() int64 { return int64(time.Since(epoch)) }

// Timer is a callback scheduled by AfterFunc. Stop cancels it.
type Timer struct {
	e      *Loop
	when   int64
	seq    uint64
	fn     func()
	closed func() // called instead of fn when the loop closes first (may be nil)
	fr     *frame.Frame
	id     hooks.ID
	state  atomic.Int32
}

type timerRun Timer

func (t *timerRun) Run() { t.fn() }

// Drop tells the timer's owner that the loop closed before fn ran.
func (t *timerRun) Drop() { (*Timer)(t).close() }

// close calls the timer's closed func, if it has one.
func (t *Timer) close() {
	if t.closed != nil {
		t.closed()
	}
}

// AfterFunc: see executor.Executor.AfterFunc; like Post, it panics off the
// loop. Packages built on the loop that may start a timer from another
// goroutine call AfterFuncClose, which hands it to the loop through the
// inbox.
func (e *Loop) AfterFunc(d time.Duration, fn func()) *Timer {
	if !e.OnLoop() {
		panic("executor: AfterFunc called from a goroutine that does not hold the loop; call it inside Submit, or use future.Sleep")
	}
	return e.AfterFuncClose(d, fn, nil)
}

// AfterFuncClose is AfterFunc with a func that is called instead of fn if
// the loop closes before fn runs (future.Sleep fails its future with it),
// nil for none. closed may be called on the loop while it closes, or on the
// calling goroutine if the loop has already closed. It may be called from
// any goroutine: from one that does not hold the loop, the timer is handed
// to the loop through the inbox, runs with the empty frame, and never
// fires if the executor is already closing.
func (e *Loop) AfterFuncClose(d time.Duration, fn, closed func()) *Timer {
	if fn == nil {
		panic("executor: AfterFunc with nil func")
	}
	e.mustMade("AfterFunc")
	t := &Timer{e: e, fn: fn, closed: closed, when: e.now() + int64(d)}
	if e.phase.Load() == phaseClosed {
		t.state.Store(timerStopped) // the timers are gone: it never fires
		t.close()
		return t
	}
	if e.OnLoop() {
		t.fr = e.Cur
		if t.id = e.hooks.newID(e, hooks.KindTimer); t.id != 0 && e.DestroyHooked() {
			TrackDestroy(e, t, t.id)
		}
		e.timersActive.Add(1)
		e.timers.push(t)
		return t
	}
	e.timersActive.Add(1)
	if err := e.submit(item{r: (*timerAdd)(t)}, phaseOpen); err != nil {
		(*timerAdd)(t).Drop()
	}
	return t
}

type timerAdd Timer

// Drop stops a timer handed to the loop that closed before taking it in.
func (t *timerAdd) Drop() {
	tm := (*Timer)(t)
	if tm.state.CompareAndSwap(timerPending, timerStopped) {
		tm.e.timersActive.Add(-1)
		tm.close()
	}
}

func (t *timerAdd) Run() {
	tm := (*Timer)(t)
	if tm.state.Load() == timerPending {
		e := tm.e
		if tm.id = e.hooks.newID(e, hooks.KindTimer); tm.id != 0 && e.DestroyHooked() {
			TrackDestroy(e, tm, tm.id)
		}
		e.timers.push(tm)
	}
}

// Stop: see executor.Timer.Stop.
func (t *Timer) Stop() bool {
	if t.e == nil {
		panic("executor: Stop of a Timer not made by AfterFunc")
	}
	if t.state.CompareAndSwap(timerPending, timerStopped) {
		t.e.timersActive.Add(-1)
		return true
	}
	return false
}

// fireTimers queues the callbacks of the due timers ahead of all other
// queued work, in deadline order.
func (e *Loop) fireTimers() {
	h := &e.timers
	if h.Len() > 64 && int64(h.Len()) > 2*e.timersActive.Load()+16 {
		h.compact()
	}
	t0 := e.now()
	for h.Len() > 0 && h.items[0].when <= t0 {
		t := h.pop()
		if t.state.CompareAndSwap(timerPending, timerFired) {
			e.timersActive.Add(-1)
			e.q.PushUrgent(item{r: (*timerRun)(t), fr: t.fr, id: t.id})
		}
	}
	h.shrink()
}

// stopTimers drops every timer; called when the executor closes.
func (e *Loop) stopTimers() {
	for _, t := range e.timers.items {
		if t.state.CompareAndSwap(timerPending, timerStopped) {
			e.timersActive.Add(-1)
			t.close()
		}
	}
	clear(e.timers.items)
	e.timers.items = nil
}

// timerHeap is a binary min-heap of timers by (when, seq).
type timerHeap struct {
	items []*Timer
	seq   uint64
}

func (h *timerHeap) Len() int { return len(h.items) }

func less(a, b *Timer) bool {
	return a.when < b.when || (a.when == b.when && a.seq < b.seq)
}

func (h *timerHeap) push(t *Timer) {
	h.seq++
	t.seq = h.seq
	h.items = append(h.items, t)
	h.up(len(h.items) - 1)
}

func (h *timerHeap) pop() *Timer {
	n := len(h.items) - 1
	t := h.items[0]
	h.swap(0, n)
	h.items[n] = nil
	h.items = h.items[:n]
	if n > 0 {
		h.down(0)
	}
	return t
}

// next returns how long until the earliest pending timer is due, dropping
// stopped timers from the top.
func (h *timerHeap) next(now int64) (time.Duration, bool) {
	for len(h.items) > 0 && h.items[0].state.Load() != timerPending {
		h.pop()
	}
	h.shrink()
	if len(h.items) == 0 {
		return 0, false
	}
	d := time.Duration(h.items[0].when - now)
	if d < 0 {
		d = 0
	}
	return d, true
}

// minTimerCap is the capacity of the heap's array that shrink leaves alone.
const minTimerCap = 256

// shrink copies the heap into a smaller array once it holds fewer than a
// quarter of its array's capacity: at most one copy per halving of the
// live timers, so the cost is amortised over the pops that emptied it.
func (h *timerHeap) shrink() {
	if c := cap(h.items); c > minTimerCap && len(h.items) < c/4 {
		if len(h.items) == 0 {
			h.items = nil
			return
		}
		h.items = append(make([]*Timer, 0, 2*len(h.items)), h.items...)
	}
}

// compact removes stopped timers and restores the heap order.
func (h *timerHeap) compact() {
	kept := h.items[:0]
	for _, t := range h.items {
		if t.state.Load() == timerPending {
			kept = append(kept, t)
		}
	}
	clear(h.items[len(kept):])
	h.items = kept
	for i := len(kept)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	h.shrink()
}

func (h *timerHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
}

func (h *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !less(h.items[i], h.items[p]) {
			break
		}
		h.swap(i, p)
		i = p
	}
}

func (h *timerHeap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(h.items[r], h.items[l]) {
			m = r
		}
		if !less(h.items[m], h.items[i]) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
