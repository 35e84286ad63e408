// Package hooks defines the lifecycle hooks of spindle's asynchronous
// resources and async-local storage: values that follow a request through
// callbacks, timers and tasks without being passed along by hand.
//
// The package is a leaf: it does not import the executor. [Storage] takes a
// small interface, [Loop], that *executor.Executor implements, and hooks are
// registered with executor.WithHooks or Executor.AddHooks.
//
// # Async-local storage
//
// A Storage holds one value per logical flow. Run binds a value for the
// duration of a function; whatever that function schedules (Then and
// Transform callbacks, OnComplete, timers, spawned tasks across their
// suspensions, Post, Submit and future.Call made from the loop), and
// whatever those schedule in turn, sees the value when it runs. Get reads it:
//
//	var requestID = hooks.NewStorage[string]()
//
//	// in a callback on the loop, for each incoming request:
//	requestID.Run(ex, req.ID, func() {
//		f := future.Call(ex, lookUpUser)
//		future.Then(f, func(u User) (Page, error) {
//			id, _ := requestID.Get(ex) // req.ID, whatever ran in between
//			return render(id, u)
//		})
//	})
//
// How it works: the loop has a current frame, an immutable list of
// (storage, value) bindings. Each continuation captures the frame pointer
// when it is registered and the loop makes it current while the continuation
// runs, so carrying the context costs one pointer per continuation and
// nothing else. Run makes a new frame (copy on write: the old one is
// shared, not copied) and restores the previous frame when it returns; Get is
// a walk over the bindings, one per storage in use. Storage does not depend
// on hooks and works with none registered. This is the design Node.js
// adopted for AsyncLocalStorage (AsyncContextFrame) after running it on top
// of async hooks proved costly.
//
// Several storages can be used at once, Run nests (an inner Run of the same
// storage shadows the outer value until it returns), and the value of a
// storage is visible only to the flow that bound it: two requests
// interleaved on one loop never see each other's values.
//
// Three things lose the context, as they do in Node.js:
//
//   - Code off the loop. A goroutine that does not hold the loop has no
//     current frame: Get there reports false, and what it schedules with
//     Submit or future.Call runs under the empty frame (future.Do and
//     future.CallContext use the values its context carries instead). Run,
//     [Bind] and [Snapshot] panic there.
//   - Plain callbacks kept and called later by other code: a pool that
//     serves waiters in turn, an emitter that calls its listeners from
//     whoever emits. The callback sees the frame of the code that calls it,
//     not of the code that registered it. Bind (and Snapshot, for callbacks
//     with arguments) fixes that: the bound callback runs under the frame
//     current when it was bound. To run a bound callback from another
//     goroutine, submit it: ex.Submit(hooks.Bind(ex, fn)).
//   - Work handed to another executor: frames belong to the loop that made
//     them. Bind on one loop and call the result on the same loop.
//
// # Request context: context.Context and log/slog
//
// A handler on another goroutine has a context.Context; loop code has
// storages. [Storage.WithValue] puts a value into a context (from any
// goroutine, in a middleware say), and future.Do and future.CallContext run
// their function on the loop under the values the context carries, so
// everything that function registers sees them in Get. The other way,
// [NewContext] makes a context that carries the loop's current values, a
// spawned task's ctx carries the values it was spawned under, and fn's ctx
// in future.Go those of the caller of Go; [Storage.FromContext] reads them
// anywhere. [RunContext] runs loop code under a context's values, and
// [RunValue] is Run for a function with a result.
//
// [LogHandler] wraps a slog.Handler and adds to each record the values of
// the storages it is given (and the executor's name): those of the loop the
// caller holds, else those the record's context carries. With it a request
// id set by a middleware reaches every record logged by the loop code of
// that request, callbacks and tasks included, with no code in between:
//
//	logger := slog.New(hooks.NewLogHandler(h, hooks.Log("request_id", requestID)))
//	ctx = requestID.WithValue(ctx, id) // in the middleware
//	future.Do(ctx, ex, func() (T, error) {
//		logger.Info("on the loop") // ... executor=api request_id=<id>
//		...
//	})
//
// # Panics of a flow
//
// [ObservePanics] binds a [PanicObserver] to the current frame, as Run
// binds a value, until the returned [PanicWatch]'s End: the continuations
// registered meanwhile, and what they register in turn, tell the observer
// when they panic, after the panic has been reported as usual. A
// protocol's server binds each request's observer around its handler, so
// that a panic in a callback or task that was to finish the request ends
// it (package web's ResponseWriter.Later does this) instead of leaving its
// client waiting.
//
// # [Hooks]
//
// Hooks observe the life of every resource an executor runs: futures
// (promises, Then, Transform, Call, Resolved, Failed, combinators), tasks
// started by future.Spawn, and timers. Each gets an [ID]; the hooks report
//
//   - Init(id, kind, trigger) when it is created. trigger is why: for a
//     future derived with Then or Transform, the future it hangs on;
//     otherwise the resource whose continuation was running when it was
//     created (Executor.CurrentID), 0 at top level;
//   - Before(id) and After(id) around each continuation that resolves it
//     (for Then, the derived future's id wraps its callback), and around
//     each slice of a spawned task between suspensions. Inside,
//     Executor.CurrentID returns id;
//   - Resolve(id) when it completes;
//   - Destroy(id) after it has been garbage collected.
//
// Every hook runs on the loop, in the order of the events, and Init before
// any other hook of the same resource, also for resources created or
// completed by other goroutines (their events are delivered on the loop).
// A panicking hook goes to the executor's panic handler; the continuation it
// wraps still runs, once.
//
// # What hooks cost
//
// With no hooks registered, resources get ID 0 and no hook code runs: a
// resource pays one atomic load and a branch when it is created, a queued
// continuation one predictable branch when it runs. Registered hooks are
// published as an immutable snapshot, so the loop never takes a lock to
// find them, and a hook kind nobody registered costs nothing: with only Init
// registered, continuations are not wrapped.
//
// Destroy is the expensive one, as in Node.js: to know when a resource is
// collected, each one is tracked with runtime.AddCleanup, which allocates and
// makes the collector work. Tracking is set up only for resources created
// while a Destroy hook is registered; without one nothing is tracked.
// Destroy comes late (when the collector gets to it) and not at all for
// resources still alive when the executor closes. docs/benchmarks.md has
// the measured costs (BenchmarkHooks).
package hooks
