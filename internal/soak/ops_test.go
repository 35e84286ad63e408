package soak

// What the workers and their tasks do, and how each outcome is judged.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/shard"
)

type counter int

const (
	cAwait counter = iota
	cAwaitOK
	cAwaitClosed
	cAwaitCtx
	cAwaitCanceled
	cAwaitPanic
	cSubmitOK
	cSubmitRejected
	cSubmitRun
	cSubmitDropped
	cCall
	cTask
	cBody
	cYield
	cSleep
	cThen
	cTimeout
	cShard
	cCancel
	cSent
	cWithdrawn
	cRecv
	cPanicHandler
	nCounters
)

// tally counts what a round did.
type tally [nCounters]atomic.Int64

func (t *tally) inc(c counter)       { t[c].Add(1) }
func (t *tally) get(c counter) int64 { return t[c].Load() }

func (t *tally) add(o *tally) {
	for i := range o {
		t[i].Add(o[i].Load())
	}
}

func (t *tally) summary() string {
	g := t.get
	return fmt.Sprintf("awaits %d (ok %d, ErrClosed %d, ctx %d, canceled %d, panic %d); "+
		"submits accepted %d, rejected %d, run %d, dropped by Close %d; calls %d; "+
		"tasks %d (bodies run %d, yields %d); sleeps %d; thens %d; timeouts %d; shard calls %d; cancels %d; "+
		"items sent %d, withdrawn %d, received %d; panic handler %d",
		g(cAwait), g(cAwaitOK), g(cAwaitClosed), g(cAwaitCtx), g(cAwaitCanceled), g(cAwaitPanic),
		g(cSubmitOK), g(cSubmitRejected), g(cSubmitRun), g(cSubmitDropped), g(cCall),
		g(cTask), g(cBody), g(cYield), g(cSleep), g(cThen), g(cTimeout), g(cShard), g(cCancel),
		g(cSent), g(cWithdrawn), g(cRecv), g(cPanicHandler))
}

// submitRec is one Submit: what it returned and how often its fn ran.
type submitRec struct {
	runs       atomic.Int32
	err        error
	afterClose bool // made after Close returned
}

// handed is a future that one goroutine made and others await or cancel.
type handed interface {
	what() string
	ready() bool
	observe()                                        // registers the OnComplete callback that observed reports
	observed() bool                                  // its OnComplete callback ran
	await(r *round, ctx, task context.Context) error // await and judge the outcome
	cancel(r *round)
}

// entry is a handed future with what it may complete with.
type entry[T comparable] struct {
	f        *future.Future[T]
	kind     string
	id       int64
	want     T
	never    bool          // never completes with a value (the tasks that run for ever)
	task     bool          // a task: its ctx is cancelled when the executor closes
	panics   any           // the value its fn panics with, if it does
	src      *entry[int64] // Then, Timeout: the future it hangs on
	timeout  bool          // a Timeout: may fail with future.ErrTimeout
	canceled atomic.Bool   // Cancel was called on it
	done     atomic.Bool   // its OnComplete callback ran
}

func (e *entry[T]) what() string   { return fmt.Sprintf("%s #%d", e.kind, e.id) }
func (e *entry[T]) ready() bool    { return e.f.Ready() }
func (e *entry[T]) observed() bool { return e.done.Load() }
func (e *entry[T]) observe()       { e.f.OnComplete(func(T, error) { e.done.Store(true) }) }

// await awaits e with ctx, from a goroutine (task is nil) or in a task
// (task is the task's own context).
func (e *entry[T]) await(r *round, ctx, task context.Context) error {
	v, err := e.f.Await(ctx)
	if !r.classify(err, e.allows, ctx, task) {
		r.fail("await-outcome", "%s: Await returned %v", e.what(), err)
	}
	if err == nil && (e.never || v != e.want || !e.f.Ready()) {
		r.fail("await-outcome", "%s: Await returned %v (ready %v), want %v", e.what(), v, e.f.Ready(), e.want)
	}
	return err
}

// allows reports whether err, besides what every Await may return, is an
// outcome e may complete with.
func (e *entry[T]) allows(err error) bool {
	if pe := (*future.PanicError)(nil); errors.As(err, &pe) {
		return e.panics != nil && pe.Value == e.panics
	}
	if errors.Is(err, future.ErrTimeout) {
		return e.timesOut()
	}
	return errors.Is(err, context.Canceled) && e.mayBeCanceled()
}

// timesOut reports whether e is a Timeout or hangs on one.
func (e *entry[T]) timesOut() bool { return e.timeout || e.src != nil && e.src.timesOut() }

func (e *entry[T]) mayBeCanceled() bool {
	return e.task || e.canceled.Load() || e.src != nil && e.src.mayBeCanceled()
}

func (e *entry[T]) cancel(r *round) {
	if e.never {
		return // the tasks that run for ever are there for Close to end
	}
	e.canceled.Store(true)
	cancelled(r, e.what(), e.f)
}

// cancelled cancels f and checks that a cancelled future is complete.
func cancelled[T any](r *round, what string, f *future.Future[T]) bool {
	r.n.inc(cCancel)
	if !f.Cancel() {
		return false
	}
	if !f.Ready() {
		r.fail("cancel-completes", "%s: Cancel returned true, but the future is pending", what)
	}
	return true
}

// classify counts an Await's outcome and reports whether the contract
// allows it: nil, executor.ErrClosed, the error of a context that ended
// (the one passed to Await, or in a task the task's own, which Await
// watches too), or an error extra accepts. A nil context is skipped.
func (r *round) classify(err error, extra func(error) bool, ctxs ...context.Context) bool {
	r.n.inc(cAwait)
	var pe *future.PanicError
	switch {
	case err == nil:
		r.n.inc(cAwaitOK)
		return true
	case errors.Is(err, executor.ErrClosed):
		r.n.inc(cAwaitClosed)
		return true
	case ctxError(err, ctxs):
		r.n.inc(cAwaitCtx)
		return true
	case errors.As(err, &pe):
		r.n.inc(cAwaitPanic)
	case errors.Is(err, context.Canceled):
		r.n.inc(cAwaitCanceled)
	}
	return extra != nil && extra(err)
}

// ctxError reports whether err is the error of one of ctxs that ended.
func ctxError(err error, ctxs []context.Context) bool {
	for _, ctx := range ctxs {
		if ctx != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return true
		}
	}
	return false
}

func (r *round) hand(h handed) {
	h.observe()
	r.mu.Lock()
	r.pool = append(r.pool, h)
	r.mu.Unlock()
}

func (r *round) pick(rng *rand.Rand) handed {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pool) == 0 {
		return nil
	}
	return r.pool[rng.IntN(len(r.pool))]
}

// op is one kind of operation a worker makes.
type op struct {
	name   string
	weight int
	do     func(r *round, rng *rand.Rand)
}

var ops = []op{
	{"submit", 20, func(r *round, _ *rand.Rand) { r.submit() }},
	{"call", 12, (*round).call},
	{"spawn", 12, (*round).spawn},
	{"await", 22, func(r *round, rng *rand.Rand) { _ = r.awaitOne(r.ctx, nil, rng) }},
	{"cancel", 5, func(r *round, rng *rand.Rand) {
		if h := r.pick(rng); h != nil {
			h.cancel(r)
		}
	}},
	{"sleep", 6, (*round).sleep},
	{"then", 6, (*round).then},
	{"timeout", 5, (*round).timeout},
	{"shard", 4, (*round).shardOp},
	{"channel", 12, (*round).chanFutures},
}

var opWeights = func() (n int) {
	for _, o := range ops {
		n += o.weight
	}
	return n
}()

// worker makes up to maxOps random operations, or stops at the close, then
// makes postOps more once Close has returned.
func (r *round) worker(i int, rng *rand.Rand, maxOps int, wg *sync.WaitGroup) {
	defer wg.Done()
	defer r.doing[i].Store(nil)
	for range maxOps {
		if r.isClosed.Load() || r.aborted.Load() {
			break
		}
		if r.ops.Add(1) == r.closeAt {
			r.triggerClose()
		}
		r.op(i, rng)
	}
	if r.finished.Add(1) == workers {
		r.triggerClose()
	}
	select {
	case <-r.closed:
	case <-r.ctx.Done():
		return
	}
	for range postOps {
		if r.aborted.Load() {
			return
		}
		r.op(i, rng)
	}
}

func (r *round) op(i int, rng *rand.Rand) {
	if rng.IntN(5000) == 0 {
		r.closeChan(rng)
	}
	k := rng.IntN(opWeights)
	for j := range ops {
		if k < ops[j].weight {
			r.doing[i].Store(&ops[j].name)
			ops[j].do(r, rng)
			return
		}
		k -= ops[j].weight
	}
}

// submit submits a function that counts its runs. Any goroutine, the loop
// included.
func (r *round) submit() {
	s := &submitRec{afterClose: r.isClosed.Load()}
	s.err = r.ex.Submit(func() {
		s.runs.Add(1)
		r.n.inc(cSubmitRun)
	})
	if s.err == nil {
		r.n.inc(cSubmitOK)
	} else {
		r.n.inc(cSubmitRejected)
	}
	r.mu.Lock()
	r.submits = append(r.submits, s)
	r.mu.Unlock()
}

func (r *round) call(rng *rand.Rand) {
	id := r.nextID.Add(1)
	e := &entry[int64]{kind: "call", id: id, want: 3 * id}
	if rng.IntN(20) == 0 {
		e.panics = fmt.Sprintf("call %d panics", id)
	}
	p := e.panics
	e.f = future.Call(r.ex, func() (int64, error) {
		if p != nil {
			panic(p)
		}
		return 3 * id, nil
	})
	r.n.inc(cCall)
	r.hand(e)
}

func (r *round) sleep(rng *rand.Rand) {
	e := &entry[struct{}]{kind: "sleep", id: r.nextID.Add(1)}
	e.f = future.Sleep(r.ex, upTo(rng, 2*time.Millisecond))
	r.n.inc(cSleep)
	r.hand(e)
}

func (r *round) then(rng *rand.Rand) {
	src, ok := r.pick(rng).(*entry[int64])
	if !ok {
		return
	}
	e := &entry[int64]{kind: "then", id: r.nextID.Add(1), want: src.want + 1, never: src.never, panics: src.panics, src: src}
	e.f = future.Then(src.f, func(v int64) (int64, error) { return v + 1, nil })
	r.n.inc(cThen)
	r.hand(e)
}

// timeout puts a short deadline on a handed future: the Timeout may expire,
// copy the future's outcome, or still be pending when the executor closes
// (then it fails with executor.ErrClosed).
func (r *round) timeout(rng *rand.Rand) {
	src, ok := r.pick(rng).(*entry[int64])
	if !ok {
		return
	}
	e := &entry[int64]{kind: "timeout", id: r.nextID.Add(1), want: src.want, never: src.never, panics: src.panics, src: src, timeout: true}
	e.f = future.Timeout(src.f, upTo(rng, 3*time.Millisecond))
	r.n.inc(cTimeout)
	r.hand(e)
}

// shardOp makes a call across the round's shard group from outside it:
// MapReduce over every shard, or a Call to one, racing the group's close.
func (r *round) shardOp(rng *rand.Rand) {
	e := &entry[int64]{kind: "mapreduce", id: r.nextID.Add(1), want: 3}
	if rng.IntN(2) == 0 {
		e.f = shard.MapReduce(r.svc, func(v *int64) (int64, error) { return *v, nil }, 0, func(a, v int64) int64 { return a + v })
	} else {
		e.kind, e.want = "shard call", 2
		e.f = shard.Invoke(r.svc, 1, func(v *int64) (int64, error) { return *v, nil })
	}
	r.n.inc(cShard)
	r.hand(e)
}

func upTo(rng *rand.Rand, d time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(d))) }

// awaitCtx returns the context of one Await: base, base with a short
// deadline, or an already cancelled one.
func awaitCtx(base context.Context, rng *rand.Rand) (context.Context, context.CancelFunc) {
	switch k := rng.IntN(10); {
	case k < 6:
		return base, func() {}
	case k < 9:
		return context.WithTimeout(base, upTo(rng, 2*time.Millisecond))
	}
	ctx, cancel := context.WithCancel(base)
	cancel()
	return ctx, cancel
}

// awaitOne awaits a random handed future and judges the outcome. From a
// worker base is the round's ctx and task is nil; from a task, base is its
// wait context and task its own.
func (r *round) awaitOne(base, task context.Context, rng *rand.Rand) error {
	h := r.pick(rng)
	if h == nil {
		return nil
	}
	ctx, cancel := awaitCtx(base, rng)
	defer cancel()
	return h.await(r, ctx, task)
}

// spawn starts a task that runs a short random script.
func (r *round) spawn(rng *rand.Rand) {
	id := r.nextID.Add(1)
	steps, seed := 1+rng.IntN(8), rng.Uint64()
	e := &entry[int64]{kind: "task", id: id, want: id, task: true}
	e.f = future.Spawn(r.ex, func(ctx context.Context) (int64, error) {
		trng := rand.New(rand.NewPCG(seed, uint64(id)))
		return id, r.body(ctx, func(wctx context.Context) error {
			for range steps {
				if err := r.step(ctx, wctx, trng); err != nil {
					return err
				}
			}
			return nil
		})
	})
	r.n.inc(cTask)
	r.hand(e)
}

// body runs a task body fn, counting it while it runs. fn's waits use wctx,
// the task's ctx that also ends when the round is aborted.
func (r *round) body(ctx context.Context, fn func(wctx context.Context) error) error {
	if r.isClosed.Load() {
		r.fail("no-body-after-close", "a task body started after Close returned")
	}
	r.bodies.Add(1)
	r.n.inc(cBody)
	defer r.bodies.Add(-1)
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(r.ctx, cancel)
	defer func() {
		stop()
		cancel()
	}()
	return fn(wctx)
}

// step is one random step of a task's script. It returns an error only
// when the task must stop: its ctx ended or the executor closed.
func (r *round) step(ctx, wctx context.Context, rng *rand.Rand) error {
	var err error
	switch rng.IntN(8) {
	case 0:
		r.n.inc(cYield)
		err = future.Yield(ctx)
	case 1:
		r.n.inc(cSleep)
		_, err = future.Sleep(r.ex, upTo(rng, 500*time.Microsecond)).Await(ctx)
	case 2:
		err = r.sendWait(wctx, rng)
	case 3:
		err = r.recvWait(wctx, rng)
	case 4:
		err = r.selectStep(wctx, rng)
	case 5:
		err = r.awaitOne(wctx, ctx, rng)
	case 6:
		r.submit()
	case 7:
		r.trySteps(rng)
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case wctx.Err() != nil:
		return wctx.Err()
	case errors.Is(err, executor.ErrClosed):
		return err
	}
	return nil // a short deadline, a closed channel, a future that failed
}

func (r *round) chanOf(rng *rand.Rand) *channel.Chan[int64] { return r.chans[rng.IntN(len(r.chans))] }

// sent records the outcome of item's send: a send that failed was
// withdrawn and must not deliver the item.
func (r *round) sent(item int64, ok bool) {
	if ok {
		r.n.inc(cSent)
	} else {
		r.n.inc(cWithdrawn)
	}
	r.mu.Lock()
	r.sends[item] = !ok
	r.mu.Unlock()
}

func (r *round) received(item int64) {
	r.n.inc(cRecv)
	r.mu.Lock()
	r.recvd[item]++
	r.mu.Unlock()
}

func (r *round) sendWait(wctx context.Context, rng *rand.Rand) error {
	ctx, cancel := awaitCtx(wctx, rng)
	defer cancel()
	item := r.items.Add(1)
	err := r.chanOf(rng).SendWait(ctx, item)
	r.sent(item, err == nil)
	return err
}

func (r *round) recvWait(wctx context.Context, rng *rand.Rand) error {
	ctx, cancel := awaitCtx(wctx, rng)
	defer cancel()
	v, err := r.chanOf(rng).RecvWait(ctx)
	if err == nil {
		r.received(v)
	}
	return err
}

// selectStep selects between a send to one channel and a receive from
// another.
func (r *round) selectStep(wctx context.Context, rng *rand.Rand) error {
	ctx, cancel := awaitCtx(wctx, rng)
	defer cancel()
	k, item := rng.IntN(len(r.chans)), r.items.Add(1)
	sc, rc := r.chans[k].SendCase(item), r.chans[(k+1)%len(r.chans)].RecvCase()
	i, err := channel.Select(ctx, sc, rc)
	r.sent(item, i == 0 && err == nil)
	if i == 1 && err == nil {
		r.received(rc.Value())
	}
	return err
}

func (r *round) trySteps(rng *rand.Rand) {
	c := r.chanOf(rng)
	item := r.items.Add(1)
	r.sent(item, c.TrySend(item))
	if v, ok := r.chanOf(rng).TryRecv(); ok {
		r.received(v)
	}
}

// closeChan closes a random channel, on the loop.
func (r *round) closeChan(rng *rand.Rand) {
	c := r.chanOf(rng)
	_ = r.ex.Submit(c.Close)
}

// chanFutures sends or receives through a channel's futures, made on the
// loop and awaited here.
func (r *round) chanFutures(rng *rand.Rand) {
	c := r.chanOf(rng)
	ctx, cancel := awaitCtx(r.ctx, rng)
	defer cancel()
	if rng.IntN(2) == 0 {
		item := r.items.Add(1)
		f, notRun := viaLoop(r, func() *future.Future[struct{}] { return c.Send(item) })
		if f == nil {
			if notRun {
				r.sent(item, false) // Send was never called
			}
			return
		}
		if _, err, known := settle(r, ctx, f); known {
			r.sent(item, err == nil)
		}
		return
	}
	f, _ := viaLoop(r, c.Recv)
	if f == nil {
		return
	}
	if v, err, known := settle(r, ctx, f); known && err == nil {
		r.received(v)
	}
}

// viaLoop makes a channel future on the loop, where channel operations
// must be made. With a nil future, notRun reports whether mk surely did not
// run (the Call failed) rather than the wait ending early.
func viaLoop[T any](r *round, mk func() *future.Future[T]) (f *future.Future[T], notRun bool) {
	call := future.Call(r.ex, func() (*future.Future[T], error) { return mk(), nil })
	f, err := call.Await(r.ctx)
	if !r.classify(err, nil, r.ctx) {
		r.fail("await-outcome", "Call making a channel future: %v", err)
	}
	return f, err != nil && call.Ready()
}

// settle awaits a channel future with ctx; if ctx ends or the executor
// closes first, it cancels f so that f's own outcome is known. known is
// false if that could not be learnt (the round was aborted).
func settle[T any](r *round, ctx context.Context, f *future.Future[T]) (v T, err error, known bool) {
	v, err = f.Await(ctx)
	chanClosed := func(err error) bool { return errors.Is(err, channel.ErrClosed) }
	if !r.classify(err, chanClosed, ctx) {
		r.fail("await-outcome", "channel future: Await returned %v", err)
	}
	if err == nil {
		return v, nil, true
	}
	if errors.Is(err, executor.ErrClosed) {
		if _, ok := <-r.ex.Done(); !ok && !f.Ready() {
			r.fail("future-ready-after-close", "channel future: pending after its executor closed")
		}
	}
	if !f.Ready() {
		cancelled(r, "channel future", f)
	}
	if !f.Ready() {
		return v, err, false
	}
	v, err = f.Await(r.ctx) // complete: at once
	withdrawn := func(err error) bool { return chanClosed(err) || errors.Is(err, context.Canceled) }
	if !r.classify(err, withdrawn, r.ctx) {
		r.fail("await-outcome", "channel future, once complete: %v", err)
	}
	return v, err, true
}

// startForever starts, if the round wants them, the tasks that never stop
// on their own: two that ping-pong over rendezvous channels and one that
// loops on Yield. Close must still end them (docs/design.md point 7).
func (r *round) startForever() {
	if r.pingPong {
		ab, ba := channel.New[int64](r.ex, 0), channel.New[int64](r.ex, 0)
		r.forever("ping", func(_, wctx context.Context) error {
			for v := int64(0); !r.aborted.Load(); v++ {
				if err := ab.SendWait(wctx, v); err != nil {
					return err
				}
				if _, err := ba.RecvWait(wctx); err != nil {
					return err
				}
			}
			return nil
		})
		r.forever("pong", func(_, wctx context.Context) error {
			for !r.aborted.Load() {
				v, err := ab.RecvWait(wctx)
				if err == nil {
					err = ba.SendWait(wctx, v)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	if r.spinner {
		r.forever("spinner", func(ctx, _ context.Context) error {
			for !r.aborted.Load() {
				r.n.inc(cYield)
				if err := future.Yield(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// forever spawns a task that runs fn until fn fails (or the round is
// aborted: then it fails with context.Canceled).
func (r *round) forever(kind string, fn func(ctx, wctx context.Context) error) {
	e := &entry[int64]{kind: kind, id: r.nextID.Add(1), never: true, task: true}
	e.f = future.Spawn(r.ex, func(ctx context.Context) (int64, error) {
		err := r.body(ctx, func(wctx context.Context) error { return fn(ctx, wctx) })
		if err == nil {
			err = context.Canceled // aborted
		}
		return 0, err
	})
	r.n.inc(cTask)
	r.hand(e)
}
