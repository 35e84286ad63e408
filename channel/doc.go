// Package channel provides asynchronous channels bound to one spindle
// executor: FIFO queues of items between senders and receivers that all run
// on that executor's loop, so a hand-off never goes through the Go
// scheduler and never takes a lock.
//
// # Making a channel
//
//	c := channel.New[int](ex, 0)  // rendezvous: a send completes when a receiver takes the item
//	b := channel.New[int](ex, 16) // buffered: up to 16 items wait in the channel
//
// [New] panics on a nil executor or a negative capacity. A nil *Chan panics
// with a message that starts with "channel: " on every method.
//
// # Who may call what
//
// A channel's state belongs to its executor's loop. Every operation except
// Cap and Executor is loop-only: call it from code that holds the loop (a
// Post, Submit or future callback, or the body of a task started by
// future.Spawn). Called from any other goroutine the operations panic. The
// futures they return follow the future package's rules: they may be
// awaited and cancelled from any goroutine.
//
// # Four ways to send and receive
//
//   - Futures, for callbacks: Send returns a *future.Future[struct{}] and
//     Recv a *future.Future[T]. When the operation can complete at once the
//     future is already complete and awaiting it in a task does not suspend:
//     an immediate Send returns a resolved future that the channel shares,
//     so it allocates nothing; an immediate Recv allocates only the
//     future that carries the item. Combinators (future.All, ...) of
//     completed futures complete at once too.
//   - Non-blocking: TrySend and TryRecv complete at once or report that
//     they could not, and never allocate.
//   - In place, for tasks: SendWait and RecvWait wait inside a task body
//     without allocating a future: the task is the waiter, and a hand-off
//     costs one coroutine switch. All ranges over the items until the
//     channel is closed and drained (see below).
//   - Polling, for stream combinators: PollRecv returns an item or
//     registers an executor.Waker that is woken when one may be there. The
//     channel keeps a single waker slot, reused without allocating.
//
// A consumer task is a range loop:
//
//	for v := range c.All(ctx) {
//		use(v)
//	}
//
// Waiting senders and receivers are served in FIFO order, whichever of the
// forms above they used.
//
// # Close and cancel lose nothing
//
// Close stops further sends (they fail with [ErrClosed], a Send's future
// included; TrySend returns false). Items already buffered stay receivable;
// receives fail with ErrClosed once the channel is drained. Senders and
// receivers still waiting when the channel closes fail with ErrClosed, so a
// sender always learns whether its item was taken.
//
// A pending operation can be withdrawn: cancelling a Send or Recv future
// (Future.Cancel, from any goroutine) or ending the context of a task in
// SendWait, RecvWait or Select. A withdrawn operation moves no item: the
// cancelled sender's item is never received, and the item a cancelled
// receiver would have got goes to the next receiver. The cancel and the
// hand-off are decided atomically, so exactly one of them happens. When the
// executor closes, tasks waiting in place return executor.ErrClosed without
// having moved an item (unless the hand-off had already happened, which then
// wins), and pending Send, Recv and SelectFuture futures fail with
// executor.ErrClosed and their OnComplete callbacks run, even if nothing
// else refers to the channel: the executor keeps a channel alive while it
// has pending futures, and lets it go at the end of the batch of tasks in
// which its last one completed.
//
// # [Select]
//
// A select offers several operations, receives from any number of channels
// and sends to any, and performs exactly one: the others move nothing, so
// racing channel operations lose no item. Cases are made by Chan.RecvCase
// and Chan.SendCase and hold their outcome:
//
//	in, quit := jobs.RecvCase(), stop.RecvCase()
//	switch i, err := channel.Select(ctx, in, quit); {
//	case err != nil:
//		return err // ErrClosed, or ctx's error with i == -1
//	case i == 0:
//		handle(in.Value())
//	case i == 1:
//		return nil
//	}
//
// Select waits in place in a task; [SelectFuture] returns a future of the
// chosen index for callbacks (cancelling it withdraws every case);
// [TrySelect] never waits. When several cases can complete at once, the first
// in argument order does.
//
// # Errors
//
// Misuse panics with a message that starts with "channel: " (a nil channel
// or executor, a negative capacity, a loop-only call off the loop, a task
// operation outside a task). Failures of operations are errors: ErrClosed,
// a context's error, executor.ErrClosed. executor.ErrClosed matches
// ErrClosed (errors.Is), so a loop that ends on a closed channel ends when
// the executor closes too; the converse does not hold:
//
//	for {
//		v, err := c.RecvWait(ctx)
//		if errors.Is(err, channel.ErrClosed) {
//			return nil // the channel, or its executor, has closed
//		}
//		...
//	}
package channel
