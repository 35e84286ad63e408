package future

// Do: the round trip from a handler goroutine to the loop and back, with no
// future in between.
//
// Invariants:
//   - a doNode is owned by the goroutine in Do until it is submitted, then
//     by the loop until the loop sends on ch, then by Do again, which
//     returns it to the pool; a node whose wait was abandoned (ctx ended
//     before fn started) is never reused, since the loop may still hold it;
//   - the nodes are pooled per result type and hold no channel there: Do
//     takes the channel (a parker's) from the executor's own pool for the
//     call and gives it back with the node, so no channel made inside a
//     testing/synctest bubble reaches another bubble (future.go, parker);
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
	"github.com/spindle-rt/spindle/internal/frame"
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
	p     *parker // for the call: p.ch (capacity 1) carries the loop's token
}

// doPools holds one sync.Pool of nodes per result type, keyed by a nil *T.
var doPools sync.Map

func doPool[T any]() *sync.Pool {
	key := any((*T)(nil))
	if p, ok := doPools.Load(key); ok {
		return p.(*sync.Pool)
	}
	p, _ := doPools.LoadOrStore(key, &sync.Pool{New: func() any {
		return new(doNode[T])
	}})
	return p.(*sync.Pool)
}

// Do runs fn on e's loop and returns its result: the same as
// Call(e, fn).Await(ctx), without a future, for the goroutines of a service
// that hand work to the loop and wait for it. It allocates nothing of its
// own (the node that carries the call is pooled, and so is its wake-up
// channel, per executor), and if ctx ends before fn
// has started, fn never runs and Do returns ctx.Err(); once fn has started,
// Do waits for it (it runs on the loop, which is meant to be quick). fn
// runs under the async-local values that ctx carries (hooks.Storage's
// WithValue), so a handler's request id reaches fn and every continuation
// fn registers. A
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
	p := getParker(ex)
	n.fn, n.p = fn, p
	n.state.Store(doQueued)
	if err := ex.SubmitRunnable(n, ctxFrame(ctx), 0); err != nil {
		n.fn, n.p = nil, nil
		ex.Parked.Put(p)
		pool.Put(n)
		return zero, err
	}
	if done := ctx.Done(); done != nil {
		select {
		case <-p.ch:
		case <-done:
			if n.state.CompareAndSwap(doQueued, doAbandoned) {
				return zero, ctx.Err() // n (and p) stay with the loop; they are not reused
			}
			<-p.ch // fn has started: wait for it
		}
	} else {
		<-p.ch
	}
	v, err := n.val, n.err
	n.val, n.err, n.p = zero, nil, nil
	ex.Parked.Put(p)
	pool.Put(n)
	return v, err
}

// ctxFrame returns the async-local frame that ctx carries, or nil.
func ctxFrame(ctx context.Context) *frame.Frame {
	if c := frame.FromContext(ctx); c != nil {
		return c.Frame
	}
	return nil
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
	n.p.ch <- struct{}{}
}

// CatchPanic hands fn's panic back to Do.
func (n *doNode[T]) CatchPanic(v any, stack []byte) {
	n.err = &PanicError{Value: v, Stack: stack}
	n.p.ch <- struct{}{}
}

// Drop tells Do that the loop closed before fn could run.
func (n *doNode[T]) Drop() {
	if n.state.CompareAndSwap(doQueued, doTaken) {
		n.fn = nil
		n.err = executor.ErrClosed
		n.p.ch <- struct{}{}
	}
}
