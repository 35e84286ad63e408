// Package semaphore provides a weighted semaphore bound to a spindle
// executor: the way to bound how much of something runs at once (database
// calls, requests to a peer, memory for buffers), written for tasks.
//
//	sem := semaphore.New(ex, 4) // at most 4 at a time
//
//	future.Spawn(ex, func(ctx context.Context) (Row, error) {
//		if err := sem.Acquire(ctx, 1); err != nil {
//			return Row{}, err
//		}
//		defer sem.Release(1)
//		return future.Go(ex, func(ctx context.Context) (Row, error) { return db.Get(ctx, key) }).Await(ctx)
//	})
//
// # Blocking work
//
// A slot held by Acquire and defer Release is given back when the task
// returns, which may be long before the blocking call it made does: a
// WithTimeout (or Timeout, or ctx) that gives up on a future.Go call lets
// the task go, while the call itself runs on until it notices its ctx.
// The next task then takes the slot, and more calls run at once than the
// semaphore allows. Go holds the units until the function really returns:
//
//	row, err := future.WithTimeout(semaphore.Go(ctx, sem, 1, query), 50*time.Millisecond).Await(ctx)
//
// # Waiting
//
// Acquire waits the way future.Future.Await does. In a task started by
// future.Spawn, or a function of a future.Group, it suspends the task by a
// coroutine switch and lends the loop to other work; on any other goroutine
// it parks that goroutine; on the loop outside a task (a callback) it cannot
// wait, and returns future.ErrDeadlock when the units are not free. Every
// method may be called from any goroutine.
//
// # Fairness
//
// Requests are served in the order they came, with no barging: while any
// request waits, TryAcquire fails and a new Acquire queues behind it, even
// if enough units are free for the newcomer. A large request at the head
// holds back smaller ones behind it until its units are free; this is what
// keeps large requests from starving. A request larger than the semaphore's
// size fails at once with ErrTooLarge.
//
// # Giving up
//
// An Acquire whose ctx ends returns ctx.Err(), holds no units and leaves
// nothing behind: its entry is unlinked from the queue at once, so a million
// abandoned Acquires cost no memory once they have returned, and the
// requests behind one that gave up move up (and are granted, if their units
// are free). A request whose ctx ends as its units are handed to it (a
// fatal error cancels every waiter in the same turn as a holder releases)
// gives them back and returns ctx.Err(), as x/sync's Weighted does: after
// a cancellation no queued request starts its work. Once the executor has closed, waiting requests are released
// with executor.ErrClosed and later Acquires fail with it; TryAcquire and
// Release go on counting units.
//
// This is golang.org/x/sync/semaphore.Weighted for loops, with two
// differences: a request larger than the size fails at once instead of
// waiting for its ctx, and units that are free are taken even if ctx has
// already ended.
package semaphore
