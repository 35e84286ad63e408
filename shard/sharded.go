package shard

// Sharded services: one instance per shard.
//
// Invariants: inst[i] is read and written only on shard i's loop. It is
// made there by mk(i), either by the task NewSharded queues on shard i or
// by the first use on shard i that comes before that task, whichever runs
// first; after that it never changes.

import (
	"fmt"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// Sharded is a service with one instance per shard of a group (Seastar's
// sharded<S>): the instance of shard i is made on shard i's loop and used
// only there, so it needs no lock. Reach another shard's instance with
// Invoke, every instance with InvokeAll or MapReduce.
type Sharded[T any] struct {
	g    *Group
	mk   func(shard int) *T
	inst []slot[T]
}

// slot holds one shard's instance, on a cache line of its own.
type slot[T any] struct {
	v *T
	_ [56]byte
}

// NewSharded returns a service with one instance per shard of g, made by
// mk(i) on shard i's loop: NewSharded queues the making on every shard and
// returns at once, and a use of the instance on shard i that comes first
// makes it there and then. mk must not return nil.
func NewSharded[T any](g *Group, mk func(shard int) *T) *Sharded[T] {
	if g == nil || mk == nil {
		panic("shard: NewSharded with a nil group or constructor")
	}
	s := &Sharded[T]{g: g, mk: mk, inst: make([]slot[T], g.Len())}
	for i, sh := range g.shards {
		// Once the shard closes there is nothing to make the instance for.
		_ = sh.exe.Submit(func() { s.local(i) })
	}
	return s
}

// Group returns the group the service is sharded over.
func (s *Sharded[T]) Group() *Group { return s.g }

// Local returns the instance of the shard whose loop calls it (from a
// callback or task body of that shard). It panics anywhere else; use
// Invoke there.
func (s *Sharded[T]) Local() *T {
	i, ok := s.g.Current()
	if !ok {
		panic("shard: Local called off the group's loops; use Invoke")
	}
	return s.local(i)
}

// local returns shard i's instance, making it if need be. Shard i's loop
// only.
func (s *Sharded[T]) local(i int) *T {
	p := &s.inst[i].v
	if *p == nil {
		v := s.mk(i)
		if v == nil {
			panic(fmt.Sprintf("shard: NewSharded's constructor returned nil for shard %d", i))
		}
		*p = v
	}
	return *p
}

// Invoke runs fn with shard to's instance on shard to's loop and returns a
// future of its result, as Call does (the future belongs to the calling
// shard when called on one, to shard to otherwise).
func Invoke[T, R any](s *Sharded[T], to int, fn func(*T) (R, error)) *future.Future[R] {
	if fn == nil {
		panic("shard: Invoke with nil func")
	}
	return send[T, struct{}, R](s.g, to, fn, s, struct{}{})
}

// InvokeWith is Invoke for a function that takes an argument, which travels
// inside the call's message (see CallWith).
func InvokeWith[T, A, R any](s *Sharded[T], to int, arg A, fn func(*T, A) (R, error)) *future.Future[R] {
	if fn == nil {
		panic("shard: InvokeWith with nil func")
	}
	return send[T, A, R](s.g, to, fn, s, arg)
}

// InvokeAll runs fn with every shard's instance, each on its own shard, at
// once, and returns a future of the results in shard order. It fails with
// the first error to arrive (a panic: *future.PanicError), and the future
// of the other calls is then cancelled; the calls themselves still run.
// The future belongs to the calling shard when called on one, and to
// shard 0 otherwise.
func InvokeAll[T, R any](s *Sharded[T], fn func(*T) (R, error)) *future.Future[[]R] {
	if fn == nil {
		panic("shard: InvokeAll with nil func")
	}
	return fromShard(s.g, func() *future.Future[[]R] {
		fs := make([]*future.Future[R], s.g.Len())
		for i := range fs {
			fs[i] = Invoke(s, i, fn)
		}
		return future.All(fs...)
	})
}

// MapReduce runs mapper with every shard's instance, each on its own shard,
// at once, and folds the results in shard order: starting from init, acc =
// reduce(acc, r) for the result r of shard 0, then 1, and so on. reduce runs
// on the loop the future belongs to (as for InvokeAll), so it may touch that
// shard's state. It fails as InvokeAll does.
func MapReduce[T, R, A any](s *Sharded[T], mapper func(*T) (R, error), init A, reduce func(A, R) A) *future.Future[A] {
	if reduce == nil {
		panic("shard: MapReduce with nil reduce")
	}
	all := InvokeAll(s, mapper)
	if r, ok := all.Peek(); ok && r.Err != nil {
		return future.Failed[A](all.Executor(), r.Err) // no loop may be left to run Then
	}
	return future.Then(all, func(rs []R) (A, error) {
		acc := init
		for _, r := range rs {
			acc = reduce(acc, r)
		}
		return acc, nil
	})
}

// fromShard returns start(), run on a shard's loop: at once when the
// caller is on one of g's shards, on shard 0 otherwise, so that every call
// start makes comes from a shard and every future it makes belongs to
// that shard.
func fromShard[R any](g *Group, start func() *future.Future[R]) *future.Future[R] {
	if _, ok := g.Current(); ok {
		return start()
	}
	home := g.shards[0].exe
	p := future.NewPromise[R](home)
	if g.state.Load() != stateOpen {
		p.Reject(executor.ErrClosed)
		return p.Future()
	}
	if err := g.shards[0].ex.SubmitRunnable(&startNode[R]{start: start, p: p}, nil, 0); err != nil {
		p.Reject(err)
	}
	return p.Future()
}

// startNode runs fromShard's start on shard 0. If shard 0 closes before it
// runs, Drop fails the future, so it never stays pending.
type startNode[R any] struct {
	start func() *future.Future[R]
	p     *future.Promise[R]
}

func (n *startNode[R]) Run() {
	n.start().OnComplete(func(v R, err error) { n.p.Complete(v, err) })
}

// CatchPanic fails the future with a panic of start.
func (n *startNode[R]) CatchPanic(v any, stack []byte) {
	n.p.Reject(&future.PanicError{Value: v, Stack: stack})
}

// Drop fails the future: shard 0 closed before start could run.
func (n *startNode[R]) Drop() { n.p.Reject(executor.ErrClosed) }
