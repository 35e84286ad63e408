package shard

// Calls: the message that travels a lane to the callee and back.
//
// A call made on shard i to shard j is one object, from the caller's
// free list: the caller fills it and pushes it on lane i->j; shard j runs
// its function, stores the result in it and pushes it on lane j->i; shard i
// completes the caller's promise with the result and puts the object back.
//
// Invariants:
//   - a call is owned by exactly one party at a time: the caller's loop
//     until it is pushed, the lane until it is popped, the callee's loop
//     until its reply is pushed, the lane again, then the caller's loop,
//     which recycles it (so its free list belongs to the caller's loop:
//     it is taken and given back there);
//   - ran is false on the way out and true on the way back; v and err are
//     written by the callee before ran is set, and read by the caller after
//     the lane handed the call over, which publishes them;
//   - the promise belongs to the caller's shard: Then callbacks and tasks
//     that await it run there, with no further hop;
//   - the function runs with an empty async-local frame, like work
//     submitted from another goroutine: a frame's values may be loop-owned
//     state of the caller, which the callee must not touch.

import (
	"github.com/spindle-rt/spindle/alloc"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// message is what a lane carries.
type message interface {
	// deliver runs on the loop of the shard the lane leads to (at): the
	// callee runs the call, the caller completes it.
	deliver(at *shard)
	// fail replies to the call with err instead of running it (its function
	// panicked). Callee only.
	fail(at *shard, err error)
	// abandon completes the call with its result if it ran, and with
	// executor.ErrClosed otherwise. Only in the sweep after every shard
	// has closed.
	abandon()
}

// call is a cross-shard call. Its function fn is a func() (R, error)
// (Call), func(A) (R, error) (CallWith), func(*T) (R, error) (Invoke) or
// func(*T, A) (R, error) (InvokeWith); T is the type of a Sharded service's
// instances and A the type of the argument, struct{} where unused.
type call[T, A, R any] struct {
	p    *future.Promise[R]
	from *shard
	fl   *alloc.FreeList[call[T, A, R]] // the caller's, which takes the call back
	fn   any
	s    *Sharded[T]
	arg  A
	v    R
	err  error
	ran  bool
}

// run calls the function on the callee's loop.
func (c *call[T, A, R]) run(at *shard) (R, error) {
	switch fn := c.fn.(type) {
	case func() (R, error):
		return fn()
	case func(A) (R, error):
		return fn(c.arg)
	case func(*T) (R, error):
		return fn(c.s.local(at.idx))
	}
	return c.fn.(func(*T, A) (R, error))(c.s.local(at.idx), c.arg)
}

func (c *call[T, A, R]) deliver(at *shard) {
	if !c.ran {
		v, err := c.run(at)
		c.reply(at, v, err)
		return
	}
	c.complete(c.v, c.err)
}

func (c *call[T, A, R]) fail(at *shard, err error) {
	var zero R
	c.reply(at, zero, err)
}

// reply sends the result back to the caller. Callee only. The function
// and argument stay in the call until the caller recycles it, so the way
// back writes three fields only.
func (c *call[T, A, R]) reply(at *shard, v R, err error) {
	c.v, c.err, c.ran = v, err, true
	at.send(c.from.idx, c)
}

// complete recycles the call and completes its promise. Caller only.
func (c *call[T, A, R]) complete(v R, err error) {
	p := c.p
	c.fl.Put(c)
	p.Complete(v, err)
}

func (c *call[T, A, R]) abandon() {
	if c.ran {
		c.p.Complete(c.v, c.err)
		return
	}
	var zero R
	c.p.Complete(zero, executor.ErrClosed)
}

// Run runs a call a shard makes to itself: it is queued on the shard's own
// loop like any task, so it needs no lane.
func (c *call[T, A, R]) Run() {
	v, err := c.run(c.from)
	c.complete(v, err)
}

// Drop fails a call to the caller's own shard that its loop closed before
// running: the call does not vanish with the queue. It may run on any
// goroutine, so the call is not recycled (its free list is loop-owned).
func (c *call[T, A, R]) Drop() {
	var zero R
	c.p.Complete(zero, executor.ErrClosed)
}

// CatchPanic fails a call to the caller's own shard whose function
// panicked.
func (c *call[T, A, R]) CatchPanic(v any, stack []byte) {
	var zero R
	c.complete(zero, &future.PanicError{Value: v, Stack: stack})
}

// freeList returns the shard's free list of N, made on first use. The
// list used last is kept at hand (lastFree), so a shard that makes one
// kind of call most of the time skips the loop-local table. Loop only.
func freeList[N any](s *shard) *alloc.FreeList[N] {
	if fl, ok := s.lastFree.(*alloc.FreeList[N]); ok {
		return fl
	}
	key := any((*N)(nil))
	fl, ok := s.ex.Local(key).(*alloc.FreeList[N])
	if !ok {
		fl = new(alloc.FreeList[N])
		s.ex.SetLocal(key, fl)
	}
	s.lastFree = fl
	return fl
}

// send calls fn (with s's instance and arg, as its type says) on shard to
// and returns its future. On a shard's loop the call travels the lane (or,
// to the caller's own shard, its queue) and the future belongs to the
// caller's shard; anywhere else it is future.Call on shard to.
func send[T, A, R any](g *Group, to int, fn any, s *Sharded[T], arg A) *future.Future[R] {
	dst := g.shard("call to shard %d", to)
	from, ok := g.Current()
	if !ok {
		if g.state.Load() != stateOpen {
			return future.Failed[R](dst.exe, executor.ErrClosed)
		}
		return callFromOutside(dst, &call[T, A, R]{fn: fn, s: s, arg: arg})
	}
	src := g.shards[from]
	if src.ex.Closed() {
		return future.Failed[R](src.exe, executor.ErrClosed)
	}
	p := future.NewPromise[R](src.exe)
	if dst.ex.Closed() {
		p.Reject(executor.ErrClosed)
		return p.Future()
	}
	fl := freeList[call[T, A, R]](src)
	c := fl.Get()
	c.p, c.from, c.fl, c.fn, c.s, c.arg = p, src, fl, fn, s, arg
	if dst == src {
		src.ex.PostRunnable(c, nil, 0)
	} else {
		src.send(to, c)
	}
	return p.Future()
}

// callFromOutside is send for a caller on none of the group's shards.
func callFromOutside[T, A, R any](dst *shard, c *call[T, A, R]) *future.Future[R] {
	return future.Call(dst.exe, func() (R, error) { return c.run(dst) })
}

// Call runs fn on shard to's loop and returns a future of its result.
//
// Called on the loop of one of g's shards (a callback or task body), the
// call travels the queue from that shard to shard to, and the future
// belongs to the calling shard: its Then callbacks and the tasks that await
// it run there, with no further hop. Called anywhere else, it is
// future.Call(g.Shard(to), fn) and the future belongs to shard to. Calls
// from one shard (or one goroutine) to shard to run in the order they were
// made. fn runs with an empty async-local frame. A panic in fn fails the
// future with a *future.PanicError; an error crosses as it is.
//
// Once the group is shutting down, calls from outside its shards fail with
// executor.ErrClosed, while calls between its shards still run (they carry
// work already accepted); a call to or from a shard that has closed fails
// with executor.ErrClosed. Call panics if to is not a shard of g.
func Call[R any](g *Group, to int, fn func() (R, error)) *future.Future[R] {
	if fn == nil {
		panic("shard: Call with nil func")
	}
	return send[struct{}, struct{}, R](g, to, fn, nil, struct{}{})
}

// CallWith is Call for a function that takes an argument: arg travels
// inside the call's message, so fn can be a function that captures
// nothing, and a call from a shard then allocates nothing for it (a
// closure that captures its argument costs an allocation per call).
func CallWith[A, R any](g *Group, to int, arg A, fn func(A) (R, error)) *future.Future[R] {
	if fn == nil {
		panic("shard: CallWith with nil func")
	}
	return send[struct{}, A, R](g, to, fn, nil, arg)
}
