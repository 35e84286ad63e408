package loop

// Closing.
//
// Shutdown drains: the loop runs until its queue is empty, then finishes.
// Close (and a Shutdown whose ctx ends, and Run whose ctx ends) drops: the
// loop finishes at its next batch boundary without running what is queued.
//
// Invariants:
//   - phase moves open -> draining -> closed under mu, and only forward;
//     from closed on, Submit, SubmitRunnable and Schedule refuse work, so
//     finish sees every item that will ever reach the queue;
//   - finish runs on the goroutine that holds the loop. It wakes every
//     suspended task (its ctx is cancelled and its wait returns ErrClosed)
//     and runs the tasks until every body has returned. When dropping, it
//     runs nothing else: every other queued item is dropped, so work that
//     keeps producing work cannot keep Close waiting;
//   - a dropped item that carries a future fails that future with ErrClosed
//     (Dropper), so nothing waiting on the loop is left pending, and items
//     whose loop has closed (Schedule refused them) are dropped the same
//     way, by whichever goroutine hands them over. Drops that cascade
//     (a failed future whose waiters are dropped in turn) run one at a time
//     from the late list, never recursively.

import (
	"context"
	"runtime/debug"
	"time"
)

// Dropper is implemented by a Runnable that must not vanish when its loop
// closes before running it: Drop fails the future it would have completed
// with ErrClosed (or, for an observer callback, calls it with the result).
// Drop may run on any goroutine once the loop has closed.
type Dropper interface {
	Drop()
}

// Close: see executor.Executor.Close. It sets stopReq, which the loop reads
// between batches; neither the loop nor its watchdog (the stall handler)
// can wait for the loop, so there it only begins closing; when nobody runs
// the loop it closes it on the calling goroutine.
func (e *Loop) Close() error {
	e.mustMade("Close")
	e.mu.Lock()
	if e.phase.Load() == phaseOpen {
		e.phase.Store(phaseDraining)
	}
	e.stopReq.Store(true)
	e.signal()
	e.mu.Unlock()
	if e.OnLoop() || e.onWatchdog() {
		return nil // the loop, or its watchdog, cannot wait for itself
	}
	if e.phase.Load() != phaseClosed && e.running.CompareAndSwap(false, true) {
		return e.loop(context.Background(), false, nil) // nobody runs the loop
	}
	<-e.closed
	return nil
}

// Closing reports whether Shutdown or Close has begun.
func (e *Loop) Closing() bool { return e.phase.Load() != phaseOpen }

// Closed: see executor.Executor.Closed.
func (e *Loop) Closed() bool { return e.phase.Load() == phaseClosed }

// Done: see executor.Executor.Done.
func (e *Loop) Done() <-chan struct{} {
	e.mustMade("Done")
	return e.closed
}

// finish closes the loop from the goroutine that holds it; drop says whether
// queued work is dropped (Close) or was drained (Shutdown).
func (e *Loop) finish(drop bool) {
	e.mu.Lock()
	e.phase.Store(phaseClosed)
	in, n := e.inbox.take()
	e.inbox.free, e.inbox.nfree = nil, 0
	e.hasInbox.Store(false)
	e.mu.Unlock()
	e.stopTimers()
	e.fireWatches() // what else owes a result: goroutines, channels, sockets (closewatch.go)
	if e.trimTimer != nil {
		e.trimTimer.Stop()
	}
	if drop {
		e.dropItems(in)
		e.q.each(e.dropItem)
	} else {
		e.q.TakeBlocks(in, n)
	}
	for {
		e.suspended.each(func(f *Fiber) {
			if i, ok := f.body.(Interrupter); ok {
				i.Interrupt(ErrClosed)
			}
		})
		if e.q.Len() == 0 {
			if e.suspended.n == 0 {
				break
			}
			e.suspended.each(func(f *Fiber) { e.q.Push(item{r: f}) })
		}
		if !drop && e.stopReq.Load() {
			drop = true // a Shutdown whose ctx ended while tasks unwound
		}
		if drop {
			e.unwind()
		} else {
			e.runBatch()
		}
	}
	for _, c := range e.idle {
		e.stopCoro(c)
	}
	clear(e.idle)
	e.idle = nil
	e.trim()
	e.publish()
	e.endSession()
	e.dead.Store(true)
	close(e.closed)
}

// unwind runs the queued tasks (fibers) that have started and drops every
// other item, tasks that never started included.
func (e *Loop) unwind() {
	for {
		it, ok := e.q.Pop()
		if !ok {
			return
		}
		if f, isFiber := it.r.(*Fiber); isFiber && f.state != fiberNew {
			e.ran++
			e.Cur, e.curID = it.fr, it.id
			e.runGuarded(f)
			e.Cur, e.curID = nil, 0
			continue
		}
		e.dropItem(it)
	}
}

// dropItems drops the items of a block list taken from the inbox.
func (e *Loop) dropItems(list *block[item]) {
	for c := list; c != nil; c = c.next {
		for _, it := range c.items[:c.n] {
			e.dropItem(it)
		}
		clear(c.items[:c.n])
	}
}

func (e *Loop) dropItem(it item) {
	if f, ok := it.r.(*Fiber); ok {
		if f.state != fiberNew {
			return // woken again while unwinding; it is resumed from suspended
		}
		f.state = fiberDone
		e.Drop(f.body)
		return
	}
	e.Drop(it.r)
}

// Drop disposes of r, which its loop will never run: a Dropper is dropped
// (from the late list, so that cascading drops run one at a time), anything
// else is forgotten. It may be called from any goroutine.
func (e *Loop) Drop(r any) {
	d, ok := r.(Dropper)
	if !ok {
		return
	}
	e.lateMu.Lock()
	e.late = append(e.late, d)
	if e.lateBusy {
		e.lateMu.Unlock()
		return // the goroutine draining the list will drop it
	}
	e.lateBusy = true
	for i := 0; i < len(e.late); i++ {
		d := e.late[i]
		e.late[i] = nil
		e.lateMu.Unlock()
		e.dropGuarded(d)
		e.lateMu.Lock()
	}
	e.late = e.late[:0]
	e.lateBusy = false
	e.lateMu.Unlock()
}

// dropGuarded drops d, reporting a panic (an observer callback's) to the
// panic handler.
func (e *Loop) dropGuarded(d Dropper) {
	defer func() {
		if v := recover(); v != nil {
			e.handlePanic(v, debug.Stack())
		}
	}()
	d.Drop()
}

// trimCap is the capacity (in items) above which an idle loop gives the
// memory of its queue and inbox back.
const trimCap = 1024

// trimIdle is the spell over which the loop watches how many items it has
// to run at once before it gives oversized buffers back.
const trimIdle = 250 * time.Millisecond

// oversized reports whether the queue or the inbox holds buffers beyond
// trimCap. Loop only.
func (e *Loop) oversized() bool {
	return e.bigInbox || e.q.Oversized(trimCap)
}

// idleTrim gives the buffers back, when the loop goes idle, once they have
// stayed small for a spell: over trimIdle, the most items the loop had to
// run at once (spellPeak, see busy) stayed under a quarter of what the
// buffers grew to (and under trimCap/4 at least), whatever the traffic in
// between. A steady stream of bursts keeps its buffers; a burst followed by
// light traffic gives them back. While the spell runs it arms a runtime
// timer, at most one at a time, which wakes the loop to look again. Loop
// only.
func (e *Loop) idleTrim() {
	if !e.oversized() {
		e.spellStart, e.spellPeak = 0, 0
		return
	}
	now := mono()
	if e.spellStart == 0 {
		e.spellStart, e.spellPeak = now, 0 // the spell starts with the burst's end
	}
	if wait := e.spellStart + int64(trimIdle) - now; wait > 0 {
		if !e.trimArmed.Load() {
			e.trimArmed.Store(true)
			if e.trimTimer == nil {
				e.trimTimer = time.AfterFunc(time.Duration(wait), e.trimDue)
			} else {
				e.trimTimer.Reset(time.Duration(wait))
			}
		}
		return
	}
	small := e.spellPeak < max(trimCap/4, e.grown()/4)
	e.spellStart, e.spellPeak = now, 0
	if small {
		e.trim()
	}
}

// grown returns the most items a buffer of the queue or the inbox holds
// room for. Loop only.
func (e *Loop) grown() int {
	q := &e.q
	n := max(q.front.Cap(), q.back.Cap(), q.nused*blockSize)
	if e.bigInbox {
		e.mu.Lock()
		n = max(n, e.inbox.nfree*blockSize)
		e.mu.Unlock()
	}
	return n
}

// busy records that the loop has n items to run at once, for the spell
// that idleTrim watches. Loop only.
func (e *Loop) busy(n int) {
	if n > e.spellPeak {
		e.spellPeak = n
	}
}

// trimDue wakes the loop once a spell has passed.
func (e *Loop) trimDue() {
	e.trimArmed.Store(false)
	e.signal()
}

// trim gives back the memory a burst made the queue and the inbox grow to,
// once they are empty. Loop only.
func (e *Loop) trim() {
	e.q.Trim(trimCap)
	if !e.bigInbox && e.q.nused <= inboxFreeBlocks {
		return // the inbox kept no more than inboxFreeBlocks: no lock needed
	}
	used := e.q.TakeUsed()
	e.mu.Lock()
	e.inbox.recycle(used, unbounded)
	e.inbox.trimFree(inboxFreeBlocks)
	e.bigInbox = false
	e.mu.Unlock()
}
