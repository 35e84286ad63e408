// Package merge merges many streams into one with perfect waking: the cost
// of an item does not depend on how many streams are merged.
//
// # Streams
//
// A [Stream] is anything with a PollRecv method of the shape of
// channel.Chan's: it returns an item, or reports "nothing yet" and keeps the
// executor.Waker it was given to wake it later, or reports that it has ended
// (channel.ErrClosed) or failed (any other error). A *channel.Chan[T] is a
// Stream[T], and so is a *Merged[T], so merges nest.
//
//	a, b := channel.New[Event](ex, 16), channel.New[Event](ex, 16)
//	m := merge.Merge[Event](ex, a, b)
//
// # Receiving
//
// There is one way to receive for each kind of code that runs on the loop:
//
//   - a task started by future.Spawn ranges over All, or calls RecvWait; the
//     task waits in place and nothing is allocated per item;
//   - a callback calls Recv, which returns a future of the next item;
//   - a stream combinator calls PollRecv with its own waker ([Merged] is a
//     Stream).
//
// A consumer task:
//
//	for ev, err := range m.All(ctx) {
//		if err != nil {
//			log.Print(err) // one stream failed; the others go on
//			continue
//		}
//		handle(ev)
//	}
//
// Receivers are served in the order they came; a cancelled Recv, or a task
// whose context ended, takes no item.
//
// # Perfect waking
//
// Every substream has its own waker, allocated once with it and reused for
// every poll. When a substream's waker is woken, the substream is put at
// the back of the merge's ready queue, once (a queued flag keeps it from
// being queued twice). PollRecv takes substreams from the front of that
// queue and polls only those; a substream that yields an item goes to the
// back again, since it may hold more. So an item costs one wake and one or
// two polls, whether 10 or 10,000 streams are merged, and no stream that is
// always ready can starve the others (ready order is FIFO). The consumer's
// waker is stored once and woken only when the merge goes from nothing
// ready to something ready, or ends. docs/merge.md draws the ready queue and
// gives the benchmark figures.
//
// # Growing, shrinking, ending
//
// Merge(ex, streams...) ends once every stream has ended: then PollRecv,
// Recv and RecvWait fail with [ErrClosed] (which is channel.ErrClosed) and All
// stops. [New] returns an open group that waits while it has no stream, for
// streams that arrive over time; Seal lets it end. Add adds a stream to a
// merge that has not ended and returns its [Handle]; Handle.Remove (O(1)) and
// Merged.Remove drop one; Close drops all and ends the merge.
//
// A stream that ends is dropped quietly. A stream that fails is dropped
// too, and its error is delivered once, to the next receiver; the merge goes
// on with the other streams. A stream whose PollRecv panics has failed: the
// next receiver gets the panic as a *future.PanicError.
//
// # Who may call what
//
// A Merged belongs to its executor's loop: every method is loop-only (call
// it from a callback or a task body). Recv, RecvWait, All, Add, Remove, Seal
// and Close panic when called elsewhere; PollRecv, the hot path, does not
// check, and go test -race reports the mistake. [Merge] and New touch only the
// merge they make and may be called anywhere. The wakers the merge hands its streams may be
// woken from any goroutine: a wake off the loop is handed to the loop with
// one task, however many wakes arrive meanwhile.
package merge
