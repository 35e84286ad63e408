package future_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/testkit/hooktest"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

var errHook = errors.New("hook test error")

func hkNew(t *testing.T) (*executor.Executor, *hooktest.Recorder) {
	ex := executor.New()
	t.Cleanup(func() { ex.Close() })
	rec := hooktest.New(ex)
	ex.AddHooks(rec.Hooks())
	return ex, rec
}

// hkOnLoop runs fn on the loop of a stepped executor and drives the loop
// until it is idle.
func hkOnLoop(t *testing.T, ex *executor.Executor, fn func()) {
	t.Helper()
	if err := ex.Submit(fn); err != nil {
		t.Fatal(err)
	}
	ex.RunUntilIdle()
}

// hkChain builds Node's promise benchmark op: a promise, a Then whose
// callback fails, a Transform that recovers; then resolves the promise.
func hkChain(ex *executor.Executor, rec *hooktest.Recorder) *future.Future[int] {
	p := future.NewPromise[int](ex)
	f1 := future.Then(p.Future(), func(v int) (int, error) {
		rec.Add("then cur=%d", ex.CurrentID())
		return 0, errHook
	})
	f2 := future.Transform(f1, func(v int, err error) (int, error) {
		rec.Add("transform cur=%d err=%v", ex.CurrentID(), err != nil)
		return 7, nil
	})
	p.Resolve(1)
	return f2
}

var hkChainEvents = []string{
	"init 1 future 0", "init 2 future 1", "init 3 future 2",
	"resolve 1",
	"before 2", "then cur=2", "resolve 2", "after 2",
	"before 3", "transform cur=3 err=true", "resolve 3", "after 3",
}

// Init before any Before; Before/After around each continuation, with the
// derived future's id current inside; a Then-derived future is triggered by
// its parent.
func TestHooksThenOrder(t *testing.T) {
	ex, rec := hkNew(t)
	var f *future.Future[int]
	hkOnLoop(t, ex, func() { f = hkChain(ex, rec) })
	rec.Check(t, hkChainEvents...)
	if v, err := f.Await(context.Background()); v != 7 || err != nil {
		t.Fatalf("chain = %d, %v", v, err)
	}
}

// The same chain built by a goroutine that does not hold the loop: every
// hook still runs on the loop, in the same order.
func TestHooksThenOrderOffLoop(t *testing.T) {
	ex, rec := hkNew(t)
	f := hkChain(ex, rec)
	if got := rec.Events(); len(got) != 0 {
		t.Fatalf("hooks ran before the loop: %v", got)
	}
	ex.RunUntilIdle()
	rec.Check(t, hkChainEvents...)
	if !f.Ready() {
		t.Fatal("chain not complete")
	}
}

// A Then made off the loop whose parent the loop resolves before the
// mailed Init reaches it: the continuation is queued ahead of the mailbox's
// drain task, and Init must still come before its Before.
func TestHooksInitBeforeBeforeOnRunningLoop(t *testing.T) {
	ex := executor.New()
	rec := hooktest.New(ex)
	h := rec.Hooks()
	h.Resolve = nil // no Resolve hook delivers the mailbox first
	ex.AddHooks(h)
	ex.Start()
	defer ex.Close()
	pr, err := spindletest.Await(t, future.Call(ex, func() (*future.Promise[int], error) {
		return future.NewPromise[int](ex), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	entered, made := make(chan struct{}), make(chan struct{})
	blocked := future.Call(ex, func() (int, error) {
		close(entered)
		<-made // hold the loop until the Then below exists
		pr.Resolve(1)
		return 0, nil
	})
	<-entered
	f := future.Then(pr.Future(), addOne) // Init mailed while the loop is held
	close(made)
	if v, err := spindletest.Await(t, f); v != 2 || err != nil {
		t.Fatalf("got %d, %v", v, err)
	}
	if _, err := spindletest.Await(t, blocked); err != nil {
		t.Fatal(err)
	}
	ex.Close()
	ev := rec.Events()
	// The ids: the first Call's (trigger 0), its promise's (made in the
	// Call: the Call is its trigger), the Then's (its trigger is the
	// promise). Ids made on the loop and off it do not follow one order.
	var call, promise, then hooks.ID
	for _, e := range ev {
		var id, trigger hooks.ID
		if _, err := fmt.Sscanf(e, "init %d future %d", &id, &trigger); err != nil {
			continue
		}
		switch {
		case call == 0 && trigger == 0:
			call = id
		case promise == 0 && trigger == call:
			promise = id
		case then == 0 && promise != 0 && trigger == promise:
			then = id
		}
	}
	initAt, beforeAt := -1, -1
	for i, e := range ev {
		switch e {
		case fmt.Sprintf("init %d future %d", then, promise):
			initAt = i
		case fmt.Sprintf("before %d", then):
			beforeAt = i
		}
	}
	if initAt < 0 || beforeAt < 0 || initAt > beforeAt {
		t.Fatalf("Init of the Then at %d, its Before at %d: %v", initAt, beforeAt, ev)
	}
	rec.Check(t, ev...) // all on the loop
}

// Resources made by a continuation are triggered by it; Call and Resolved
// are resources too.
func TestHooksTriggerIsCurrentResource(t *testing.T) {
	ex, rec := hkNew(t)
	hkOnLoop(t, ex, func() {
		p := future.NewPromise[int](ex)                  // 1
		future.Then(p.Future(), func(int) (int, error) { // 2
			future.NewPromise[int](ex)            // 3, triggered by 2
			future.Resolved(ex, 0)                // 4, triggered by 2
			future.Call(ex, func() (int, error) { // 5, triggered by 2
				rec.Add("call cur=%d", ex.CurrentID())
				return 0, nil
			})
			return 0, nil
		})
		p.Resolve(0)
	})
	rec.Check(t,
		"init 1 future 0", "init 2 future 1", "resolve 1",
		"before 2",
		"init 3 future 2",
		"init 4 future 2", "resolve 4",
		"init 5 future 2",
		"resolve 2", "after 2",
		"before 5", "call cur=5", "resolve 5", "after 5",
	)
}

// A spawned task is a resource: Before/After wrap each slice between its
// suspensions, and inside it CurrentID is the task's id.
func TestHooksSpawnSlices(t *testing.T) {
	ex, rec := hkNew(t)
	var p *future.Promise[int]
	var task *future.Future[int]
	hkOnLoop(t, ex, func() {
		task = future.Spawn(ex, func(ctx context.Context) (int, error) { // 1
			rec.Add("slice1 cur=%d", ex.CurrentID())
			p = future.NewPromise[int](ex) // 2, triggered by the task
			v, err := p.Future().Await(ctx)
			rec.Add("slice2 cur=%d", ex.CurrentID())
			return v, err
		})
	})
	hkOnLoop(t, ex, func() { p.Resolve(5) })
	rec.Check(t,
		"init 1 task 0",
		"before 1", "slice1 cur=1", "init 2 future 1", "after 1",
		"resolve 2",
		"before 1", "slice2 cur=1", "resolve 1", "after 1",
	)
	if v, err := task.Await(context.Background()); v != 5 || err != nil {
		t.Fatalf("task = %d, %v", v, err)
	}
}

// After remove returns nothing more is reported, and resources created
// afterwards get id 0.
func TestHooksRemoveStopsFutureCalls(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	rec := hooktest.New(ex)
	remove := ex.AddHooks(rec.Hooks())
	var p *future.Promise[int]
	hkOnLoop(t, ex, func() {
		p = future.NewPromise[int](ex)
		future.Then(p.Future(), func(v int) (int, error) {
			rec.Add("cur=%d", ex.CurrentID())
			return v, nil
		})
	})
	hkOnLoop(t, ex, func() {
		remove()
		p.Resolve(1)
		future.Then(future.Resolved(ex, 1), func(v int) (int, error) {
			rec.Add("new cur=%d", ex.CurrentID())
			return v, nil
		})
	})
	// The Then made while the hooks were registered keeps its id (its
	// continuation still knows which resource it resolves), but no hook runs.
	rec.Check(t, "init 1 future 0", "init 2 future 1", "cur=2", "new cur=0")
}

// A panicking hook is reported to the panic handler; the continuation runs
// once and its future completes.
func TestHooksPanickingHook(t *testing.T) {
	var panics spindletest.Panics
	ex := executor.New(executor.WithPanicHandler(panics.Handler))
	defer ex.Close()
	ex.AddHooks(hooks.Hooks{
		Init:    func(hooks.ID, hooks.Kind, hooks.ID) { panic("init") },
		Before:  func(hooks.ID) { panic("before") },
		After:   func(hooks.ID) { panic("after") },
		Resolve: func(hooks.ID) { panic("resolve") },
	})
	runs := 0
	var f *future.Future[int]
	hkOnLoop(t, ex, func() {
		f = future.Then(future.Resolved(ex, 1), func(v int) (int, error) {
			runs++
			return v + 1, nil
		})
	})
	if v, err := f.Await(context.Background()); v != 2 || err != nil || runs != 1 {
		t.Fatalf("continuation ran %d times, result %d, %v", runs, v, err)
	}
	want := []any{"init", "resolve", "init", "before", "resolve", "after"}
	if got := panics.Got(); !slices.Equal(got, want) {
		t.Fatalf("panic handler got %v, want %v", got, want)
	}
}

// hkDrive collects garbage and runs the loop until cond holds, a bounded
// number of times.
func hkDrive(ex *executor.Executor, cond func() bool) bool {
	for range 200 {
		if cond() {
			return true
		}
		runtime.GC()
		runtime.Gosched()
		ex.RunUntilIdle()
	}
	return cond()
}

// Destroy fires once, on the loop, for each dropped resource created while
// a Destroy hook is registered, and never for the others.
func TestHooksDestroyOnlyWhenRegistered(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var mu sync.Mutex
	created := map[hooks.ID]bool{}
	destroyed := map[hooks.ID]int{}
	offLoop := 0
	ex.AddHooks(hooks.Hooks{Init: func(id hooks.ID, _ hooks.Kind, _ hooks.ID) {
		mu.Lock()
		created[id] = true
		mu.Unlock()
	}})
	build := func() {
		hkOnLoop(t, ex, func() {
			p := future.NewPromise[int](ex)
			future.Transform(future.Then(p.Future(), addOne), func(v int, err error) (int, error) { return v, err })
			future.Spawn(ex, func(context.Context) (int, error) { return 1, nil })
			p.Resolve(1)
		})
	}
	build() // 4 resources, untracked: no Destroy hook yet
	mu.Lock()
	untracked := len(created)
	mu.Unlock()
	if untracked != 4 {
		t.Fatalf("%d resources, want 4", untracked)
	}
	ex.AddHooks(hooks.Hooks{Destroy: func(id hooks.ID) {
		mu.Lock()
		if !ex.OnLoop() {
			offLoop++
		}
		destroyed[id]++
		mu.Unlock()
	}})
	build() // ids 5..8, tracked
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(destroyed) >= 4
	}
	if !hkDrive(ex, done) {
		mu.Lock()
		t.Fatalf("destroyed %v after 200 collections, want ids 5..8", destroyed)
	}
	for range 5 { // more collections report nothing twice
		runtime.GC()
		ex.RunUntilIdle()
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range destroyed {
		if id <= hooks.ID(untracked) || id > hooks.ID(2*untracked) || n != 1 {
			t.Fatalf("destroyed %v, want ids %d..%d once each", destroyed, untracked+1, 2*untracked)
		}
	}
	if offLoop != 0 {
		t.Fatalf("%d Destroy calls off the loop", offLoop)
	}
}

// ---- async-local storage through futures and tasks ----

var hkReq = hooks.NewStorage[string]()

// Two requests interleaved on one loop, each with chains, a task and a
// Call, resolved by each other: each continuation sees its own request.
func TestStorageIsolationBetweenRequests(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var mu sync.Mutex
	var bad []string
	seen := map[string]int{}
	see := func(req, where string) {
		v, _ := hkReq.Get(ex)
		mu.Lock()
		seen[req]++
		if v != req {
			bad = append(bad, fmt.Sprintf("%s saw %q at %s", req, v, where))
		}
		mu.Unlock()
	}
	type request struct {
		name string
		in   *future.Promise[int] // resolved by the other request
		out  *future.Future[int]
	}
	reqs := []*request{{name: "a"}, {name: "b"}}
	hkOnLoop(t, ex, func() {
		for i, r := range reqs {
			hkReq.Run(ex, r.name, func() {
				r.in = future.NewPromise[int](ex)
				other := reqs[1-i]
				f := future.Then(r.in.Future(), func(v int) (int, error) {
					see(r.name, "then")
					return v + 1, nil
				})
				t := future.Spawn(ex, func(ctx context.Context) (int, error) {
					see(r.name, "task start")
					v, err := f.Await(ctx)
					see(r.name, "task resumed")
					if err := future.Yield(ctx); err != nil {
						return 0, err
					}
					see(r.name, "task after yield")
					return v, err
				})
				c := future.Call(ex, func() (int, error) {
					see(r.name, "call")
					if other.in != nil {
						other.in.Resolve(10) // resolve the other request's input from here
					}
					return 1, nil
				})
				r.out = future.Transform(t, func(v int, err error) (int, error) {
					see(r.name, "transform")
					return v, err
				})
				c.OnComplete(func(int, error) { see(r.name, "oncomplete") })
			})
		}
		reqs[0].in.Resolve(20) // from outside both requests
	})
	for _, r := range reqs {
		if !r.out.Ready() {
			t.Fatalf("request %s not done", r.name)
		}
	}
	if len(bad) != 0 {
		t.Fatalf("context crossed requests: %v", bad)
	}
	if seen["a"] != 7 || seen["b"] != 7 {
		t.Fatalf("continuations seen: %v, want 7 each", seen)
	}
}

// A task keeps its value across suspensions, and a Run inside the task
// holds across an Await in it.
func TestStorageSpawnAwait(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var got []string
	get := func(where string) {
		v, _ := hkReq.Get(ex)
		got = append(got, where+"="+v)
	}
	var p1, p2 *future.Promise[int]
	var task *future.Future[int]
	hkOnLoop(t, ex, func() {
		p1, p2 = future.NewPromise[int](ex), future.NewPromise[int](ex)
		hkReq.Run(ex, "task", func() {
			task = future.Spawn(ex, func(ctx context.Context) (int, error) {
				get("start")
				if _, err := p1.Future().Await(ctx); err != nil {
					return 0, err
				}
				get("resumed")
				hkReq.Run(ex, "inner", func() {
					_, _ = p2.Future().Await(ctx)
					get("inner resumed")
				})
				get("after inner")
				return 0, nil
			})
		})
	})
	hkOnLoop(t, ex, func() { hkReq.Run(ex, "resolver", func() { p1.Resolve(1) }) })
	resolved := make(chan struct{})
	go func() { // from a goroutine that does not hold the loop
		p2.Resolve(2)
		close(resolved)
	}()
	<-resolved
	ex.RunUntilIdle()
	if _, err := result(t, task); err != nil {
		t.Fatal(err)
	}
	want := []string{"start=task", "resumed=task", "inner resumed=inner", "after inner=task"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// Sleep, OnCancel and combinators carry the value too; Call from a
// goroutine that does not hold the loop carries none.
func TestStorageSleepCancelCombinators(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	got := map[string]string{}
	get := func(where string) {
		v, _ := hkReq.Get(ex)
		got[where] = v
	}
	hkOnLoop(t, ex, func() {
		hkReq.Run(ex, "r", func() {
			future.Then(future.Sleep(ex, 0), func(struct{}) (int, error) { get("sleep"); return 0, nil })
			p := future.NewPromise[int](ex)
			p.OnCancel(func() { get("oncancel") })
			p.Future().Cancel()
			a, b := future.NewPromise[int](ex), future.NewPromise[int](ex)
			future.Then(future.All(a.Future(), b.Future()), func([]int) (int, error) { get("all"); return 0, nil })
			hkReq.Run(ex, "other", func() { ex.Post(func() { a.Resolve(1); b.Resolve(2) }) })
		})
	})
	f := future.Call(ex, func() (int, error) { get("offloop call"); return 0, nil })
	for !f.Ready() {
		ex.RunUntilIdle()
	}
	want := map[string]string{"sleep": "r", "oncancel": "r", "all": "r", "offloop call": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s saw %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// Binding fixes a callback that a loop-side pool calls on behalf of
// whoever releases a slot.
func TestStorageBindPool(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var waiters []func() // a pool's queue of plain callbacks
	var got []string
	hkOnLoop(t, ex, func() {
		for _, r := range []string{"w1", "w2"} {
			hkReq.Run(ex, r, func() {
				waiters = append(waiters, hooks.Bind(ex, func() {
					v, _ := hkReq.Get(ex)
					got = append(got, v)
				}))
			})
		}
		hkReq.Run(ex, "releaser", func() {
			future.Then(future.Resolved(ex, 0), func(int) (int, error) {
				for _, w := range waiters {
					w()
				}
				v, _ := hkReq.Get(ex)
				got = append(got, v)
				return 0, nil
			})
		})
	})
	if want := []string{"w1", "w2", "releaser"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// Registering continuations and reading the value in an unchanged frame
// allocates exactly what it allocates outside any Run.
func TestStorageNoExtraAllocs(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	op := func() {
		p := future.NewPromise[int](ex)
		future.Transform(future.Then(p.Future(), addOne), func(v int, err error) (int, error) { return v, err })
		p.Resolve(1)
		if _, ok := hkReq.Get(ex); ok {
			_ = ok
		}
	}
	var outside, inside float64
	hkOnLoop(t, ex, func() {
		outside = testing.AllocsPerRun(200, op)
		hkReq.Run(ex, "r", func() { inside = testing.AllocsPerRun(200, op) })
	})
	if inside != outside {
		t.Fatalf("allocs per op: %v under Run, %v outside", inside, outside)
	}
}
