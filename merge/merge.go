package merge

// The merge's state and who may touch it.
//
// Everything below is loop-owned (read and written only by code that holds
// the executor's loop), except Handle.remote, which is atomic.
//
// Invariants:
//
//  1. m.subs holds exactly the live substreams; h.pos is h's index in m.subs
//     while h is live and -1 once it ended or was removed. Removal swaps the
//     last entry into the hole: O(1).
//  2. h.queued is true exactly while h is in m.ready, and then h is there
//     once. Only wakeLocal (a wake on the loop, and Add) and the re-queue of
//     a substream that just yielded an item push onto m.ready, and both test
//     queued first, so no index is ever queued twice.
//  3. A removed or ended substream is in neither m.subs nor m.ready: removal
//     takes it out of the ready queue at once (a scan of the ready queue, on
//     the removal path only). Its waker may still be called by its stream;
//     wakeLocal then sees pos == -1 and does nothing.
//  4. A wake off the loop never touches loop-owned state: it sets h.remote
//     (false -> true) and hands h to the loop with Executor.Schedule; the
//     loop clears h.remote and then does the wake as if it had been made
//     there. So at most one hand-off per substream is in flight, and a wake
//     that finds remote already set is covered by the hand-off pending.
//  5. PollRecv pops substreams from the front of m.ready and polls only
//     those, at most as many as were queued when it began; a substream that
//     yields an item is pushed at the back again (it may hold more), so
//     ready order is FIFO and no substream can starve another. No path that
//     carries an item looks at more than the substreams it pops.
//  6. m.parent is the waker of the last PollRecv that returned pending. It is
//     cleared when PollRecv begins and when it is woken (one-shot), and it is
//     woken, on the loop, only when m.ready goes from empty to non-empty or
//     the merge ends. PollRecv returns pending only with m.ready empty, or
//     after waking w itself (its budget ran out while substreams kept
//     waking themselves), so a stored parent never misses an item.
//  7. ended is terminal. It is set when the merge is sealed (Merge, or Seal
//     after New) and its last substream goes, or by Close.
//  8. Receivers (Recv, RecvWait, All) wait in m.waiters, served in FIFO order by
//     drain, which runs as a task posted by the drainer waker: a merge with
//     waiters has either a drain posted or the drainer as its parent. An
//     item that could not be handed to its receiver (a Recv cancelled from
//     another goroutine meanwhile) goes to m.stash and is the next one
//     received, so no item is lost. drain never loses the receiver it
//     popped: a substream's panic is recovered by poll and becomes the
//     failure that receiver gets.

import (
	"errors"
	"runtime/debug"
	"sync/atomic"

	"github.com/spindle-rt/spindle/alloc"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/ring"
)

// Stream is a source of items that can be polled without blocking: the
// shape of channel.Chan's PollRecv, and of Merged's own.
//
// PollRecv returns the next item with ok == true, or reports that there is
// none yet with ok == false and err == nil, in which case the stream keeps w
// and calls w.Wake once it may have an item (or has ended), or reports that
// the stream has ended with a non-nil err: an error matching ErrClosed (by
// errors.Is) is a normal end, any other error is a failure.
//
// A stream keeps only the waker of the latest pending poll. The merge polls
// its substreams on the loop; their wakers may be called from any goroutine.
type Stream[T any] interface {
	PollRecv(w executor.Waker) (v T, ok bool, err error)
}

// Merged is the merge of several streams into one: items come out in the
// order their substreams became ready, each substream's own order kept. It
// is itself a Stream, so merges nest.
//
// A Merged is bound to one executor and its methods are loop-only: call them
// from code that holds the loop (a callback or the body of a spawned task).
// The wakers it gives its substreams may be woken from any goroutine.
//
// A Merged has one consumer at a time: a caller of PollRecv, or the
// receivers that Recv, RecvWait and All serve in FIFO order. Mixing the two
// loses wake-ups.
//
// A substream whose PollRecv panics has failed: the merge recovers the
// panic, drops that substream and hands the panic, as a *future.PanicError
// (value and stack), to the receiver the poll was for (PollRecv's error, a
// failed Recv future, RecvWait's error, an error yielded by All), once, like
// any substream's failure; the panic handler is not called. The receivers
// queued behind it, and later ones, get the other substreams' items.
type Merged[T any] struct {
	ex     *executor.Executor
	subs   []*Handle[T]
	ready  ring.Ring[*Handle[T]]
	parent executor.Waker
	open   bool // New: stays open with no substreams until Seal
	ended  bool

	// Receive side: Recv, RecvWait, All.
	waiters     ring.Ring[waiter[T]]
	free        alloc.FreeList[taskWaiter[T]] // nodes for RecvWait and All
	drainPosted bool
	hasStash    bool
	stashV      T
	stashErr    error
}

// Handle is one substream of a Merged, returned by Add. It lets the caller
// remove that substream in O(1).
type Handle[T any] struct {
	m      *Merged[T]
	s      Stream[T]
	pos    int         // index in m.subs; -1 once ended or removed
	queued bool        // in m.ready
	remote atomic.Bool // an off-loop wake is on its way to the loop
}

// subWaker is the waker a Handle gives its stream: the Handle itself, under
// a type whose methods are not part of Handle's API. Converting the pointer
// to the Waker interface allocates nothing, so the waker is allocated once,
// with the Handle, and reused for every poll.
type subWaker[T any] Handle[T]

// subRemote is the Runnable that carries an off-loop wake to the loop.
type subRemote[T any] Handle[T]

// Merge returns the merge of streams, bound to ex. It ends, and then
// PollRecv and Recv fail with ErrClosed, once every stream has ended
// (immediately if there are none). Streams may be added while it has not
// ended (Add) and removed at any time (Handle.Remove, Remove). Merge touches
// only the new merge, so it may be called from any goroutine; the merge is
// then used on the loop.
func Merge[T any](ex *executor.Executor, streams ...Stream[T]) *Merged[T] {
	m := newMerged[T](ex)
	m.subs = make([]*Handle[T], 0, len(streams))
	for _, s := range streams {
		m.add(s)
	}
	if len(m.subs) == 0 {
		m.ended = true
	}
	return m
}

// New returns an empty merge bound to ex that stays open, pending while it
// has no substreams, until Seal is called: a group that grows with Add as
// streams arrive. Like Merge, it may be called from any goroutine.
func New[T any](ex *executor.Executor) *Merged[T] {
	m := newMerged[T](ex)
	m.open = true
	return m
}

func newMerged[T any](ex *executor.Executor) *Merged[T] {
	if ex == nil {
		panic("merge: nil executor")
	}
	return &Merged[T]{ex: ex}
}

// Executor returns the executor the merge is bound to.
func (m *Merged[T]) Executor() *executor.Executor { return m.ex }

// Len returns the number of substreams that have neither ended nor been
// removed. Loop only.
func (m *Merged[T]) Len() int {
	m.mustLoop("Len")
	return len(m.subs)
}

// Ended reports whether the merge has ended: PollRecv and Recv now fail with
// ErrClosed (after any item already taken from a substream). Loop only.
func (m *Merged[T]) Ended() bool {
	m.mustLoop("Ended")
	return m.ended
}

// Add adds s to the merge and returns its handle. s is polled at the next
// PollRecv (it is queued as ready, since its state is unknown); a consumer
// waiting on the merge is woken. It panics if the merge has ended. Loop
// only.
func (m *Merged[T]) Add(s Stream[T]) *Handle[T] {
	m.mustLoop("Add")
	return m.add(s)
}

func (m *Merged[T]) add(s Stream[T]) *Handle[T] {
	if s == nil {
		panic("merge: Add of a nil Stream")
	}
	if m.ended {
		panic("merge: Add after the merge ended")
	}
	h := &Handle[T]{m: m, s: s, pos: len(m.subs)}
	m.subs = append(m.subs, h)
	m.wakeLocal(h)
	return h
}

// Remove removes the live substream whose stream is s (compared with ==, so
// s must be of a comparable type, as pointers are) and reports whether it
// found one. It scans the substreams; Handle.Remove is O(1). Loop only.
func (m *Merged[T]) Remove(s Stream[T]) bool {
	m.mustLoop("Remove")
	for _, h := range m.subs {
		if h.s == s {
			return m.drop(h)
		}
	}
	return false
}

// Seal lets a merge made by New end: from now on it ends once it has no
// substream, at once if it has none now. Streams may still be added until it
// ends. Merge returns merges that are already sealed. Loop only.
func (m *Merged[T]) Seal() {
	m.mustLoop("Seal")
	m.open = false
	if len(m.subs) == 0 && !m.ended {
		m.end()
	}
}

// Close removes every substream and ends the merge: receivers waiting on it
// fail with ErrClosed. The streams themselves are not closed. Loop only.
func (m *Merged[T]) Close() {
	m.mustLoop("Close")
	for _, h := range m.subs {
		h.pos = -1
		h.queued = false
	}
	clear(m.subs)
	m.subs = nil
	m.ready.Clear()
	m.open = false
	if !m.ended {
		m.end()
	}
}

// Remove removes the substream from its merge and reports whether it was
// still part of it (false once it ended or was removed). Its stream may
// still hold the substream's waker; waking it then does nothing. Loop only.
func (h *Handle[T]) Remove() bool {
	h.m.mustLoop("Handle.Remove")
	return h.m.drop(h)
}

// Active reports whether the substream is still part of its merge: it has
// neither ended nor been removed. Loop only.
func (h *Handle[T]) Active() bool { return h.pos >= 0 }

// Stream returns the substream's stream.
func (h *Handle[T]) Stream() Stream[T] { return h.s }

// PollRecv returns the next item of the merge (ok), or reports that none is
// ready (pending: w is woken once one may be), or that the merge has ended
// (ErrClosed), or the error with which one substream failed: that error is
// returned once and that substream is dropped, the others go on. A
// substream whose PollRecv panicked has failed with a *future.PanicError.
//
// It polls only the substreams that were woken, in the order they were
// woken, and never more than were queued when it began: its cost does not
// depend on how many substreams there are. w is kept only when PollRecv
// returns pending and is woken at most once, when a substream wakes or the
// merge ends; a nil w polls without asking to be woken. Loop only.
func (m *Merged[T]) PollRecv(w executor.Waker) (v T, ok bool, err error) {
	if !m.ex.OnLoop() { // mustLoop, written out: it would cost a call
		m.misuse("PollRecv")
	}
	if m.hasStash {
		return m.takeStash()
	}
	if m.ended {
		return v, false, ErrClosed
	}
	m.parent = nil
	// A panic in a substream's PollRecv is that substream's failure: it
	// comes back as a *future.PanicError (value and stack) and the
	// substream is dropped as any failed one is, so the receiver that the
	// poll was for gets the panic and the merge goes on with the others.
	// polling names the substream being polled, and is nil whenever the
	// bookkeeping is between polls.
	var polling *Handle[T]
	defer func() {
		if polling == nil {
			return // the common case pays no recover call
		}
		if p := recover(); p != nil {
			m.drop(polling)
			var zero T
			v, ok, err = zero, false, &future.PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	for n := m.ready.Len(); n > 0; n-- {
		h, _ := m.ready.Pop()
		h.queued = false
		polling = h
		v, ok, err = h.s.PollRecv((*subWaker[T])(h))
		polling = nil
		if ok {
			// It may hold more: poll it again after the ones queued now.
			if !h.queued && h.pos >= 0 {
				h.queued = true
				if !m.ready.TryPush(h) { // the fast path inlines
					m.ready.Push(h)
				}
			}
			return v, true, nil
		}
		if err != nil {
			m.drop(h)
			if !isEnd(err) {
				return v, false, err
			}
			if m.ended {
				return v, false, ErrClosed
			}
		}
	}
	if m.ended {
		return v, false, ErrClosed
	}
	if m.ready.Len() > 0 {
		// The budget ran out while substreams woke themselves as they were
		// polled: ask to be polled again rather than loop here for ever.
		if w != nil {
			w.Wake()
		}
		return v, false, nil
	}
	m.parent = w
	return v, false, nil
}

// isEnd reports whether err, from a substream or the merge, is a normal
// end: it matches ErrClosed and is not a panic (a substream that panicked
// with ErrClosed as the value has failed, and its receiver is told), nor
// the executor's closing (executor.ErrClosed matches ErrClosed too, but
// is no normal end: the receiver is told).
func isEnd(err error) bool {
	if !errors.Is(err, ErrClosed) || errors.Is(err, executor.ErrClosed) {
		return false
	}
	var pe *future.PanicError
	return !errors.As(err, &pe)
}

// Wake queues the substream to be polled. It may be called from any
// goroutine, any number of times: off the loop it hands the wake to the loop.
func (w *subWaker[T]) Wake() {
	h := (*Handle[T])(w)
	m := h.m
	if m.ex.OnLoop() {
		m.wakeLocal(h)
		return
	}
	if h.remote.CompareAndSwap(false, true) {
		if (*loop.Loop)(m.ex).Schedule((*subRemote[T])(h), nil, 0) != nil {
			h.remote.Store(false) // the executor has closed: nobody will poll
		}
	}
}

// Run performs, on the loop, a wake that was made off it.
func (r *subRemote[T]) Run() {
	h := (*Handle[T])(r)
	h.remote.Store(false)
	h.m.wakeLocal(h)
}

// wakeLocal queues h at the back of the ready queue unless it is queued or
// gone, and wakes the parent on the transition from no-ready to ready.
func (m *Merged[T]) wakeLocal(h *Handle[T]) {
	if h.queued || h.pos < 0 {
		return
	}
	h.queued = true
	if !m.ready.TryPush(h) { // the fast path inlines
		m.ready.Push(h)
	}
	if m.ready.Len() == 1 {
		m.wakeParent()
	}
}

func (m *Merged[T]) wakeParent() {
	if p := m.parent; p != nil {
		m.parent = nil
		p.Wake()
	}
}

// drop removes h from every piece of bookkeeping and reports whether it was
// live. The merge ends if it is sealed and h was its last substream.
func (m *Merged[T]) drop(h *Handle[T]) bool {
	i := h.pos
	if i < 0 {
		return false
	}
	last := len(m.subs) - 1
	if i != last {
		m.subs[i] = m.subs[last]
		m.subs[i].pos = i
	}
	m.subs[last] = nil
	m.subs = m.subs[:last]
	h.pos = -1
	if h.queued {
		h.queued = false
		for j := range m.ready.Len() {
			if *m.ready.At(j) == h {
				m.ready.RemoveAt(j)
				break
			}
		}
	}
	if last == 0 && !m.open && !m.ended {
		m.end()
	}
	return true
}

// end marks the merge ended and wakes a consumer waiting on it.
func (m *Merged[T]) end() {
	m.ended = true
	m.wakeParent()
}

func (m *Merged[T]) takeStash() (v T, ok bool, err error) {
	v, err = m.stashV, m.stashErr
	var zero T
	m.stashV, m.stashErr, m.hasStash = zero, nil, false
	return v, err == nil, err
}

func (m *Merged[T]) mustLoop(op string) {
	if !m.ex.OnLoop() {
		m.misuse(op)
	}
}

// misuse panics: op was called from a goroutine that does not hold the loop.
func (m *Merged[T]) misuse(op string) {
	panic("merge: " + op + " called from a goroutine that does not hold the loop; hand it to the loop: use executor.Submit or future.Call")
}
