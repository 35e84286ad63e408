package executor_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPostFIFO(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var got []int
	ex.Drive(func() {
		for i := range 1000 {
			ex.Post(func() {
				got = append(got, i)
				if i%10 == 0 { // work posted by a task runs after what was queued before it
					ex.Post(func() { got = append(got, 1000+i) })
				}
			})
		}
	})
	var want []int
	for i := range 1000 {
		want = append(want, i)
	}
	for i := 0; i < 1000; i += 10 {
		want = append(want, 1000+i)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("order differs: got %v", got[:20])
	}
}

func TestSubmitPerSubmitterOrder(t *testing.T) {
	const goroutines, per = 8, 20000
	ex := executor.New()
	ex.Start()
	next := make([]int, goroutines) // loop-owned
	var bad atomic.Int64
	var ran atomic.Int64
	all := make(chan struct{})
	spindletest.Parallel(goroutines, func(g int) {
		for i := range per {
			err := ex.Submit(func() {
				if next[g] != i {
					bad.Add(1)
				}
				next[g] = i + 1
				if ran.Add(1) == goroutines*per {
					close(all)
				}
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	select {
	case <-all:
	case <-spindletest.Context(t).Done():
		t.Fatalf("only %d of %d submitted callbacks ran", ran.Load(), goroutines*per)
	}
	ex.Close()
	if bad.Load() != 0 {
		t.Fatalf("%d callbacks ran out of their submitter's order", bad.Load())
	}
	if got := ex.Stats().TasksRun; got != goroutines*per {
		t.Fatalf("TasksRun = %d, want %d", got, goroutines*per)
	}
	for g, n := range next {
		if n != per {
			t.Fatalf("submitter %d: %d callbacks ran, want %d", g, n, per)
		}
	}
}

func TestTimersFireInDeadlineOrder(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	var got []int
	done := make(chan struct{})
	delays := []int{7, 3, 9, 1, 5, 3, 0, 8}
	var stopped *executor.Timer
	ex.Submit(func() {
		for i, d := range delays {
			tm := ex.AfterFunc(time.Duration(d)*time.Millisecond, func() {
				got = append(got, i)
				if len(got) == len(delays)-1 {
					close(done)
				}
			})
			if i == 2 {
				stopped = tm
			}
		}
		if !stopped.Stop() {
			t.Error("Stop of a pending timer returned false")
		}
		if stopped.Stop() {
			t.Error("second Stop returned true")
		}
	})
	select {
	case <-done:
	case <-spindletest.Context(t).Done():
		t.Fatal("timers did not fire")
	}
	// Deadline order; equal deadlines (index 1 and 5) in start order; index 2 stopped.
	want := []int{6, 3, 1, 5, 4, 0, 7}
	var fired []int
	if err := ex.Submit(func() { fired = slices.Clone(got) }); err != nil {
		t.Fatal(err)
	}
	ex.Shutdown(context.Background()) // drains: the Submit runs
	if !slices.Equal(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
}

// Loop-only calls made off the loop panic at once, naming the safe
// alternative, instead of being lost.
func TestLoopOnlyCallsOffLoopPanic(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	spindletest.MustPanic(t, "executor: ", "use Submit", func() { ex.Post(func() {}) })
	spindletest.MustPanic(t, "executor: ", "inside Submit", func() { ex.AfterFunc(0, func() {}) })
	ex.Start()
	spindletest.MustPanic(t, "executor: ", "use Submit", func() { ex.Post(func() {}) })
	if n := ex.Stats().Queued; n != 0 {
		t.Fatalf("Queued = %d after refused Posts, want 0", n)
	}
}

func TestTimerStopFromOtherGoroutineAndStats(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ran := false
	var tm *executor.Timer
	ex.Drive(func() { tm = ex.AfterFunc(time.Hour, func() { ran = true }) })
	if n := ex.Stats().Timers; n != 1 {
		t.Fatalf("Stats().Timers = %d, want 1", n)
	}
	if !tm.Stop() {
		t.Fatal("Stop returned false for a pending timer")
	}
	if n := ex.Stats().Timers; n != 0 {
		t.Fatalf("Stats().Timers after Stop = %d, want 0", n)
	}
	fired := make(chan struct{})
	ex.Drive(func() { ex.AfterFunc(0, func() { close(fired) }) })
	for {
		ex.RunUntilIdle()
		select {
		case <-fired:
			if ran {
				t.Fatal("stopped timer ran")
			}
			return
		default:
		}
	}
}

func TestTimersDoNotStarveBehindLocalWork(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	spins := 0
	fired := false
	var spin func()
	spin = func() { // an endless burst of local work until the timer fires
		spins++
		if !fired {
			ex.Post(spin)
		}
	}
	ex.Drive(func() {
		ex.AfterFunc(time.Millisecond, func() { fired = true })
		ex.Post(spin)
	})
	if !fired {
		t.Fatal("loop went idle before the timer fired")
	}
	if spins < 2 {
		t.Fatalf("spins = %d", spins)
	}
}

func TestSubmitNotStarvedByLocalWork(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	var stop atomic.Bool
	var spin func()
	spin = func() {
		if !stop.Load() {
			ex.Post(spin)
		}
	}
	if err := ex.Submit(spin); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	if err := ex.Submit(func() { close(ran); stop.Store(true) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-spindletest.Context(t).Done():
		t.Fatal("submitted callback starved by a burst of posted work")
	}
}

func TestShutdownDrains(t *testing.T) {
	ex := executor.New()
	var order []string
	ex.Submit(func() {
		order = append(order, "a")
		ex.Post(func() {
			order = append(order, "b")
			ex.Post(func() { order = append(order, "c") })
		})
	})
	// Nobody runs the loop: Shutdown drains it on this goroutine.
	if err := ex.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"a", "b", "c"}) {
		t.Fatalf("drained %v", order)
	}
	if err := ex.Submit(func() {}); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Submit after Shutdown: %v, want ErrClosed", err)
	}
	if err := ex.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := ex.Run(context.Background()); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
	select {
	case <-ex.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
}

func TestShutdownRefusesSubmitWhileDraining(t *testing.T) {
	ex := executor.New()
	ex.Start()
	var during error
	got := make(chan struct{})
	ex.Submit(func() {
		ex.Shutdown(context.Background()) // from the loop: begins the shutdown and returns
		during = ex.Submit(func() { t.Error("callback submitted during drain ran") })
		ex.Post(func() { close(got) }) // posted work still drains
	})
	ex.Shutdown(context.Background())
	select {
	case <-got:
	default:
		t.Fatal("work posted during the drain did not run")
	}
	if !errors.Is(during, executor.ErrClosed) {
		t.Fatalf("Submit during drain: %v", during)
	}
}

func TestShutdownDeadline(t *testing.T) {
	ex := executor.New()
	ex.Start()
	var spin func()
	spin = func() { ex.Post(spin) } // never drains
	ex.Submit(spin)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := ex.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want DeadlineExceeded", err)
	}
	if err := ex.Close(); err != nil { // waits for the loop to stop
		t.Fatal(err)
	}
}

func TestRunContextEndsLoop(t *testing.T) {
	ex := executor.New()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ex.Run(ctx) }()
	started := make(chan struct{})
	ex.Submit(func() { close(started) })
	<-started
	if err := ex.Run(context.Background()); !errors.Is(err, executor.ErrRunning) {
		t.Fatalf("second Run: %v, want ErrRunning", err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	if !ex.Closed() {
		t.Fatal("executor not closed after Run's ctx ended")
	}
	if err := ex.Submit(func() {}); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Submit: %v", err)
	}
}

func TestStartTwicePanics(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("second Start did not panic")
		}
	}()
	ex.Start()
}

func TestPanicGoesToHandlerAndLoopSurvives(t *testing.T) {
	var got []any
	ex := executor.New(executor.WithPanicHandler(func(v any) { got = append(got, v) }))
	defer ex.Close()
	after := false
	ex.Drive(func() {
		ex.Post(func() { panic("first") })
		ex.Post(func() { panic("second") })
		ex.Post(func() { after = true })
	})
	if !slices.Equal(got, []any{"first", "second"}) {
		t.Fatalf("handler got %v", got)
	}
	if !after {
		t.Fatal("loop stopped after a panic")
	}
}

func TestHandlerPanicDoesNotKillLoop(t *testing.T) {
	ex := executor.New(executor.WithPanicHandler(func(v any) { panic("handler") }))
	defer ex.Close()
	after := false
	ex.Drive(func() {
		ex.Post(func() { panic("x") })
		ex.Post(func() { after = true })
	})
	if !after {
		t.Fatal("loop stopped after the panic handler panicked")
	}
}

func TestBadInput(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	cases := []struct {
		name string
		fn   func()
	}{
		{"Post nil", func() { ex.Post(nil) }},
		{"Submit nil", func() { ex.Submit(nil) }},
		{"AfterFunc nil", func() { ex.AfterFunc(0, nil) }},
		{"WithPanicHandler nil", func() { executor.WithPanicHandler(nil) }},
		//lint:ignore SA1012 passing nil is the mistake under test
		{"Run nil ctx", func() { ex.Run(nil) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if s, ok := r.(string); !ok || len(s) < 10 || s[:10] != "executor: " {
					t.Fatalf("panic %v does not start with \"executor: \"", r)
				}
			}()
			c.fn()
		})
	}
}

func TestOnLoopAndStats(t *testing.T) {
	ex := executor.New(executor.WithName("stats"))
	defer ex.Close()
	if ex.OnLoop() {
		t.Fatal("OnLoop true off the loop")
	}
	var inside bool
	var st executor.Stats
	ex.Drive(func() {
		inside = ex.OnLoop()
		ex.Post(func() {})
		ex.Post(func() {})
		st = ex.Stats()
	})
	if !inside {
		t.Fatal("OnLoop false inside a callback")
	}
	if st.Queued != 2 || st.TasksRun != 0 { // Drive's fn is not a task
		t.Fatalf("Stats on the loop = %+v, want Queued 2, TasksRun 0", st)
	}
	if got := ex.Stats().TasksRun; got != 2 {
		t.Fatalf("Stats().TasksRun after Drive = %d, want 2", got)
	}
	if ex.Name() != "stats" {
		t.Fatalf("Name = %q", ex.Name())
	}
}

func TestRunUntilIdleWhileRunningPanics(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	defer func() {
		if recover() == nil {
			t.Fatal("RunUntilIdle while the loop runs did not panic")
		}
	}()
	ex.RunUntilIdle()
}

func TestShutdownWhileNobodyRunsTheLoop(t *testing.T) {
	ex := executor.New()
	ran := false
	ex.Submit(func() { ran = true })
	// Shutdown from another goroutine while nobody runs the loop drains it.
	done := make(chan struct{})
	go func() { ex.Shutdown(context.Background()); close(done) }()
	<-done
	if !ran {
		t.Fatal("queued work not drained by Shutdown")
	}
	if n := ex.RunUntilIdle(); n != 0 {
		t.Fatalf("RunUntilIdle on a closed executor ran %d", n)
	}
}

func TestPostAfterClosePanics(t *testing.T) {
	ex := executor.New()
	var post func()
	ex.Drive(func() { post = func() { ex.Post(func() {}) } })
	ex.Close()
	defer func() {
		if recover() == nil {
			t.Fatal("Post after close did not panic")
		}
	}()
	post()
}

func TestFrameFollowsPostAndTimers(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var v1, v2 string
	s := hooks.NewStorage[string]()
	ex.Drive(func() {
		s.Run(ex, "v", func() {
			ex.Post(func() { v1, _ = s.Get(ex) })
			ex.AfterFunc(0, func() { v2, _ = s.Get(ex) })
		})
		if _, ok := s.Get(ex); ok {
			t.Error("value leaked out of Storage.Run")
		}
	})
	if v1 != "v" || v2 != "v" {
		t.Fatalf("values %q %q, want v v", v1, v2)
	}
}

func TestDrive(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var order []string
	ex.Submit(func() { order = append(order, "submitted") })
	n := ex.Drive(func() {
		if !ex.OnLoop() {
			t.Error("Drive's fn does not hold the loop")
		}
		order = append(order, "fn")
		ex.Post(func() { order = append(order, "posted") })
	})
	if n != 2 {
		t.Fatalf("Drive ran %d tasks, want 2 (fn is not counted)", n)
	}
	if !slices.Equal(order, []string{"fn", "submitted", "posted"}) {
		t.Fatalf("order %v", order)
	}
	if ex.OnLoop() {
		t.Fatal("caller still holds the loop after Drive")
	}
	func() {
		defer func() {
			if recover() != "boom" {
				t.Fatal("a panic in Drive's fn did not reach the caller")
			}
		}()
		ex.Drive(func() { panic("boom") })
	}()
	if got := ex.Drive(func() {}); got != 0 { // the loop was given up: Drive works again
		t.Fatalf("Drive after a panic ran %d tasks", got)
	}
}

// The queue and the inbox give back what a burst made them grow to once
// the burst has drained and the loop has stayed idle for a while (250 ms):
// memory follows live work.
func TestBurstMemoryIsGivenBack(t *testing.T) {
	const burst = 1_000_000
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	ran := 0
	fn := func() { ran++ }
	before := spindletest.HeapInUse()
	submitThenPost(t, ex, burst, fn)
	if n, _ := future.Do(context.Background(), ex, func() (int, error) { return ran, nil }); n != 2*burst {
		t.Fatalf("ran %d, want %d", n, 2*burst)
	}
	grown, after := heapComesBack(t, ex, before, 1<<20, nil)
	t.Logf("heap after %d Submits and %d Posts, drained and idle: %+d B after %v", burst, burst, grown, after)
}

// submitThenPost submits fn n times from the caller, then posts it n times
// from the loop, and returns once the Posts are made.
func submitThenPost(t *testing.T, ex *executor.Executor, n int, fn func()) {
	t.Helper()
	for range n {
		if err := ex.Submit(fn); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := future.Do(context.Background(), ex, func() (int, error) {
		for range n {
			ex.Post(fn)
		}
		return 0, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// heapComesBack waits until the live heap has come back to within limit
// bytes of before (and done, if not nil, says the work has finished), and
// returns how far above before it is and how long that took. The loop gives
// memory back on its own once it has been idle for a while (it looks every
// 50 ms). On a loaded machine the work and that while both take long (a
// loop starved of CPU took 37 s to take 250,000 due timers off its heap
// under the race detector), so the test fails only once nothing has moved
// for the safety bound (while the work is not done, the loop's counts of
// tasks run, queued and timers pending have not changed; the heap has not
// come down), or after ten times that in all.
func heapComesBack(t *testing.T, ex *executor.Executor, before, limit int64, done func() bool) (int64, time.Duration) {
	t.Helper()
	start := time.Now()
	type work struct {
		ran           uint64
		queued, timer int
	}
	now := func() work { s := ex.Stats(); return work{s.TasksRun, s.Queued, s.Timers} }
	moved, low, last := start, int64(math.MaxInt64), now()
	for {
		grown := spindletest.HeapInUse() - before
		finished := done == nil || done()
		if grown < limit && finished {
			return grown, time.Since(start).Round(time.Millisecond)
		}
		at := time.Now()
		if grown < low-limit/4 {
			low, moved = grown, at
		}
		if w := now(); !finished && w != last {
			last, moved = w, at
		}
		if at.Sub(moved) > spindletest.Safety || at.Sub(start) > 10*spindletest.Safety {
			t.Fatalf("the executor keeps %d B (want under %d; work finished: %v) after %v, the last %v without progress",
				grown, limit, finished, at.Sub(start).Round(time.Millisecond), at.Sub(moved).Round(time.Millisecond))
		}
		<-time.After(50 * time.Millisecond)
	}
}

// Close called from a callback drops the rest of the batch; called from a
// goroutine while a callback runs, it lets no more than that callback run.
func TestCloseDropsTheRestOfTheBatch(t *testing.T) {
	t.Run("from a callback", func(t *testing.T) {
		ex := executor.New()
		ran := 0
		ex.Drive(func() {
			ex.Post(func() { ex.Close() })
			for range 100 {
				ex.Post(func() { ran++ })
			}
		})
		ex.Close()
		if ran != 0 {
			t.Fatalf("%d of the 100 callbacks queued behind Close ran", ran)
		}
	})
	t.Run("from a goroutine", func(t *testing.T) {
		ex := executor.New()
		ex.Start()
		var ran atomic.Int32
		started := make(chan struct{})
		if err := ex.Submit(func() {
			for range 126 {
				ex.Post(func() { ran.Add(1) })
			}
			close(started)
			for !ex.Closed() && ex.Submit(func() {}) == nil {
				runtime.Gosched() // until Close has begun
			}
		}); err != nil {
			t.Fatal(err)
		}
		<-started
		ex.Close()
		if n := ran.Load(); n != 0 {
			t.Fatalf("%d callbacks ran after Close was called", n)
		}
	})
}

// The timer heap gives its memory back once its timers have fired or been
// stopped, cancelled Sleeps included.
func TestTimerHeapIsGivenBack(t *testing.T) {
	timers := spindletest.Scale(1_000_000)
	for _, how := range []string{"stopped", "fired", "cancelled sleeps"} {
		ex := executor.New()
		ex.Start()
		defer ex.Close() // a failed wait below must not leave the loop running
		before := spindletest.HeapInUse()
		if _, err := future.Do(context.Background(), ex, func() (int, error) {
			for range timers {
				switch how {
				case "stopped":
					ex.AfterFunc(time.Hour, func() {}).Stop()
				case "fired":
					ex.AfterFunc(0, func() {})
				default:
					future.Sleep(ex, time.Hour).Cancel()
				}
			}
			return 0, nil
		}); err != nil {
			t.Fatal(err)
		}
		grown, after := heapComesBack(t, ex, before, 256<<10, func() bool { return ex.Stats().Timers == 0 })
		t.Logf("%s: heap after %d timers: %+d B after %v", how, timers, grown, after)
		ex.Close()
	}
}

// The queue gives back what a burst made it grow to even while ordinary
// traffic keeps coming: every millisecond a service's worth of requests
// (300 Submits at once, then a call that waits for them), so the loop is
// never idle for long and often has a few hundred items to run, but its
// queue stays small next to what the burst made it grow to.
func TestBurstMemoryIsGivenBackUnderTraffic(t *testing.T) {
	burst := spindletest.Scale(1_000_000)
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	before := spindletest.HeapInUse()
	stop := make(chan struct{})
	traffic := make(chan struct{})
	go func() {
		defer close(traffic)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				for range 300 {
					_ = ex.Submit(func() {})
				}
				_, _ = future.Call(ex, func() (int, error) { return 0, nil }).Await(context.Background())
			}
		}
	}()
	defer func() { close(stop); <-traffic }()
	fn := func() {}
	submitThenPost(t, ex, burst, fn)
	grown, after := heapComesBack(t, ex, before, 1<<20, nil)
	t.Logf("heap after a burst of %d Submits and %d Posts, under 1 ms traffic: %+d B after %v", burst, burst, grown, after)
}
