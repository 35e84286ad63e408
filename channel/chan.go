package channel

// The channel's state and the rules every operation keeps.
//
// All of a Chan's state is loop-owned: only code that holds the loop of its
// executor (a callback, a task body) reads or writes it, so nothing here is
// locked. The one thing another goroutine can do to a channel's waiters is
// Future.Cancel on a pending Send, Recv or SelectFuture future; the
// future's own atomic completion arbitrates that race (see claims below).
//
// Invariants (c is a Chan, "live" is defined below):
//
//   - buf holds at most cap items, in FIFO order; cap == 0 (rendezvous)
//     keeps buf empty for ever.
//   - If recvq holds a live waiter, buf is empty and sendq holds no live
//     waiter; if sendq holds a live waiter, buf is full (len == cap) and
//     recvq holds no live waiter. The one exception is a single select that
//     has a receive case and a send case on the same channel: its two
//     entries may sit in both queues, and only one of them can be claimed.
//   - Waiters are served in the order they were queued: every queue is a
//     FIFO ring; an operation that arrives pops the front.
//   - Once closed is set, both queues are empty and stay empty: Close fails
//     every live waiter with ErrClosed, and no operation queues a waiter on
//     a closed channel. Items already in buf stay receivable.
//   - A waiter is claimed at most once, and an item moves exactly when a
//     claim succeeds. A claim is the completion of the waiter's promise
//     (Send, Recv and SelectFuture waiters: atomic, so it is decided against
//     a concurrent Cancel), or, for a task waiting in place (SendWait,
//     RecvWait, Select), the switch of a loop-owned state from waiting to
//     matched while the task's context has not ended. A sender's value is
//     copied before its claim; when the claim fails the value stays with the
//     operation that tried it, which moves on to the next waiter.
//   - A waiter is live while it can still be claimed. Withdrawn waiters
//     (cancelled futures, tasks whose context ended, the losing cases of a
//     select) are dead; they are dropped when they reach the front of their
//     queue and swept when a queue has doubled since its last sweep, so a
//     queue holds at most about twice its live waiters.
//   - poll holds the waker of the last PollRecv that found nothing; it is
//     cleared and woken once, after the state is consistent, when an item
//     becomes receivable with no waiter to take it (an item is buffered or
//     a sender queues) and when the channel closes.
//   - futures counts the queue entries that carry a future (a pending Send,
//     Recv or SelectFuture, live or dead): it is incremented when one is
//     queued and decremented when one leaves a queue (popped, swept, or
//     failed by Close). While it is above zero the channel is held by its
//     loop's close path (loop.Hold on hold), so that when the executor
//     closes every such future fails with executor.ErrClosed and its
//     OnComplete callbacks run. A channel whose count is zero is not kept
//     alive by its loop past the current batch of tasks: after its first
//     pending future it keeps a slot in the loop's hold table, which refers
//     to it weakly, pins it (strongly) while it is held and until the
//     batch boundary after its release, and is dropped once the channel is
//     gone; so futures that come and go within a batch cost a flag each.
//   - A task waiter node (taskWait) is in at most one queue entry; a node
//     whose claim succeeded has been popped, and once its task has read the
//     result it goes back to the channel's free list, or, in a range over
//     All, waits again for the same task until the range ends; a withdrawn
//     node may still sit in a queue and is never reused.

import (
	"strconv"

	"github.com/spindle-rt/spindle/alloc"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/ring"
)

// ErrClosed is the error of a Send (and SendWait, and a select's send case)
// on a closed channel, and of a Recv (RecvWait, PollRecv, a select's receive
// case) on a channel that is closed and drained. Pending senders and
// receivers fail with it when the channel closes.
//
// When the channel's executor closes, its operations fail with
// executor.ErrClosed instead, which matches ErrClosed:
// errors.Is(err, channel.ErrClosed) is true for both, so a receive loop
// that stops on a closed channel stops on a closed executor too. Test
// errors.Is(err, executor.ErrClosed) first to tell the two apart; a closed
// channel does not match executor.ErrClosed.
var ErrClosed = loop.ErrChanClosed

// Chan is an asynchronous channel bound to one executor: a FIFO of items
// between senders and receivers that run on that executor's loop. With
// capacity 0 it is a rendezvous channel (a send completes only when a
// receiver takes the item); with capacity N it buffers up to N items.
//
// Every method except Cap and Executor is loop-only: call it from code that
// holds the executor's loop (a callback, a continuation, the body of a task
// started by future.Spawn). From any other goroutine the methods panic.
// The futures they return may be awaited and cancelled from anywhere.
// Make a channel with New; the zero value is not usable (its methods
// panic with a message that says so).
type Chan[T any] struct {
	ex     *executor.Executor
	cap    int
	closed bool
	buf    ring.Ring[T]
	sendq  waitq[T]
	recvq  waitq[T]
	poll   executor.Waker
	free   alloc.FreeList[taskWait[T]] // task waiter nodes, recycled (loop-owned)

	futures int            // queued entries that carry a future (see the invariants)
	hold    loop.CloseHold // held while futures > 0

	sent       *future.Future[struct{}] // shared, resolved: a Send that completed at once
	sendClosed *future.Future[struct{}] // shared, failed with ErrClosed
	recvClosed *future.Future[T]        // shared, failed with ErrClosed
}

// New returns a channel of capacity items bound to ex; capacity 0 makes a
// rendezvous channel. The buffer is allocated up front, as make(chan T,
// capacity) does. New panics if ex is nil or capacity is negative. It may
// be called from any goroutine.
func New[T any](ex *executor.Executor, capacity int) *Chan[T] {
	if ex == nil {
		panic("channel: New with nil executor")
	}
	if capacity < 0 {
		panic("channel: New with negative capacity " + strconv.Itoa(capacity))
	}
	c := &Chan[T]{ex: ex, cap: capacity}
	// Size the buffer now, as make(chan T, capacity) does, so that sends
	// never allocate.
	var zero T
	for range capacity {
		c.buf.Push(zero)
	}
	c.buf.Clear()
	return c
}

// Executor returns the executor the channel is bound to. It may be called
// from any goroutine.
func (c *Chan[T]) Executor() *executor.Executor {
	if c == nil {
		panic("channel: Executor of a nil channel")
	}
	if c.ex == nil {
		c.misuse("Executor")
	}
	return c.ex
}

// Cap returns the channel's capacity (0 for a rendezvous channel). It may
// be called from any goroutine.
func (c *Chan[T]) Cap() int {
	if c == nil {
		panic("channel: Cap of a nil channel")
	}
	return c.cap
}

// Len returns the number of buffered items. Loop only.
func (c *Chan[T]) Len() int {
	c.mustLoop("Len")
	return c.buf.Len()
}

// Closed reports whether Close has been called. Buffered items may still be
// receivable. Loop only.
func (c *Chan[T]) Closed() bool {
	c.mustLoop("Closed")
	return c.closed
}

// Send offers v to the channel and returns a future resolved once the
// channel has taken it: at once when a receiver is waiting or the buffer
// has room, otherwise when a receiver takes v. An immediate Send returns an
// already-resolved future that the channel shares between such calls, so it
// costs no allocation. On a closed channel the future has failed with
// ErrClosed; a pending Send fails with ErrClosed if the channel closes
// first. Cancelling the future (Future.Cancel) withdraws the send: v is
// then never received. Loop only.
func (c *Chan[T]) Send(v T) *future.Future[struct{}] {
	if c == nil || c.ex == nil || !c.ex.OnLoop() {
		c.misuse("Send")
	}
	if c.closed {
		return c.failedSend()
	}
	if c.trySend(v) {
		return c.sentFuture()
	}
	if c.ex.Closed() {
		return future.Failed[struct{}](c.ex, executor.ErrClosed)
	}
	p := future.NewPromise[struct{}](c.ex)
	c.sendq.push(c, waiter[T]{val: v, ref: p, kind: kindSendFuture})
	c.futureQueued()
	c.wakePoller()
	return p.Future()
}

// Recv returns a future of the next item: already resolved when an item is
// buffered or a sender is waiting, otherwise resolved when one arrives. On
// a closed and drained channel the future has failed with ErrClosed; a
// pending Recv fails with ErrClosed if the channel closes first.
// Cancelling the future withdraws the receive: it then takes no item.
// Loop only.
func (c *Chan[T]) Recv() *future.Future[T] {
	if c == nil || c.ex == nil || !c.ex.OnLoop() {
		c.misuse("Recv")
	}
	if v, ok := c.tryRecv(); ok {
		return future.Resolved(c.ex, v)
	}
	if c.closed {
		return c.failedRecv()
	}
	if c.ex.Closed() {
		return future.Failed[T](c.ex, executor.ErrClosed)
	}
	p := future.NewPromise[T](c.ex)
	c.recvq.push(c, waiter[T]{ref: p, kind: kindRecvFuture})
	c.futureQueued()
	return p.Future()
}

// TrySend hands v to a waiting receiver or buffers it if it can do so at
// once, and reports whether it did. It never waits and never allocates. It
// returns false on a full or closed channel; a rendezvous channel takes v
// only if a receiver is waiting (a pending PollRecv is not a waiting
// receiver). Loop only.
func (c *Chan[T]) TrySend(v T) bool {
	if c == nil || c.ex == nil || !c.ex.OnLoop() {
		c.misuse("TrySend")
	}
	if c.closed {
		return false
	}
	return c.trySend(v)
}

// TryRecv takes the next item if one is buffered or a sender is waiting,
// and reports whether it did. It never waits and never allocates. Loop only.
func (c *Chan[T]) TryRecv() (T, bool) {
	if c == nil || c.ex == nil || !c.ex.OnLoop() {
		c.misuse("TryRecv")
	}
	return c.tryRecv()
}

// PollRecv is the poll form of Recv, for stream combinators such as
// merge.Merge. It returns the next item with ok set when one is receivable;
// (zero, false, ErrClosed) once the channel is closed and drained; and
// (zero, false, nil) when nothing is receivable yet, in which case w is
// woken (once) when an item becomes receivable or the channel closes, and
// the caller polls again.
//
// The channel keeps one waker slot, for its one poll consumer: a pending
// poll stores w in it (replacing the waker of an earlier poll, which is no
// longer woken) without allocating. w must not be nil. Wake is called on
// the loop. Loop only.
func (c *Chan[T]) PollRecv(w executor.Waker) (v T, ok bool, err error) {
	if c == nil || c.ex == nil || !c.ex.OnLoop() {
		c.misuse("PollRecv")
	}
	if w == nil {
		panic("channel: PollRecv with nil Waker")
	}
	if v, ok = c.tryRecv(); ok {
		return v, true, nil
	}
	if c.closed {
		return v, false, ErrClosed
	}
	c.poll = w
	return v, false, nil
}

// Close closes the channel: later sends fail with ErrClosed, items already
// buffered stay receivable, pending senders and receivers (futures, tasks,
// selects) fail with ErrClosed, and a pending PollRecv is woken. Receives
// fail with ErrClosed once the buffer is drained. Closing a closed channel
// does nothing. Loop only.
func (c *Chan[T]) Close() {
	c.mustLoop("Close")
	if c.closed {
		return
	}
	c.closed = true
	var zero T
	for {
		w, ok := c.recvq.Pop()
		if !ok {
			break
		}
		c.deliver(&w, zero, ErrClosed)
	}
	for {
		w, ok := c.sendq.Pop()
		if !ok {
			break
		}
		c.claimSender(&w, ErrClosed)
	}
	c.wakePoller()
}

// mustLoop checks that c is usable by the caller: not nil, and called from
// code that holds the loop. The compiler does not inline it (with the
// inlined OnLoop its body is over the inliner's budget), so the hot
// operations (Send, Recv, their Try forms, PollRecv and the waits) write
// its test out and call misuse, saving a call each.
func (c *Chan[T]) mustLoop(op string) {
	if c == nil || c.ex == nil || !c.ex.OnLoop() {
		c.misuse(op)
	}
}

// misuse panics with the reason c cannot be used by the caller.
func (c *Chan[T]) misuse(op string) {
	if c == nil {
		panic("channel: " + op + " on a nil channel")
	}
	if c.ex == nil {
		panic("channel: " + op + " on a Chan not made by New")
	}
	panic("channel: " + op + " called from a goroutine that does not hold the loop of executor " + strconv.Quote(c.ex.Name()) + "; hand it to the loop: use executor.Submit or future.Call")
}

// trySend completes a send of v at once if it can: to the first live
// receiver, else into the buffer. c is not closed.
func (c *Chan[T]) trySend(v T) bool {
	for c.recvq.Len() > 0 {
		w, _ := c.recvq.Pop()
		if c.deliver(&w, v, nil) {
			return true
		}
	}
	if c.buf.Len() < c.cap {
		if !c.buf.TryPush(v) { // the fast path inlines; Push grows the buffer
			c.buf.Push(v)
		}
		c.wakePoller()
		return true
	}
	return false
}

// tryRecv takes the next receivable item: the front of the buffer (which is
// then refilled from the first live sender) or, with the buffer empty, the
// item of the first live sender.
func (c *Chan[T]) tryRecv() (v T, ok bool) {
	if c.buf.Len() > 0 {
		v, _ = c.buf.Pop()
		for c.sendq.Len() > 0 {
			w, _ := c.sendq.Pop()
			if c.claimSender(&w, nil) {
				c.buf.Push(w.val)
				break
			}
		}
		return v, true
	}
	for c.sendq.Len() > 0 {
		w, _ := c.sendq.Pop()
		if c.claimSender(&w, nil) {
			return w.val, true
		}
	}
	return v, false
}

// wakePoller wakes and clears the pending poll's waker, if any.
func (c *Chan[T]) wakePoller() {
	if w := c.poll; w != nil {
		c.poll = nil
		w.Wake()
	}
}

func (c *Chan[T]) sentFuture() *future.Future[struct{}] {
	if c.sent == nil {
		c.sent = future.Resolved(c.ex, struct{}{})
	}
	return c.sent
}

func (c *Chan[T]) failedSend() *future.Future[struct{}] {
	if c.sendClosed == nil {
		c.sendClosed = future.Failed[struct{}](c.ex, ErrClosed)
	}
	return c.sendClosed
}

func (c *Chan[T]) failedRecv() *future.Future[T] {
	if c.recvClosed == nil {
		c.recvClosed = future.Failed[T](c.ex, ErrClosed)
	}
	return c.recvClosed
}

// waitKind says what a queued waiter is.
type waitKind uint8

const (
	kindSendFuture waitKind = iota + 1 // a pending Send; ref: *future.Promise[struct{}]
	kindRecvFuture                     // a pending Recv; ref: *future.Promise[T]
	kindTask                           // a task in SendWait or RecvWait; ref: *taskWait[T]
	kindSelect                         // a case of a pending select; ref: *selector, idx: the case
)

// waiter is one entry of a wait queue. It is stored by value in the ring,
// so queuing a waiter allocates nothing beyond what the operation needs
// anyway (the promise of a Send or Recv future). It is kept small, with one
// untyped reference whose type the kind gives, because the ring copies it
// with write barriers while the garbage collector runs.
type waiter[T any] struct {
	val  T   // a sender's item
	ref  any // see waitKind
	kind waitKind
	idx  int32 // kindSelect: the case's index in the select
}

func (w *waiter[T]) sendPromise() *future.Promise[struct{}] {
	return w.ref.(*future.Promise[struct{}])
}

func (w *waiter[T]) recvPromise() *future.Promise[T] { return w.ref.(*future.Promise[T]) }

func (w *waiter[T]) task() *taskWait[T] { return w.ref.(*taskWait[T]) }

func (w *waiter[T]) sel() *selector { return w.ref.(*selector) }

// live reports whether w can still be claimed.
func (w *waiter[T]) live() bool {
	switch w.kind {
	case kindSendFuture:
		return !w.sendPromise().Future().Ready()
	case kindRecvFuture:
		return !w.recvPromise().Future().Ready()
	case kindTask:
		return w.task().Claimable()
	case kindSelect:
		return w.sel().claimable()
	}
	return false
}

// deliver claims receiver w and completes it with v, or with err when err
// is not nil. It returns false, moving nothing, if w is dead.
func (c *Chan[T]) deliver(w *waiter[T], v T, err error) bool {
	switch w.kind {
	case kindRecvFuture:
		c.futureLeft()
		return w.recvPromise().Complete(v, err)
	case kindTask:
		tw := w.task()
		if !tw.Claimable() {
			return false
		}
		tw.val, tw.err = v, err
		tw.Fire()
		return true
	case kindSelect:
		s := w.sel()
		if s.p != nil {
			c.futureLeft()
		}
		if !s.claimable() {
			return false
		}
		// Written before the claim so that whoever sees the select's
		// future complete sees the item; a failed claim (a concurrent
		// Cancel) leaves it in a case of a cancelled select.
		rc := s.cases[w.idx].(*RecvCase[T])
		rc.val, rc.err = v, err
		return s.fire(int(w.idx))
	}
	return false
}

// claimSender claims sender w: with err nil its item (w.val) is taken,
// otherwise the send fails with err. It returns false if w is dead.
func (c *Chan[T]) claimSender(w *waiter[T], err error) bool {
	switch w.kind {
	case kindSendFuture:
		c.futureLeft()
		return w.sendPromise().Complete(struct{}{}, err)
	case kindTask:
		tw := w.task()
		if !tw.Claimable() {
			return false
		}
		tw.err = err
		tw.Fire()
		return true
	case kindSelect:
		s := w.sel()
		if s.p != nil {
			c.futureLeft()
		}
		if !s.claimable() {
			return false
		}
		s.cases[w.idx].base().err = err
		return s.fire(int(w.idx))
	}
	return false
}

// carriesFuture reports whether w is the entry of a pending future.
func (w *waiter[T]) carriesFuture() bool {
	switch w.kind {
	case kindSendFuture, kindRecvFuture:
		return true
	case kindSelect:
		return w.sel().p != nil
	}
	return false
}

// futureQueued counts an entry that carries a future, which was just
// queued, and has the loop's close path hold the channel for the first
// one. The caller has checked that the executor is not closed, so the
// Hold is accepted.
func (c *Chan[T]) futureQueued() {
	c.futures++
	if c.futures == 1 {
		(*loop.Loop)(c.ex).Hold(&c.hold, (*closeWatch[T])(c))
	}
}

// futureLeft counts an entry that carries a future leaving its queue, and
// releases the channel after the last one.
func (c *Chan[T]) futureLeft() {
	c.futures--
	if c.futures == 0 {
		(*loop.Loop)(c.ex).Release(&c.hold)
	}
}

// closeWatch is the channel as its loop's close path sees it.
type closeWatch[T any] Chan[T]

// Interrupt fails every pending future of the channel with err
// (executor.ErrClosed): the executor is closing, on the loop. Tasks that
// wait in place are resumed with it by their own tasks' close path; their
// entries are dropped here too, since nothing can claim them any more.
func (w *closeWatch[T]) Interrupt(err error) {
	c := (*Chan[T])(w)
	var zero T
	for _, q := range []*waitq[T]{&c.recvq, &c.sendq} {
		for {
			e, ok := q.Pop()
			if !ok {
				break
			}
			switch e.kind {
			case kindRecvFuture:
				e.recvPromise().Complete(zero, err)
			case kindSendFuture:
				e.sendPromise().Complete(struct{}{}, err)
			case kindSelect:
				if p := e.sel().p; p != nil {
					p.Reject(err)
				}
			}
		}
		q.Trim(0)
	}
	c.futures = 0
}

// waitq is a FIFO of waiters that sweeps out its dead entries whenever it
// has doubled since the last sweep, and whenever about half of its entries
// are tasks that gave up (withdrawn), so that waiters that give up together
// on a quiet channel leave nothing behind. A sweep that leaves the ring
// mostly empty gives its memory back.
type waitq[T any] struct {
	ring.Ring[waiter[T]]
	limit int
	dead  int // entries of tasks that withdrew since the last sweep (some may have been popped)
}

const minSweep = 64

func (q *waitq[T]) push(c *Chan[T], w waiter[T]) {
	if q.Len() >= q.limit {
		q.sweep(c)
	}
	q.Push(w)
}

// withdrawn notes that the task of one of q's entries gave up, and sweeps
// once about half of the entries are dead. Amortised O(1): a sweep of n
// entries follows n/2 withdrawals.
func (q *waitq[T]) withdrawn(c *Chan[T]) {
	q.dead++
	if 2*q.dead >= q.Len() {
		q.sweep(c)
	}
}

// sweep drops the dead entries, keeping the order of the live ones, and
// gives the ring's memory back when the live ones fill under a quarter of
// it.
func (q *waitq[T]) sweep(c *Chan[T]) {
	for n := q.Len(); n > 0; n-- {
		w, _ := q.Pop()
		if w.live() {
			q.Push(w)
		} else if w.carriesFuture() {
			c.futureLeft()
		}
	}
	q.dead = 0
	q.limit = max(2*q.Len(), minSweep)
	if n := q.Len(); n == 0 {
		q.Trim(0)
	} else if q.Cap() > minSweep && 4*n < q.Cap() {
		var fresh ring.Ring[waiter[T]]
		for range n {
			w, _ := q.Pop()
			fresh.Push(w)
		}
		q.Ring = fresh
	}
}
