package loop_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/testkit/hooktest"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// A timer is a resource: Init when it is started (triggered by the
// continuation that started it), Before and After around its callback, in
// which CurrentID is the timer's id.
func TestHooksTimerOrder(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	rec := hooktest.New(ex)
	ex.AddHooks(rec.HooksWithDestroy())
	ex.Drive(func() {
		if id := ex.CurrentID(); id != 0 {
			t.Errorf("CurrentID in a Submit callback = %d, want 0", id)
		}
		ex.AfterFunc(0, func() {
			rec.Add("outer cur=%d", ex.CurrentID())
			ex.AfterFunc(0, func() { rec.Add("inner cur=%d", ex.CurrentID()) })
		})
	})
	rec.Check(t,
		"init 1 timer 0",
		"before 1", "outer cur=1", "init 2 timer 1", "after 1",
		"before 2", "inner cur=2", "after 2",
	)
	if id := ex.CurrentID(); id != 0 {
		t.Fatalf("CurrentID off the loop = %d, want 0", id)
	}
}

func TestWithHooksOption(t *testing.T) {
	var rec *hooktest.Recorder
	ex := executor.New(executor.WithHooks(hooks.Hooks{
		Init: func(id hooks.ID, kind hooks.Kind, trigger hooks.ID) { rec.Hook("init %d %v %d", id, kind, trigger) },
	}))
	defer ex.Close()
	rec = hooktest.New(ex)
	if !lp(ex).HooksEnabled() || lp(ex).DestroyHooked() {
		t.Fatalf("HooksEnabled %v DestroyHooked %v, want true false", lp(ex).HooksEnabled(), lp(ex).DestroyHooked())
	}
	ex.Drive(func() { ex.AfterFunc(time.Hour, func() {}).Stop() })
	rec.Check(t, "init 1 timer 0")
}

// Registering only nil callbacks is registering nothing.
func TestAddHooksAllNil(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	remove := ex.AddHooks(hooks.Hooks{})
	defer remove()
	if lp(ex).HooksEnabled() {
		t.Fatal("HooksEnabled with only nil callbacks")
	}
	if id := lp(ex).NewResource(hooks.KindFuture, 0); id != 0 {
		t.Fatalf("NewResource = %d, want 0", id)
	}
}

// After remove returns no new hook call starts; a continuation whose Before
// ran still gets its After (from the loop), and a hook added during a
// continuation does not get an After without a Before.
func TestHooksRemoveStopsCalls(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	rec := hooktest.New(ex)
	remove := ex.AddHooks(rec.HooksWithDestroy())
	var late *hooktest.Recorder
	ex.Drive(func() {
		ex.AfterFunc(0, func() {
			remove()
			remove() // idempotent
			late = hooktest.New(ex)
			ex.AddHooks(hooks.Hooks{After: func(id hooks.ID) { late.Hook("after %d", id) }})
			ex.AfterFunc(0, func() { rec.Add("second timer") })
		})
		ex.AfterFunc(0, func() { rec.Add("timer of a removed hook") })
	})
	rec.Check(t,
		"init 1 timer 0", "init 2 timer 0",
		"before 1", "after 1",
		"timer of a removed hook",
		"second timer",
	)
	// The hook added during timer 1 gets no After for it (its Before ran
	// before the hook existed), but does for the continuations after it.
	late.Check(t, "after 2", "after 3")

	// From another goroutine.
	rec2 := hooktest.New(ex)
	remove2 := ex.AddHooks(rec2.HooksWithDestroy())
	done := make(chan struct{})
	go func() { remove2(); close(done) }()
	<-done
	ex.Drive(func() { ex.AfterFunc(0, func() {}) })
	rec2.Check(t)
}

// A panicking hook goes to the panic handler; the continuation still runs,
// once, and the other hooks still run.
func TestHookPanicGoesToHandler(t *testing.T) {
	var panics spindletest.Panics
	ex := executor.New(executor.WithPanicHandler(panics.Handler))
	defer ex.Close()
	rec := hooktest.New(ex)
	ex.AddHooks(hooks.Hooks{
		Init:   func(hooks.ID, hooks.Kind, hooks.ID) { panic("init") },
		Before: func(hooks.ID) { panic("before") },
		After:  func(hooks.ID) { panic("after") },
	})
	ex.AddHooks(rec.HooksWithDestroy())
	runs := 0
	ex.Drive(func() { ex.AfterFunc(0, func() { runs++ }) })
	if runs != 1 {
		t.Fatalf("continuation ran %d times, want 1", runs)
	}
	rec.Check(t, "init 1 timer 0", "before 1", "after 1")
	if !slices.Equal(panics.Got(), []any{"init", "before", "after"}) {
		t.Fatalf("panic handler got %v, want [init before after]", panics.Got())
	}
}

// A panicking continuation still gets its After, and the loop goes on.
func TestHooksAfterOnPanickingContinuation(t *testing.T) {
	var got any
	ex := executor.New(executor.WithPanicHandler(func(v any) { got = v }))
	defer ex.Close()
	rec := hooktest.New(ex)
	ex.AddHooks(rec.HooksWithDestroy())
	ex.Drive(func() {
		ex.AfterFunc(0, func() { panic("cb") })
		ex.AfterFunc(0, func() { rec.Add("next cur=%d", ex.CurrentID()) })
	})
	if got != "cb" {
		t.Fatalf("panic handler got %v", got)
	}
	rec.Check(t, "init 1 timer 0", "init 2 timer 0", "before 1", "after 1", "before 2", "next cur=2", "after 2")
}

// Events raised by a goroutine that does not hold the loop are reported on
// the loop, in order, before what that goroutine submits afterwards.
func TestHookEventsFromOtherGoroutinesRunOnLoop(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	rec := hooktest.New(ex)
	ex.AddHooks(rec.HooksWithDestroy())
	id := lp(ex).NewResource(hooks.KindFuture, 0)
	id2 := lp(ex).NewResource(hooks.KindTask, id)
	lp(ex).ResolveHook(id)
	ex.Submit(func() { rec.Add("submitted") })
	if got := rec.Events(); len(got) != 0 {
		t.Fatalf("hooks ran before the loop did: %v", got)
	}
	ex.RunUntilIdle()
	rec.Check(t,
		fmt.Sprintf("init %d future 0", id),
		fmt.Sprintf("init %d task %d", id2, id),
		fmt.Sprintf("resolve %d", id),
		"submitted",
	)
	// One drain task serves a burst, in order.
	rec.Reset()
	before := ex.Stats().TasksRun
	var want []string
	for range 500 {
		id := lp(ex).NewResource(hooks.KindFuture, 0)
		lp(ex).ResolveHook(id)
		want = append(want, fmt.Sprintf("init %d future 0", id), fmt.Sprintf("resolve %d", id))
	}
	ex.RunUntilIdle()
	if n := ex.Stats().TasksRun - before; n != 1 {
		t.Fatalf("1000 events took %d tasks, want 1", n)
	}
	rec.Check(t, want...)
}

// An event raised on the loop for a resource whose Init is still in the
// mailbox comes after that Init.
func TestHookInitBeforeResolveAcrossGoroutines(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	rec := hooktest.New(ex)
	ex.AddHooks(rec.HooksWithDestroy())
	var id hooks.ID
	got := make(chan struct{})
	ex.Start()
	ex.Submit(func() {
		// Wait, on the loop, for a resource created elsewhere, then resolve
		// it here before the mailbox's drain task has run.
		<-got
		lp(ex).ResolveHook(id)
	})
	id = lp(ex).NewResource(hooks.KindFuture, 0)
	close(got)
	done := make(chan struct{})
	ex.Submit(func() { close(done) })
	select {
	case <-done:
	case <-spindletest.Context(t).Done():
		t.Fatal("loop stuck")
	}
	ex.Close()
	rec.Check(t, fmt.Sprintf("init %d future 0", id), fmt.Sprintf("resolve %d", id))
}

// Destroy fires once per tracked resource after it is collected; nothing is
// reported without a Destroy hook.
func TestDestroyAfterGC(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	rec := hooktest.New(ex)
	remove := ex.AddHooks(hooks.Hooks{Init: func(hooks.ID, hooks.Kind, hooks.ID) {}})
	if lp(ex).DestroyHooked() {
		t.Fatal("DestroyHooked without a Destroy hook")
	}
	lp(ex).ReportDestroy(lp(ex).NewResource(hooks.KindFuture, 0)) // no Destroy hook: dropped
	removeD := ex.AddHooks(hooks.Hooks{Destroy: func(id hooks.ID) { rec.Hook("destroy %d", id) }})
	if !lp(ex).DestroyHooked() {
		t.Fatal("DestroyHooked false with a Destroy hook")
	}
	const n = 10
	var ids []hooks.ID
	func() {
		for range n {
			obj := new([4]uint64) // pointer-free but not tiny
			id := lp(ex).NewResource(hooks.KindFuture, 0)
			loop.TrackDestroy(lp(ex), obj, id)
			ids = append(ids, id)
		}
	}()
	want := map[string]bool{}
	for _, id := range ids {
		want[fmt.Sprintf("destroy %d", id)] = true
	}
	for attempt := 0; attempt < 200 && len(rec.Events()) < n; attempt++ {
		runtime.GC()
		ex.RunUntilIdle()
		if attempt > 20 {
			runtime.Gosched()
		}
	}
	got := rec.Events()
	if len(got) != n {
		t.Fatalf("got %d destroys %v, want %d", len(got), got, n)
	}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("unexpected %q (want %v)", g, ids)
		}
		delete(want, g)
	}
	rec.Check(t, got...)
	removeD()
	remove()
}

// With no hooks, creating a resource and running continuations allocate
// nothing for hooks.
func TestNoHooksFastPath(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	if n := testing.AllocsPerRun(100, func() {
		if lp(ex).NewResource(hooks.KindFuture, 0) != 0 {
			t.Fatal("id without hooks")
		}
		lp(ex).ResolveHook(0)
	}); n != 0 {
		t.Fatalf("%v allocs", n)
	}
	// Added then removed: back to the fast path.
	ex.AddHooks(hooks.Hooks{Init: func(hooks.ID, hooks.Kind, hooks.ID) {}})()
	if lp(ex).HooksEnabled() || lp(ex).NewResource(hooks.KindFuture, 0) != 0 {
		t.Fatal("hooks still enabled after remove")
	}
}

// Hook calls with hooks enabled do not allocate on the loop.
func TestEnabledHooksDoNotAllocate(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	calls := 0
	ex.AddHooks(hooks.Hooks{
		Init:    func(hooks.ID, hooks.Kind, hooks.ID) { calls++ },
		Resolve: func(hooks.ID) { calls++ },
	})
	var allocs float64
	ex.Drive(func() {
		allocs = testing.AllocsPerRun(100, func() {
			id := lp(ex).NewResource(hooks.KindFuture, 0)
			lp(ex).ResolveHook(id)
		})
	})
	if allocs != 0 || calls == 0 {
		t.Fatalf("%v allocs, %d calls", allocs, calls)
	}
}

// Many goroutines raising events and registering hooks at once: run with
// -race.
func TestHooksConcurrent(t *testing.T) {
	ex := executor.New()
	ex.Start()
	var mu sync.Mutex
	inits := map[hooks.ID]bool{}
	resolvedBeforeInit := 0
	ex.AddHooks(hooks.Hooks{
		Init: func(id hooks.ID, _ hooks.Kind, _ hooks.ID) {
			mu.Lock()
			inits[id] = true
			mu.Unlock()
		},
		Resolve: func(id hooks.ID) {
			mu.Lock()
			if !inits[id] {
				resolvedBeforeInit++
			}
			mu.Unlock()
		},
	})
	spindletest.Parallel(8, func(int) {
		for range 200 {
			id := lp(ex).NewResource(hooks.KindFuture, 0)
			lp(ex).ResolveHook(id)
			ex.AddHooks(hooks.Hooks{Before: func(hooks.ID) {}})()
		}
	})
	ex.Shutdown(context.Background()) // drains the mailed events
	mu.Lock()
	defer mu.Unlock()
	if len(inits) != 8*200 || resolvedBeforeInit != 0 {
		t.Fatalf("%d inits (want %d), %d resolves before their init", len(inits), 8*200, resolvedBeforeInit)
	}
}

// ---- async-local storage on the executor ----

var reqID = hooks.NewStorage[string]()

// The value follows Post, Submit and AfterFunc made from the loop, and
// whatever those schedule in turn; Run restores the frame when it returns.
func TestStorageFollowsLoopScheduling(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var got []string
	see := func(what string) {
		v, ok := reqID.Get(ex)
		got = append(got, fmt.Sprintf("%s=%s/%v", what, v, ok))
	}
	ex.Drive(func() {
		reqID.Run(ex, "r1", func() {
			ex.Post(func() {
				see("post")
				ex.Post(func() { see("post.post") })
			})
			if err := ex.Submit(func() { see("submit") }); err != nil {
				t.Error(err)
			}
			ex.AfterFunc(0, func() {
				see("timer")
				ex.AfterFunc(0, func() { see("timer.timer") })
			})
		})
		see("after-run")
		ex.Post(func() { see("outside") })
	})
	want := []string{
		"after-run=/false", "post=r1/true", "submit=r1/true", "outside=/false",
		"post.post=r1/true", "timer=r1/true", "timer.timer=r1/true",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// Timers with real delays on a running loop keep their frame.
func TestStorageTimersOnRunningLoop(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	res := make(chan string, 2)
	ex.Submit(func() {
		for _, r := range []string{"a", "b"} {
			reqID.Run(ex, r, func() {
				d := time.Millisecond
				if r == "a" {
					d = 3 * time.Millisecond
				}
				ex.AfterFunc(d, func() {
					v, _ := reqID.Get(ex)
					res <- r + "=" + v
				})
			})
		}
	})
	for range 2 {
		select {
		case s := <-res:
			if s != "a=a" && s != "b=b" {
				t.Fatalf("timer saw %s", s)
			}
		case <-spindletest.Context(t).Done():
			t.Fatal("timers did not fire")
		}
	}
}

// Two requests interleaved on one loop each see only their own value.
func TestStorageIsolationInterleaved(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	user := hooks.NewStorage[int]()
	mismatches := 0
	steps := map[string]int{}
	var step func(req string, want int, n int)
	step = func(req string, want int, n int) {
		v, _ := reqID.Get(ex)
		u, _ := user.Get(ex)
		if v != req || u != want {
			mismatches++
		}
		steps[req]++
		if n == 0 {
			return
		}
		if n%2 == 0 {
			ex.Post(func() { step(req, want, n-1) })
		} else {
			ex.AfterFunc(0, func() { step(req, want, n-1) })
		}
	}
	ex.Drive(func() {
		for i, req := range []string{"a", "b", "c"} {
			reqID.Run(ex, req, func() {
				user.Run(ex, i, func() { step(req, i, 20) })
			})
		}
	})
	if mismatches != 0 || steps["a"] != 21 || steps["b"] != 21 || steps["c"] != 21 {
		t.Fatalf("%d mismatches, steps %v", mismatches, steps)
	}
}

// Submit from a goroutine that does not hold the loop carries no value; a
// bound callback submitted from there brings its own.
func TestStorageOffLoop(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	if _, ok := reqID.Get(ex); ok {
		t.Fatal("Get off the loop reported a value")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Run off the loop did not panic")
			}
		}()
		reqID.Run(ex, "x", func() {})
	}()
	var bound func()
	var gotPlain, gotBound string
	ex.Drive(func() {
		reqID.Run(ex, "req", func() {
			bound = hooks.Bind(ex, func() { gotBound, _ = reqID.Get(ex) })
		})
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ex.Submit(func() { gotPlain, _ = reqID.Get(ex) })
		ex.Submit(bound)
	}()
	<-done
	ex.RunUntilIdle()
	if gotPlain != "" || gotBound != "req" {
		t.Fatalf("plain %q bound %q, want \"\" req", gotPlain, gotBound)
	}
}

// Carrying an unchanged frame allocates nothing: a Post and a Get under Run
// cost what a Post costs outside it.
func TestStorageNoAllocsWhenFrameUnchanged(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	noop := func() {}
	measure := func() float64 {
		return testing.AllocsPerRun(1000, func() {
			ex.Post(noop)
			reqID.Get(ex)
		})
	}
	var outside, inside float64
	ex.Drive(func() {
		measure() // grow the queue
		outside = measure()
		reqID.Run(ex, "x", func() { inside = measure() })
	})
	if inside != outside || inside != 0 {
		t.Fatalf("allocs per Post+Get: %v under Run, %v outside", inside, outside)
	}
}

// Events mailed from another goroutine are reported with the empty frame
// and CurrentID 0, even when the loop delivers them from inside a
// continuation.
func TestMailedHooksSeeNoContext(t *testing.T) {
	ex := executor.New()
	var mu sync.Mutex
	var seen []string
	ex.AddHooks(hooks.Hooks{Init: func(id hooks.ID, _ hooks.Kind, trigger hooks.ID) {
		v, ok := reqID.Get(ex)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("init %d trigger %d cur %d value %q %v", id, trigger, ex.CurrentID(), v, ok))
		mu.Unlock()
	}})
	ex.Start()
	defer ex.Close()
	entered, made, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	ex.Submit(func() {
		reqID.Run(ex, "req", func() {
			ex.AfterFunc(0, func() { // timer 1, Init on the loop under "req"
				close(entered)
				<-made
				ex.AfterFunc(time.Hour, func() {}).Stop() // timer 2 flushes the mailbox first
				close(done)
			})
		})
	})
	<-entered
	off := lp(ex).NewResource(hooks.KindFuture, 0) // mailed while the loop is in timer 1
	close(made)
	select {
	case <-done:
	case <-spindletest.Context(t).Done():
		t.Fatal("stuck")
	}
	ex.Close()
	mu.Lock()
	defer mu.Unlock()
	// Ids follow the order of creation (timer 1, off, then timer 2, made
	// after made closed), not necessarily consecutive.
	var later hooks.ID
	if len(seen) == 3 {
		_, _ = fmt.Sscanf(seen[2], "init %d", &later)
	}
	if off <= 1 || later <= off {
		t.Fatalf("ids 1, %d, %d: want them increasing in creation order\n%s", off, later, strings.Join(seen, "\n"))
	}
	want := []string{
		`init 1 trigger 0 cur 0 value "req" true`,
		fmt.Sprintf(`init %d trigger 0 cur 0 value "" false`, off),
		fmt.Sprintf(`init %d trigger 1 cur 1 value "req" true`, later),
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// Timers are tracked for Destroy like futures, also when started by a
// goroutine that does not hold the loop (their id comes from the loop).
func TestDestroyTimers(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	rec := hooktest.New(ex)
	ex.AddHooks(rec.HooksWithDestroy())
	ex.Drive(func() { ex.AfterFunc(0, func() {}) }) // 1, on the loop
	lp(ex).AfterFuncClose(0, func() {}, nil)        // 2, off the loop: its id comes from the loop
	ex.RunUntilIdle()
	destroyed := func() (n int) {
		for _, e := range rec.Events() {
			if strings.HasPrefix(e, "destroy") {
				n++
			}
		}
		return n
	}
	for attempt := 0; attempt < 200 && destroyed() < 2; attempt++ {
		runtime.GC()
		runtime.Gosched()
		ex.RunUntilIdle()
	}
	got := rec.Events()
	if !slices.Contains(got, "init 2 timer 0") || !slices.Contains(got, "destroy 1") || !slices.Contains(got, "destroy 2") {
		t.Fatalf("events %v: want both timers initialised and destroyed", got)
	}
}

// Hooks added in the middle of a batch wrap the continuations that follow
// in the same batch.
func TestHooksAddedMidBatch(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	rec := hooktest.New(ex)
	ex.Drive(func() {
		ex.AddHooks(rec.HooksWithDestroy())
		p := future.NewPromise[int](ex)
		future.Then(p.Future(), func(v int) (int, error) {
			rec.Add("then cur=%d", ex.CurrentID())
			return v, nil
		})
		p.Resolve(1) // queues the Then callback in the running batch
	})
	rec.Check(t, "init 1 future 0", "init 2 future 1", "resolve 1", "before 2", "then cur=2", "resolve 2", "after 2")
}

// A combinator's fold runs as a continuation of the combinator's future.
func TestHooksCombinatorEntriesWrapped(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	rec := hooktest.New(ex)
	ex.AddHooks(hooks.Hooks{Before: func(id hooks.ID) { rec.Hook("before %d", id) }})
	var cur []hooks.ID
	ex.Drive(func() {
		p := future.NewPromise[int](ex) // 1
		all := future.All(p.Future())   // 2
		all.OnComplete(func([]int, error) { cur = append(cur, ex.CurrentID()) })
		p.Resolve(1)
	})
	rec.Check(t, "before 2", "before 2")
	if !slices.Equal(cur, []hooks.ID{2}) {
		t.Fatalf("OnComplete of All ran with CurrentID %v, want [2]", cur)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lp is the loop behind ex.
func lp(ex *executor.Executor) *loop.Loop { return (*loop.Loop)(ex) }

// Ids stay unique while the loop and other goroutines make resources at
// once, start at 1, and increase in creation order on the loop, also
// across the blocks of ids the loop takes from the shared counter; an id
// made on the loop after one made off it is the larger.
func TestHookIDsUniqueOnAndOffLoop(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.AddHooks(hooks.Hooks{Init: func(hooks.ID, hooks.Kind, hooks.ID) {}})
	const perSide, goroutines = 1000, 3
	var onLoop []hooks.ID
	off := make([][]hooks.ID, goroutines)
	ex.Start()
	done := make(chan struct{})
	if err := ex.Submit(func() {
		defer close(done)
		for range perSide {
			onLoop = append(onLoop, lp(ex).NewResource(hooks.KindFuture, 0))
		}
	}); err != nil {
		t.Fatal(err)
	}
	spindletest.Parallel(goroutines, func(i int) {
		for range perSide {
			off[i] = append(off[i], lp(ex).NewResource(hooks.KindFuture, 0))
		}
	})
	<-done
	seen := make(map[hooks.ID]bool)
	for _, ids := range append(off, onLoop) {
		for _, id := range ids {
			if id == 0 || seen[id] {
				t.Fatalf("id %d given twice (or 0)", id)
			}
			seen[id] = true
		}
	}
	if !slices.IsSorted(onLoop) {
		t.Fatalf("ids made on the loop out of order: %v", onLoop)
	}
	if _, one := seen[1]; !one {
		t.Fatal("no resource got id 1")
	}
	// Off the loop, then on it: the loop skips the rest of its block.
	offID := lp(ex).NewResource(hooks.KindFuture, 0)
	got := make(chan hooks.ID, 1)
	if err := ex.Submit(func() { got <- lp(ex).NewResource(hooks.KindFuture, 0) }); err != nil {
		t.Fatal(err)
	}
	onID := spindletest.Recv(t, got)
	if onID <= offID {
		t.Fatalf("id made on the loop after %d (off it) is %d, want it larger", offID, onID)
	}
}
