package future

// Combinators.
//
// A combinator keeps one entry per input: the entry is the waiter linked in
// that input and the task queued on the loop when it completes, so the
// combinator's state (results, remaining count) is touched only on the loop
// once any entry is linked. Inputs that are already complete when the
// combinator is made are folded in on the calling goroutine before any entry
// is linked, so a combinator of completed futures is itself complete when it
// is returned (and awaiting it never suspends).

import (
	"errors"

	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Result is the outcome of one future: its value or its error.
type Result[T any] struct {
	Value T
	Err   error
}

type combineKind uint8

const (
	kindAll combineKind = iota
	kindAllSettled
	kindRace
	kindAny
)

// combiner is the state shared by the entries of one combinator.
type combiner[T any] struct {
	kind    combineKind
	ins     []*Future[T]
	vals    []T
	settled []Result[T]
	errs    []error
	left    int
	all     *Future[[]T]
	sets    *Future[[]Result[T]]
	one     *Future[T]
	entries []entry[T]
	cl      link
}

type entry[T any] struct {
	l link
	c *combiner[T]
	i int
}

// ErrNoFutures is the error of [Race] and [Any] of no futures: with no
// input, nothing could ever complete the first or succeed.
var ErrNoFutures = errors.New("future: Race or Any of no futures")

// All returns a future of the values of fs, in input order, once all have
// resolved. It fails as soon as one fails, with that error, and cancels the
// rest. All futures must share one executor. All of no futures is resolved
// with an empty slice (see Combinators of no futures in the package doc).
func All[T any](fs ...*Future[T]) *Future[[]T] {
	if len(fs) == 0 {
		return none([]T{}, nil)
	}
	ex := check("All", fs)
	c := &combiner[T]{kind: kindAll, ins: fs, vals: make([]T, len(fs))}
	c.all = newPending[[]T](ex)
	c.start(ex)
	return c.all
}

// AllSettled returns a future of the outcomes of fs, in input order, once
// all have completed; it never fails. AllSettled of no futures is resolved
// with an empty slice.
func AllSettled[T any](fs ...*Future[T]) *Future[[]Result[T]] {
	if len(fs) == 0 {
		return none([]Result[T]{}, nil)
	}
	ex := check("AllSettled", fs)
	c := &combiner[T]{kind: kindAllSettled, ins: fs, settled: make([]Result[T], len(fs))}
	c.sets = newPending[[]Result[T]](ex)
	c.start(ex)
	return c.sets
}

// Race returns a future completed like the first of fs to complete, with
// its value or its error, and cancels the rest. Race of no futures fails
// with [ErrNoFutures] (not a future that stays pending for ever).
func Race[T any](fs ...*Future[T]) *Future[T] {
	if len(fs) == 0 {
		var zero T
		return none(zero, ErrNoFutures)
	}
	ex := check("Race", fs)
	c := &combiner[T]{kind: kindRace, ins: fs}
	c.one = newPending[T](ex)
	c.start(ex)
	return c.one
}

// Any returns a future resolved with the value of the first of fs to resolve,
// and cancels the rest. If all fail it fails with errors.Join of their
// errors, in input order. Any of no futures fails with [ErrNoFutures].
func Any[T any](fs ...*Future[T]) *Future[T] {
	if len(fs) == 0 {
		var zero T
		return none(zero, ErrNoFutures)
	}
	ex := check("Any", fs)
	c := &combiner[T]{kind: kindAny, ins: fs, errs: make([]error, len(fs))}
	c.one = newPending[T](ex)
	c.start(ex)
	return c.one
}

// none returns the future of a combinator of no futures, complete from the
// start with v or err. With no input to take an executor from, it is bound
// to the loop the caller holds (in a callback or task body), or to no
// executor off any loop: then Ready, Peek and Await answer at once, Cancel
// reports false, and the methods that would have to schedule on a loop
// (Then, OnComplete, ...) panic saying so.
func none[T any](v T, err error) *Future[T] {
	if ex := loop.Held(); ex != nil {
		return done(ex, v, err)
	}
	f := new(Future[T])
	f.val, f.err = v, err
	f.head.Store(&doneLink)
	return f
}

// check validates the inputs of a combinator (at least one) and returns
// their executor.
func check[T any](name string, fs []*Future[T]) *loop.Loop {
	var ex *loop.Loop
	for i, f := range fs {
		if f == nil {
			panic("future: " + name + " with a nil future")
		}
		f.mustMade(name)
		if i == 0 {
			ex = f.ex
		} else if f.ex != ex {
			panic("future: " + name + " of futures bound to different executors")
		}
	}
	return ex
}

func newPending[T any](ex *loop.Loop) *Future[T] {
	f, w := newObjHere[Future[T]](ex)
	f.ex = ex
	f.id = newID(ex, hooks.KindFuture, 0, f, w)
	return f
}

// start folds in the inputs that are already complete, then links an entry
// into each pending one. Before the first entry is linked only this
// goroutine touches c; after, only the loop does (through the entries).
func (c *combiner[T]) start(ex *loop.Loop) {
	c.left = len(c.ins)
	var pend []int
	for i, f := range c.ins {
		if !f.ready() {
			pend = append(pend, i)
		} else if c.fold(i) {
			c.cancelRest()
			return
		}
	}
	if len(pend) == 0 {
		return
	}
	out := c.out()
	c.cl.w = (*combineCancel[T])(c)
	out.addWaiter(&c.cl)
	c.entries = make([]entry[T], len(pend))
	_, onLoop := ex.Current()
	for k, i := range pend {
		e := &c.entries[k]
		e.c, e.i = c, i
		e.l.w = e
		if !c.ins[i].addWaiter(&e.l) {
			e.wake(onLoop)
		}
	}
}

// combineCancel is the combinator's waiter on its own output: cancelling the
// output cancels the inputs.
type combineCancel[T any] combiner[T]

func (cc *combineCancel[T]) wake(bool) {
	c := (*combiner[T])(cc)
	if c.out().cancelled() {
		c.cancelRest()
	}
}

// wake queues the entry's fold as a continuation of the combinator's own
// future: Before/After of that future wrap it.
func (e *entry[T]) wake(onLoop bool) { schedule(e.c.ins[e.i].ex, onLoop, e, nil, e.c.out().id) }

// Run folds the input in on the loop.
func (e *entry[T]) Run() {
	c := e.c
	if c.out().ready() {
		return
	}
	if c.fold(e.i) {
		c.cancelRest()
	}
}

func (c *combiner[T]) out() *core {
	switch c.kind {
	case kindAll:
		return &c.all.core
	case kindAllSettled:
		return &c.sets.core
	}
	return &c.one.core
}

// fold records input i's result and reports whether the combinator
// completed and the other inputs should be cancelled.
func (c *combiner[T]) fold(i int) bool {
	f := c.ins[i]
	c.left--
	switch c.kind {
	case kindAll:
		if f.err != nil {
			c.all.complete(nil, f.err, fromAnywhere)
			return true
		}
		c.vals[i] = f.val
		if c.left == 0 {
			c.all.complete(c.vals, nil, fromAnywhere)
		}
	case kindAllSettled:
		c.settled[i] = Result[T]{Value: f.val, Err: f.err}
		if c.left == 0 {
			c.sets.complete(c.settled, nil, fromAnywhere)
		}
	case kindRace:
		c.one.complete(f.val, f.err, fromAnywhere)
		return true
	case kindAny:
		if f.err == nil {
			c.one.complete(f.val, nil, fromAnywhere)
			return true
		}
		c.errs[i] = f.err
		if c.left == 0 {
			var zero T
			c.one.complete(zero, errors.Join(c.errs...), fromAnywhere)
		}
	}
	return false
}

// fail completes the combinator with err.
func (c *combiner[T]) fail(err error) {
	switch c.kind {
	case kindAll:
		c.all.complete(nil, err, fromAnywhere)
	case kindAllSettled:
		c.sets.complete(nil, err, fromAnywhere)
	default:
		var zero T
		c.one.complete(zero, err, fromAnywhere)
	}
}

// cancelRest cancels the inputs that have not completed.
func (c *combiner[T]) cancelRest() {
	for _, f := range c.ins {
		if !f.ready() {
			f.Cancel()
		}
	}
}
