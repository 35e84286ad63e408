package main

// BenchmarkHooks: the cost of lifecycle hooks and async-local storage, on
// the shape of Node's async_hooks/promises.js benchmark. One op creates a
// promise, chains a Then whose callback returns an error and a Transform
// that turns it back into a value, resolves the promise, and waits for the
// chain; as in Node's await loop, the Transform's continuation starts the
// next op, so all ops run on the loop, one after the other, and one
// RunUntilIdle drives the whole run. Figures are per op (3 resources, 2
// continuations).
//
//	none           no hooks ever registered
//	disabled       Init, Before, After, Resolve added and removed again
//	enabled        Init, Before, After, Resolve registered
//	init_only      Init registered
//	with_destroy   all five registered: every resource is tracked for Destroy
//	storage        no hooks; the ops run under Storage.Run and the Then
//	               callback calls Get
//	addcleanup_raw no hooks; the op plus runtime.AddCleanup on its three
//	               resources: the raw price of the tracking with_destroy pays

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
)

type hooksMode int

const (
	hooksNone hooksMode = iota
	hooksDisabled
	hooksEnabled
	hooksInitOnly
	hooksWithDestroy
	hooksStorage
	hooksAddCleanupRaw
)

func init() {
	for _, c := range []struct {
		name string
		mode hooksMode
	}{
		{"none", hooksNone},
		{"disabled", hooksDisabled},
		{"enabled", hooksEnabled},
		{"init_only", hooksInitOnly},
		{"with_destroy", hooksWithDestroy},
		{"storage", hooksStorage},
		{"addcleanup_raw", hooksAddCleanupRaw},
	} {
		base := "none"
		if c.mode == hooksNone {
			base = ""
		}
		register(benchCase{Group: "Hooks", Name: c.name, Unit: "op", Baseline: base, Fn: func(b *testing.B) { benchHooks(b, c.mode) }})
	}
}

var errHooksOp = errors.New("hooks: op failed")

// hooksCalls counts hook calls, so that they are not empty functions the
// compiler could see through, and cleanups of addcleanup_raw.
var hooksCalls, hooksCleanups atomic.Uint64

// hooksOp runs the ops one after the other on the loop.
type hooksOp struct {
	ex      *executor.Executor
	n, N    int
	store   *hooks.Storage[int]
	track   bool
	calls   uint64 // loop-owned count of hook calls
	bad     int
	thenFn  func(int) (int, error)
	catchFn func(int, error) (int, error)
}

func newHooksOp(ex *executor.Executor, n int) *hooksOp {
	o := &hooksOp{ex: ex, N: n}
	o.thenFn = func(v int) (int, error) {
		if o.store != nil {
			if s, ok := o.store.Get(o.ex); !ok || s != 42 {
				o.bad++
			}
		}
		return 0, errHooksOp
	}
	o.catchFn = func(v int, err error) (int, error) {
		if err != errHooksOp {
			o.bad++
		}
		o.n++
		if o.n < o.N {
			o.start()
		}
		return 1, nil
	}
	return o
}

func (o *hooksOp) start() {
	p := future.NewPromise[int](o.ex)
	f := future.Then(p.Future(), o.thenFn)
	g := future.Transform(f, o.catchFn)
	if o.track {
		runtime.AddCleanup(p, hooksCleanup, 0)
		runtime.AddCleanup(f, hooksCleanup, 0)
		runtime.AddCleanup(g, hooksCleanup, 0)
	}
	p.Resolve(o.n)
}

func hooksCleanup(int) { hooksCleanups.Add(1) }

// set returns the hooks a mode registers: plain functions that count.
func (o *hooksOp) set(mode hooksMode) hooks.Hooks {
	id := func(hooks.ID) { o.calls++ }
	h := hooks.Hooks{
		Init: func(hooks.ID, hooks.Kind, hooks.ID) { o.calls++ },
	}
	switch mode {
	case hooksInitOnly:
		return h
	case hooksWithDestroy:
		h.Destroy = id
	}
	h.Before, h.After, h.Resolve = id, id, id
	return h
}

func benchHooks(b *testing.B, mode hooksMode) {
	ex := executor.New()
	defer ex.Close()
	o := newHooksOp(ex, b.N)
	switch mode {
	case hooksDisabled:
		ex.AddHooks(o.set(hooksEnabled))()
	case hooksEnabled, hooksInitOnly, hooksWithDestroy:
		defer ex.AddHooks(o.set(mode))()
	case hooksStorage:
		o.store = hooks.NewStorage[int]()
	case hooksAddCleanupRaw:
		o.track = true
	}
	first := func() {
		if o.store != nil {
			o.store.Run(ex, 42, o.start) // the frame every later op inherits
			return
		}
		o.start()
	}
	// Warm up: the queue's ring and the allocator's spans.
	warm := newHooksOp(ex, 100)
	warm.store, warm.track, warm.thenFn = o.store, o.track, o.thenFn
	ex.Submit(func() {
		if o.store != nil {
			o.store.Run(ex, 42, warm.start)
			return
		}
		warm.start()
	})
	ex.RunUntilIdle()
	runtime.GC()

	t0 := ex.Stats().TasksRun
	c0 := o.calls
	m := startMeter(b)
	if err := ex.Submit(first); err != nil {
		b.Fatal(err)
	}
	ex.RunUntilIdle()
	m.Stop(b, "op", float64(b.N), float64(ex.Stats().TasksRun-t0))
	switch {
	case o.n != b.N || o.bad != 0:
		b.Fatalf("ran %d ops (want %d), %d bad results", o.n, b.N, o.bad)
	case (mode == hooksEnabled || mode == hooksWithDestroy) && o.calls-c0 < uint64(8*b.N):
		b.Fatalf("%d hook calls for %d ops, want at least 8 per op", o.calls-c0, b.N)
	case mode == hooksInitOnly && o.calls-c0 != uint64(3*b.N):
		b.Fatalf("%d Init calls for %d ops, want 3 per op", o.calls-c0, b.N)
	case (mode == hooksNone || mode == hooksDisabled || mode == hooksStorage) && o.calls != 0:
		b.Fatalf("%d hook calls without hooks", o.calls)
	}
	hooksCalls.Add(o.calls)
}
