package future

// Do: the round trip from a handler goroutine to the loop and back, with no
// future in between.
//
// Invariants:
//   - a doNode is owned by the goroutine in Do until it is submitted, then
//     by the loop until the loop sends on ch, then by Do again, which
//     returns it to the pool; a node whose wait was abandoned (ctx ended
//     before fn started) is never reused, since the loop may still hold it;
//   - state moves once from queued to taken (the loop, as fn starts, or a
//     drop when the loop closes) or to abandoned (Do, as ctx ends), by
//     compare-and-swap, so fn runs at most once and never after Do has
//     returned ctx's error; a taken node always gets exactly one token on
//     ch.

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

const (
	doQueued uint32 = iota
	doTaken
	doAbandoned
)

// doNode carries one Do call to the loop and its result back.
type doNode[T any] struct {
	fn    func() (T, error)
	val   T
	err   error
	state atomic.Uint32
	ch    chan struct{} // capacity 1: the loop's token
}

// doPools holds one sync.Pool of nodes per result type, keyed by a nil *T.
var doPools sync.Map

func doPool[T any]() *sync.Pool {
	key := any((*T)(nil))
	if p, ok := doPools.Load(key); ok {
		return p.(*sync.Pool)
	}
	p, _ := doPools.LoadOrStore(key, &sync.Pool{New: func() any {
		return &doNode[T]{ch: make(chan struct{}, 1)}
	}})
	return p.(*sync.Pool)
}

// Do runs fn on e's loop and returns its result: the same as
// Call(e, fn).Await(ctx), without a future, for the goroutines of a service
// that hand work to the loop and wait for it. It allocates nothing of its
// own (the node that carries the call is pooled), and if ctx ends before fn
// has started, fn never runs and Do returns ctx.Err(); once fn has started,
// Do waits for it (it runs on the loop, which is meant to be quick). A
// panic in fn comes back as a *PanicError; once the executor is closing, Do
// returns executor.ErrClosed (a call queued when the executor closes is
// dropped, not run). Called on the loop itself (a callback or a task body)
// Do is Call(e, fn).Await(ctx), with Await's rules. No hooks see the call:
// it makes no resource.
func Do[T any](ctx context.Context, e *executor.Executor, fn func() (T, error)) (T, error) {
	ex := (*loop.Loop)(e)
	if ex == nil {
		panic("future: Do with nil executor")
	}
	if fn == nil {
		panic("future: Do with nil func")
	}
	if ctx == nil {
		panic("future: Do with nil context")
	}
	if ex.OnLoop() {
		return Call(e, fn).Await(ctx)
	}
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	pool := doPool[T]()
	n := pool.Get().(*doNode[T])
	n.fn = fn
	n.state.Store(doQueued)
	if err := ex.SubmitRunnable(n, nil, 0); err != nil {
		n.fn = nil
		pool.Put(n)
		return zero, err
	}
	if done := ctx.Done(); done != nil {
		select {
		case <-n.ch:
		case <-done:
			if n.state.CompareAndSwap(doQueued, doAbandoned) {
				return zero, ctx.Err() // n stays with the loop; it is not reused
			}
			<-n.ch // fn has started: wait for it
		}
	} else {
		<-n.ch
	}
	v, err := n.val, n.err
	n.val, n.err = zero, nil
	pool.Put(n)
	return v, err
}

// Run calls fn on the loop, unless Do gave up first.
func (n *doNode[T]) Run() {
	if !n.state.CompareAndSwap(doQueued, doTaken) {
		n.fn = nil
		return
	}
	fn := n.fn
	n.fn = nil
	n.val, n.err = fn()
	n.ch <- struct{}{}
}

// CatchPanic hands fn's panic back to Do.
func (n *doNode[T]) CatchPanic(v any, stack []byte) {
	n.err = &PanicError{Value: v, Stack: stack}
	n.ch <- struct{}{}
}

// Drop tells Do that the loop closed before fn could run.
func (n *doNode[T]) Drop() {
	if n.state.CompareAndSwap(doQueued, doTaken) {
		n.fn = nil
		n.err = executor.ErrClosed
		n.ch <- struct{}{}
	}
}
