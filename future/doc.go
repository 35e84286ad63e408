// Package future provides futures and promises bound to a spindle executor,
// with two ways to consume them: callbacks ([Then], [Transform], OnComplete) that
// run on the executor's loop, and Await, which suspends a spawned task or
// parks a foreign goroutine.
//
// # Futures and promises
//
// A [Promise] completes its [Future] once, with a value (Resolve), an error
// (Reject) or either (Complete); Cancel completes a pending future with
// context.Canceled and runs its OnCancel callbacks. Every method may be
// called from any goroutine; callbacks always run on the loop, never before
// the call that registered them returns, and in the order they were
// registered.
//
//	p := future.NewPromise[int](ex)
//	doubled := future.Then(p.Future(), func(v int) (int, error) { return 2 * v, nil })
//	p.Resolve(21)
//
// Then is a function, not a method, because a Go method cannot introduce the
// type parameter of its result. A failed future skips Then's callback and
// passes its error on at the cost of a value; Transform sees both outcomes.
// A panic in a callback fails the derived future with a *PanicError that
// carries the value and the stack.
//
// # Tasks
//
// [Spawn] runs straight-line Go as a task on the loop. Inside it, Await on a
// pending future suspends the task and lends the loop to other work; the task
// resumes on the loop when the future completes. Suspending and resuming is
// a coroutine switch between the loop goroutine and the task's goroutine, and
// task goroutines are pooled. A task body holds the loop while it runs, so it
// needs no locks for loop-owned state, and it should not block on anything but
// Await (a blocking call stops the whole loop).
//
//	total := future.Spawn(ex, func(ctx context.Context) (int, error) {
//		a, err := fetchA(ex).Await(ctx)
//		if err != nil {
//			return 0, err
//		}
//		b, err := fetchB(ex).Await(ctx)
//		return a + b, err
//	})
//
// The task's ctx is cancelled when its future is cancelled or the executor
// closes; a suspended task then resumes with the error. [Yield] lets other work
// run in the middle of a long task. [SpawnErr] spawns a task that has only an
// error to give (a future of struct{}).
//
// Use Then for short transformations (one allocation and one queued task per
// link); use Spawn and Await for logic with several steps, branches and
// loops (one allocation per task and a coroutine switch per suspension).
//
// # Await elsewhere
//
// From a goroutine that does not hold the loop, Await parks until the future
// completes, its ctx ends, or the executor closes (executor.ErrClosed). On the
// loop goroutine itself, outside a task, Await on a pending future returns
// [ErrDeadlock] instead of hanging. [Call] hands a function to the loop from any
// goroutine and returns the future of its result; [Do] runs it and waits for
// the result without a future, the round trip of a service's handler.
//
// Do and [CallContext] run the function under the async-local values that
// their ctx carries (hooks.Storage's WithValue): a request id that a
// middleware put in the request's context reaches the loop code of that
// request and everything it registers, and hooks.LogHandler adds it to the
// records that code logs. A task's ctx (Spawn) and fn's ctx in [Go] carry
// the values of their caller the other way, to code that takes a context.
//
// # Combinators
//
// [All], [AllSettled], [Race] and [Any] combine futures of one executor. Results keep
// input order; All fails fast and Race and Any cancel the rest; Any joins all
// errors if none succeeds. Inputs that are already complete are folded in at
// once, so a combinator of completed futures is complete when it returns.
//
// Combinators of no futures are complete at once and never panic: All and
// AllSettled resolve with an empty slice, and Race and Any fail with
// [ErrNoFutures] (a Race that stayed pending for ever, as JavaScript's
// Promise.race([]) does, would hold whoever waits on it). Having no input
// to take an executor from, such a future is bound to the loop the caller
// holds (a callback or task body); made off any loop it is bound to none:
// Ready, Peek and Await answer at once, Cancel reports false, and Then,
// Transform, OnComplete and Timeout panic, since no loop could run them.
//
// # Blocking work, deadlines and groups
//
// [Go] runs a blocking function on a goroutine of its own and completes its
// future on the loop; cancelling the future or closing the executor ends
// the function's ctx and fails the future at once. [GoContext] derives the
// function's ctx from the caller's (a request's, a task's), so its values,
// its deadline and its end reach the function. [Timeout] bounds the wait
// for a future without cancelling it ([ErrTimeout] matches
// context.DeadlineExceeded); [WithTimeout] is the form that also cancels
// the future, and the work behind it, once the time is up. A [Group] runs
// tasks with an optional limit and waits for them together, errgroup-style:
// the first error cancels the rest and is what Wait returns, and functions
// that have not started by then never do.
//
// Two names mean different things here: the function Go runs a goroutine,
// off the loop, for code that blocks; the method [Group.Go] runs a task, a
// spawned task on the loop like [Spawn]'s, which suspends rather than
// blocks. And a future.Group (tasks of one executor, waited for together)
// is not a shard.Group (package shard: one executor per core). Wait, like a semaphore's Acquire (package
// semaphore), waits as Await does. docs/tasks.md shows the common patterns.
package future
