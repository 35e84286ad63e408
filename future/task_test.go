package future

// White-box tests of spawned tasks: they may look at the waiter links and
// the task's fiber to set up the races they check.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

var errTask = errors.New("task error")

// outcome returns the result of f, which must be ready.
func outcome[T any](t testing.TB, f *Future[T]) (T, error) {
	t.Helper()
	if !f.Ready() {
		t.Fatal("future is not ready")
	}
	return f.Await(context.Background())
}

// roundTrip returns once the loop has run everything queued on it before
// the call (Submit is FIFO per submitter).
func roundTrip(t testing.TB, ex *executor.Executor) {
	t.Helper()
	if _, err := spindletest.Await(t, Call(ex, func() (struct{}, error) { return struct{}{}, nil })); err != nil {
		t.Fatalf("round trip: %v", err)
	}
}

// Two tasks interleave on one loop: A suspends in Await, B runs and resolves
// what A waits for, and A resumes after B has finished its slice.
func TestSpawnInterleaving(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	p := NewPromise[int](ex)
	var log []string
	a := Spawn(ex, func(ctx context.Context) (int, error) {
		log = append(log, "A start")
		v, err := p.Future().Await(ctx)
		log = append(log, fmt.Sprintf("A resumed %d onLoop=%v", v, ex.OnLoop()))
		return v * 10, err
	})
	ex.RunUntilIdle()
	if s := ex.Stats().Suspended; s != 1 || a.Ready() {
		t.Fatalf("after the first slice: Suspended=%d Ready=%v, want 1 and false", s, a.Ready())
	}
	b := Spawn(ex, func(ctx context.Context) (string, error) {
		log = append(log, "B start")
		p.Resolve(4)
		log = append(log, "B resolved")
		return "b", nil
	})
	ex.RunUntilIdle()
	want := "A start|B start|B resolved|A resumed 4 onLoop=true"
	if got := strings.Join(log, "|"); got != want {
		t.Fatalf("order\n got %s\nwant %s", got, want)
	}
	if v, err := outcome(t, a); v != 40 || err != nil {
		t.Fatalf("A = (%v, %v)", v, err)
	}
	if v, err := outcome(t, b); v != "b" || err != nil {
		t.Fatalf("B = (%v, %v)", v, err)
	}
	if s := ex.Stats().Suspended; s != 0 {
		t.Fatalf("Suspended = %d after both tasks finished", s)
	}
}

// Tasks await each other, Then-derived futures and Calls.
func TestSpawnAwaitsOtherFutures(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	p := NewPromise[int](ex)
	outer := Spawn(ex, func(ctx context.Context) (int, error) {
		inner := Spawn(ex, func(ctx context.Context) (int, error) {
			return p.Future().Await(ctx)
		})
		th := Then(inner, func(v int) (int, error) { return v + 1, nil })
		c := Call(ex, func() (int, error) { return 100, nil })
		v1, err := th.Await(ctx)
		if err != nil {
			return 0, err
		}
		v2, err := c.Await(ctx)
		return v1 + v2, err
	})
	ex.RunUntilIdle()
	if outer.Ready() {
		t.Fatal("outer task finished before its input")
	}
	p.Resolve(1)
	ex.RunUntilIdle()
	if v, err := outcome(t, outer); v != 102 || err != nil {
		t.Fatalf("outer = (%v, %v), want (102, nil)", v, err)
	}
}

// A task suspended on a future that another goroutine resolves while the
// loop runs elsewhere resumes with the value, on the loop.
func TestSpawnAwaitResolvedFromAnotherGoroutine(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Start()
	p := NewPromise[string](ex)
	task := Spawn(ex, func(ctx context.Context) (string, error) {
		v, err := p.Future().Await(ctx)
		if !ex.OnLoop() {
			return "", errors.New("task resumed off the loop")
		}
		return v + "!", err
	})
	// The task has run its first slice and is suspended.
	susp, err := spindletest.Await(t, Call(ex, func() (int, error) { return ex.Stats().Suspended, nil }))
	if err != nil || susp != 1 {
		t.Fatalf("Suspended = %d (%v), want 1", susp, err)
	}
	go p.Resolve("hi")
	if v, err := spindletest.Await(t, task); v != "hi!" || err != nil {
		t.Fatalf("task = (%q, %v)", v, err)
	}
}

// Await of a ready future inside a task returns at once: the task is not
// suspended, so work queued before the Await runs only after the task's
// slice.
func TestSpawnAwaitReadyDoesNotSuspend(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	p := NewPromise[int](ex)
	p.Resolve(2)
	var log []string
	var ranBefore, ranAfter uint64
	var suspendedSeen int
	task := Spawn(ex, func(ctx context.Context) (int, error) {
		ex.Post(func() { log = append(log, "posted") })
		ranBefore = ex.Stats().TasksRun
		a, err1 := Resolved(ex, 1).Await(ctx)
		b, err2 := p.Future().Await(ctx)
		_, err3 := Failed[int](ex, errTask).Await(ctx)
		ranAfter = ex.Stats().TasksRun
		suspendedSeen = ex.Stats().Suspended
		log = append(log, "after await")
		if err1 != nil || err2 != nil || !errors.Is(err3, errTask) {
			return 0, fmt.Errorf("errors %v %v %v", err1, err2, err3)
		}
		return a + b, nil
	})
	ex.RunUntilIdle()
	if v, err := outcome(t, task); v != 3 || err != nil {
		t.Fatalf("task = (%v, %v)", v, err)
	}
	if got := strings.Join(log, ","); got != "after await,posted" {
		t.Fatalf("order %q: Await of a ready future suspended the task", got)
	}
	if ranBefore != ranAfter || suspendedSeen != 0 {
		t.Fatalf("TasksRun %d -> %d, Suspended %d across Await of ready futures", ranBefore, ranAfter, suspendedSeen)
	}
}

func TestYield(t *testing.T) {
	t.Run("lets_queued_work_run", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		var log []string
		task := Spawn(ex, func(ctx context.Context) (int, error) {
			ex.Post(func() { log = append(log, "posted") })
			log = append(log, "yield")
			if err := Yield(ctx); err != nil {
				return 0, err
			}
			log = append(log, "resumed")
			// A context derived from the task's works too.
			type key struct{}
			if err := Yield(context.WithValue(ctx, key{}, 1)); err != nil {
				return 0, err
			}
			return 1, nil
		})
		ex.RunUntilIdle()
		if _, err := outcome(t, task); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(log, ","); got != "yield,posted,resumed" {
			t.Fatalf("order %q, want yield,posted,resumed", got)
		}
	})

	t.Run("tasks_take_turns", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		var log []string
		body := func(name string) func(context.Context) (int, error) {
			return func(ctx context.Context) (int, error) {
				for i := range 3 {
					log = append(log, fmt.Sprint(name, i))
					if err := Yield(ctx); err != nil {
						return 0, err
					}
				}
				return 0, nil
			}
		}
		Spawn(ex, body("A"))
		Spawn(ex, body("B"))
		ex.RunUntilIdle()
		if got := strings.Join(log, " "); got != "A0 B0 A1 B1 A2 B2" {
			t.Fatalf("order %q, want A0 B0 A1 B1 A2 B2", got)
		}
	})

	t.Run("outside_a_task_panics", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Yield") {
					t.Fatalf("Yield off the loop: recover() = %v, want a panic naming Yield", r)
				}
			}()
			_ = Yield(context.Background())
		}()
		var got any
		Call(ex, func() (int, error) {
			defer func() { got = recover() }()
			_ = Yield(context.Background())
			return 0, nil
		})
		// A task's ctx used by another task.
		var leaked context.Context
		Spawn(ex, func(ctx context.Context) (int, error) { leaked = ctx; return 0, nil })
		var got2 any
		Spawn(ex, func(ctx context.Context) (int, error) {
			defer func() { got2 = recover() }()
			_ = Yield(leaked)
			return 0, nil
		})
		ex.RunUntilIdle()
		if got == nil || got2 == nil {
			t.Fatalf("Yield on the loop outside its task: %v / %v, want panics", got, got2)
		}
	})
}

// Cancelling a task's future cancels its context: a suspended task resumes
// with context.Canceled and its ctx.Done() is closed.
func TestTaskCancel(t *testing.T) {
	cases := []struct {
		name       string
		doneBefore bool // call ctx.Done() before suspending
		derive     bool // await with a context derived from the task's
	}{
		{"own_ctx", false, false},
		{"own_ctx_Done_before", true, false},
		{"derived_ctx", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			p := NewPromise[int](ex)
			var awaitErr, ctxErr error
			var doneClosed, finished bool
			task := Spawn(ex, func(ctx context.Context) (int, error) {
				var done <-chan struct{}
				if c.doneBefore {
					done = ctx.Done()
				}
				if ctx.Err() != nil {
					return 0, errors.New("ctx ended before cancellation")
				}
				wctx := ctx
				if c.derive {
					var cancel context.CancelFunc
					wctx, cancel = context.WithCancel(ctx)
					defer cancel()
				}
				_, awaitErr = p.Future().Await(wctx)
				if !c.doneBefore {
					done = ctx.Done()
				}
				select {
				case <-done:
					doneClosed = true
				default:
				}
				ctxErr = ctx.Err()
				finished = true
				return 7, awaitErr
			})
			ex.RunUntilIdle()
			if ex.Stats().Suspended != 1 {
				t.Fatal("task did not suspend")
			}
			if !task.Cancel() {
				t.Fatal("Cancel of a running task returned false")
			}
			ex.RunUntilIdle()
			if !finished {
				t.Fatal("cancelled task did not resume and finish")
			}
			if !errors.Is(awaitErr, context.Canceled) || !errors.Is(ctxErr, context.Canceled) || !doneClosed {
				t.Fatalf("Await err %v, ctx.Err %v, Done closed %v; want Canceled, Canceled, true", awaitErr, ctxErr, doneClosed)
			}
			if _, err := outcome(t, task); !errors.Is(err, context.Canceled) {
				t.Fatalf("task future = %v, want context.Canceled", err)
			}
			if s := ex.Stats().Suspended; s != 0 {
				t.Fatalf("Suspended = %d", s)
			}
			// Cancelling the task does not cancel what it awaited.
			if !p.Resolve(1) {
				t.Fatal("the awaited promise was completed by the task's cancellation")
			}
			ex.RunUntilIdle()
		})
	}

	t.Run("from_foreign_goroutine", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		ex.Start()
		p := NewPromise[int](ex)
		errs := make(chan error, 1)
		task := Spawn(ex, func(ctx context.Context) (int, error) {
			_, err := p.Future().Await(ctx)
			errs <- err
			return 0, err
		})
		roundTrip(t, ex)
		go task.Cancel()
		if err := spindletest.Recv(t, errs); !errors.Is(err, context.Canceled) {
			t.Fatalf("Await in a cancelled task = %v", err)
		}
		if _, err := spindletest.Await(t, task); !errors.Is(err, context.Canceled) {
			t.Fatalf("task = %v", err)
		}
	})

	t.Run("before_start", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		ran := false
		task := Spawn(ex, func(ctx context.Context) (int, error) { ran = true; return 1, nil })
		task.Cancel()
		ex.RunUntilIdle()
		if ran {
			t.Fatal("body of a task cancelled before it started ran")
		}
		if _, err := outcome(t, task); !errors.Is(err, context.Canceled) {
			t.Fatalf("task = %v", err)
		}
	})
}

func TestTaskContext(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	type key struct{}
	task := Spawn(ex, func(ctx context.Context) (string, error) {
		if _, ok := ctx.Deadline(); ok {
			return "", errors.New("task ctx has a deadline")
		}
		if ctx.Err() != nil || ctx.Value(key{}) != nil {
			return "", errors.New("fresh task ctx is not empty")
		}
		select {
		case <-ctx.Done():
			return "", errors.New("fresh task ctx is done")
		default:
		}
		return "ok", nil
	})
	ex.RunUntilIdle()
	if v, err := outcome(t, task); v != "ok" || err != nil {
		t.Fatalf("(%q, %v)", v, err)
	}
}

// Close releases suspended tasks with executor.ErrClosed; they unwind and
// their goroutines exit.
func TestCloseReleasesSuspendedTasks(t *testing.T) {
	for _, started := range []bool{false, true} {
		t.Run(fmt.Sprintf("started=%v", started), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ex := executor.New()
			defer ex.Close()
			p := NewPromise[int](ex)
			const n = 40
			type res struct {
				awaitErr, again, yield error
				done                   bool
				ctxErr                 error
			}
			results := make([]res, n)
			tasks := make([]*Future[int], n)
			for i := range tasks {
				tasks[i] = Spawn(ex, func(ctx context.Context) (int, error) {
					r := &results[i]
					_, r.awaitErr = p.Future().Await(ctx)
					// A body that ignores the error and waits again is
					// refused at once.
					_, r.again = Sleep(ex, time.Hour).Await(ctx)
					r.yield = Yield(ctx)
					select {
					case <-ctx.Done():
						r.done = true
					default:
					}
					r.ctxErr = ctx.Err()
					return i, r.awaitErr
				})
			}
			if started {
				ex.Start()
				roundTrip(t, ex)
			} else {
				ex.RunUntilIdle()
			}
			if err := ex.Close(); err != nil {
				t.Fatal(err)
			}
			for i, r := range results {
				if !errors.Is(r.awaitErr, executor.ErrClosed) || !errors.Is(r.again, executor.ErrClosed) || !errors.Is(r.yield, executor.ErrClosed) {
					t.Fatalf("task %d: Await %v, Await again %v, Yield %v; want executor.ErrClosed", i, r.awaitErr, r.again, r.yield)
				}
				if !r.done || r.ctxErr == nil {
					t.Fatalf("task %d: ctx not ended by Close (Done closed %v, Err %v)", i, r.done, r.ctxErr)
				}
				if _, err := outcome(t, tasks[i]); !errors.Is(err, executor.ErrClosed) {
					t.Fatalf("task %d future = %v", i, err)
				}
			}
		})
	}
}

// A task that waits for ever, with any kind of ctx, leaks no goroutine past
// Close.
func TestTaskThatNeverCompletesDoesNotLeak(t *testing.T) {
	cases := []struct {
		name string
		ctx  func(task context.Context) (context.Context, context.CancelFunc)
	}{
		{"own_ctx", func(c context.Context) (context.Context, context.CancelFunc) { return c, func() {} }},
		{"background", func(context.Context) (context.Context, context.CancelFunc) {
			return context.Background(), func() {}
		}},
		{"derived", func(c context.Context) (context.Context, context.CancelFunc) { return context.WithCancel(c) }},
		{"foreign_timeout", func(context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Hour)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ex := executor.New()
			defer ex.Close()
			ex.Start()
			p := NewPromise[int](ex) // nobody resolves it
			errs := make(chan error, 1)
			task := Spawn(ex, func(tctx context.Context) (int, error) {
				ctx, cancel := c.ctx(tctx)
				defer cancel()
				_, err := p.Future().Await(ctx)
				errs <- err
				return 0, err
			})
			roundTrip(t, ex)
			if task.Ready() {
				t.Fatal("task finished early")
			}
			if err := ex.Close(); err != nil {
				t.Fatal(err)
			}
			if err := spindletest.Recv(t, errs); !errors.Is(err, executor.ErrClosed) {
				t.Fatalf("Await released by Close with %v, want executor.ErrClosed", err)
			}
		})
	}
}

// Await inside a task with a context of its own that ends returns the
// context's error, and the task goes on.
func TestTaskAwaitForeignCtxDeadline(t *testing.T) {
	for _, derived := range []bool{false, true} {
		t.Run(fmt.Sprintf("derived=%v", derived), func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			ex.Start()
			p := NewPromise[int](ex)
			const d = 20 * time.Millisecond
			task := Spawn(ex, func(ctx context.Context) (int, error) {
				parent := context.Background()
				if derived {
					parent = ctx
				}
				wctx, cancel := context.WithTimeout(parent, d)
				defer cancel()
				_, err := p.Future().Await(wctx)
				if !errors.Is(err, context.DeadlineExceeded) {
					return 0, fmt.Errorf("Await with an expired ctx = %v", err)
				}
				if wctx.Err() == nil {
					return 0, errors.New("Await returned before its ctx ended")
				}
				if ctx.Err() != nil {
					return 0, errors.New("the task's own ctx ended with the foreign one")
				}
				// The task goes on: it waits again on the same future.
				go p.Resolve(9)
				return p.Future().Await(ctx)
			})
			if v, err := spindletest.Await(t, task); v != 9 || err != nil {
				t.Fatalf("task = (%v, %v), want (9, nil)", v, err)
			}
		})
	}
}

// 10,000 tasks sleep at the same time and all complete.
func TestManyTasksSleeping(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Start()
	const n = 10_000
	const d = 5 * time.Millisecond
	gate := NewPromise[struct{}](ex)
	fs, err := spindletest.Await(t, Call(ex, func() ([]*Future[time.Duration], error) {
		fs := make([]*Future[time.Duration], n)
		for i := range fs {
			fs[i] = Spawn(ex, func(ctx context.Context) (time.Duration, error) {
				if _, err := gate.Future().Await(ctx); err != nil {
					return 0, err
				}
				start := time.Now()
				_, err := Sleep(ex, d).Await(ctx)
				return time.Since(start), err
			})
		}
		return fs, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	susp, _ := spindletest.Await(t, Call(ex, func() (int, error) { return ex.Stats().Suspended, nil }))
	if susp != n {
		t.Fatalf("%d tasks suspended at the gate, want %d", susp, n)
	}
	gate.Resolve(struct{}{})
	ds, err := spindletest.Await(t, All(fs...))
	if err != nil {
		t.Fatal(err)
	}
	for i, el := range ds {
		if el < d {
			t.Fatalf("task %d slept %v, less than %v", i, el, d)
		}
	}
}

// Task goroutines are reused: running tasks one after the other does not
// create a goroutine per task.
func TestTaskGoroutinesAreReused(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	base := spindletest.Goroutines()
	for i := range 100 {
		p := NewPromise[int](ex)
		f := Spawn(ex, func(ctx context.Context) (int, error) { return p.Future().Await(ctx) })
		ex.RunUntilIdle()
		p.Resolve(i)
		ex.RunUntilIdle()
		if v, err := outcome(t, f); v != i || err != nil {
			t.Fatalf("task %d = (%v, %v)", i, v, err)
		}
	}
	if extra := spindletest.Goroutines() - base; extra > 1 {
		t.Fatalf("%d goroutines left for 100 sequential tasks, want at most 1", extra)
	}
}

// Inside a task, Await of a pending future bound to another executor must
// suspend the task and lend its loop to other work, like a future of its own
// executor.
func TestTaskAwaitFutureOfAnotherExecutor(t *testing.T) {
	exA := executor.New(executor.WithName("A"))
	defer exA.Close()
	exB := executor.New(executor.WithName("B"))
	defer exB.Close()
	exA.Start()
	exB.Start()
	pB := NewPromise[int](exB)
	task := Spawn(exA, func(ctx context.Context) (int, error) {
		v, err := pB.Future().Await(ctx)
		if !exA.OnLoop() {
			return 0, errors.New("task resumed off its loop")
		}
		return v + 1, err
	})
	// While the task waits for B's future, A's loop runs other work. The
	// short timeout only bounds the failure: a blocked loop never answers.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	susp, err := Call(exA, func() (int, error) { return exA.Stats().Suspended, nil }).Await(ctx)
	cancel()
	if err != nil {
		t.Errorf("A's loop ran nothing while its task awaited a future of executor B (%v): the task blocked the loop instead of suspending", err)
	} else if susp != 1 {
		t.Errorf("Suspended = %d while the task awaits B's future, want 1", susp)
	}
	pB.Resolve(41)
	if v, err := spindletest.Await(t, task); v != 42 || err != nil {
		t.Fatalf("task = (%v, %v), want (42, nil)", v, err)
	}
}

// blockWaiter is a waiter whose wake blocks the completing goroutine until
// released: it holds a completion in the middle of its list of waiters.
type blockWaiter struct {
	l                link
	entered, release chan struct{}
}

func (b *blockWaiter) wake(bool) {
	close(b.entered)
	<-b.release
}

// A task resumed by something other than its own wait link (here the end of
// the foreign ctx it awaits with) after the future completed but before the
// completer reached the task's link must not reuse that link for its next
// wait: the completer still reads it. Otherwise the completer follows it
// into the next future's waiters and runs their continuations before that
// future is resolved.
func TestTaskWaitLinkNotReusedWhileCompleterHoldsIt(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Start()
	pc, pd := NewPromise[int](ex), NewPromise[int](ex)
	bw := &blockWaiter{entered: make(chan struct{}), release: make(chan struct{})}
	bw.l.w = bw
	if !pc.f.addWaiter(&bw.l) {
		t.Fatal("could not link the blocking waiter")
	}
	// A continuation on d registered before the task waits on d.
	dThen := Then(pd.Future(), func(v int) (int, error) { return v, nil })

	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	firstDone := make(chan struct{})
	task := Spawn(ex, func(ctx context.Context) (int, error) {
		v, err := pc.Future().Await(wctx)
		close(firstDone)
		if err != nil {
			return 0, err
		}
		w, err := pd.Future().Await(ctx)
		return v + w, err
	})
	roundTrip(t, ex) // the task is suspended on c

	resolved := make(chan struct{})
	go func() {
		pc.Resolve(1) // blocks in bw.wake, before it reaches the task's link
		close(resolved)
	}()
	spindletest.Recv(t, bw.entered)
	wcancel() // wakes the task, which finds c done
	spindletest.Recv(t, firstDone)
	roundTrip(t, ex) // the task is suspended on d
	close(bw.release)
	spindletest.Recv(t, resolved)
	roundTrip(t, ex) // whatever the completer queued has run

	if dThen.Ready() {
		v, err := dThen.Await(context.Background())
		t.Errorf("a Then on d completed with (%v, %v) before d was resolved: "+
			"the completer of c followed the task's reused wait link into d's waiters", v, err)
	}
	pd.Resolve(2)
	if v, err := spindletest.Await(t, task); v != 3 || err != nil {
		t.Fatalf("task = (%v, %v), want (3, nil)", v, err)
	}
	if v, err := spindletest.Await(t, dThen); v != 2 || err != nil {
		t.Fatalf("Then on d = (%v, %v), want (2, nil)", v, err)
	}
}

// Spawn from many goroutines while the loop runs: every task runs once.
func TestSpawnFromManyGoroutines(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Start()
	const g, per = 8, 100
	counts := make([]int, g*per) // loop-owned
	spindletest.Parallel(g, func(i int) {
		for j := range per {
			k := i*per + j
			f := Spawn(ex, func(ctx context.Context) (int, error) {
				counts[k]++
				if err := Yield(ctx); err != nil {
					return 0, err
				}
				return k, nil
			})
			if v, err := spindletest.Await(t, f); v != k || err != nil {
				t.Errorf("task %d = (%v, %v)", k, v, err)
				return
			}
		}
	})
	bad, _ := spindletest.Await(t, Call(ex, func() (int, error) {
		for k, c := range counts {
			if c != 1 {
				return k, nil
			}
		}
		return -1, nil
	}))
	if bad >= 0 {
		t.Fatalf("task %d ran %d times", bad, counts[bad])
	}
}

// A panic in a task body, Call or Then callback whose future was already
// completed (cancelled by another goroutine meanwhile, simulated here by the
// code itself) has no future to carry it: it must reach the panic handler,
// not vanish.
func TestPanicAfterCancelGoesToHandler(t *testing.T) {
	cases := []struct {
		name string
		mk   func(ex *executor.Executor) *Future[int]
	}{
		{"Spawn", func(ex *executor.Executor) *Future[int] {
			p := NewPromise[int](ex)
			var f *Future[int]
			f = Spawn(ex, func(ctx context.Context) (int, error) {
				Call(ex, func() (int, error) { f.Cancel(); return 0, nil })
				if _, err := p.Future().Await(ctx); err == nil {
					return 1, nil
				}
				panic("boom")
			})
			return f
		}},
		{"Call", func(ex *executor.Executor) *Future[int] {
			var f *Future[int]
			f = Call(ex, func() (int, error) { f.Cancel(); panic("boom") })
			return f
		}},
		{"Then", func(ex *executor.Executor) *Future[int] {
			var f *Future[int]
			f = Then(Resolved(ex, 1), func(int) (int, error) { f.Cancel(); panic("boom") })
			return f
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []any
			ex := executor.New(executor.WithPanicHandler(func(v any) { got = append(got, v) }))
			defer ex.Close()
			f := c.mk(ex)
			ex.RunUntilIdle()
			if _, err := outcome(t, f); !errors.Is(err, context.Canceled) {
				t.Fatalf("future = %v, want context.Canceled", err)
			}
			if len(got) != 1 || got[0] != "boom" {
				t.Fatalf("panic handler got %v: the panic after the cancellation was lost", got)
			}
		})
	}
}

// A task that starts a Sleep while Close releases it leaves no timer
// pending: Close stops every timer.
func TestSleepDuringCloseLeavesNoTimer(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	p := NewPromise[int](ex)
	var sleepErr error
	Spawn(ex, func(ctx context.Context) (int, error) {
		_, err := p.Future().Await(ctx) // released by Close
		_, sleepErr = Sleep(ex, time.Hour).Await(ctx)
		return 0, err
	})
	ex.RunUntilIdle()
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(sleepErr, executor.ErrClosed) {
		t.Fatalf("Sleep awaited during Close = %v, want executor.ErrClosed", sleepErr)
	}
	if n := ex.Stats().Timers; n != 0 {
		t.Fatalf("Stats().Timers = %d after Close: a timer started while closing was never stopped", n)
	}
}

// A task that finishes runs the next queued task on its own goroutine when
// that task is a fresh Spawn: the queue's FIFO order holds across the
// tasks run in place, callbacks and resumed tasks, a panic in a task run in
// place fails its future as anywhere else, and the batch still ends after
// batchSize tasks, so that due timers get their turn.
func TestSpawnsRunInPlaceKeepOrder(t *testing.T) {
	ex := executor.New(executor.WithPanicHandler(func(any) {})) // C's panic, nobody awaits C yet
	defer ex.Close()
	var log []string
	note := func(s string) { log = append(log, s) }
	p := NewPromise[int](ex)
	var fs []*Future[int]
	spawn := func(name string, fn func(ctx context.Context) (int, error)) {
		fs = append(fs, Spawn(ex, func(ctx context.Context) (int, error) {
			note(name)
			return fn(ctx)
		}))
	}
	ex.Drive(func() {
		spawn("A", func(ctx context.Context) (int, error) {
			v, err := p.Future().Await(ctx)
			note("A resumed")
			return v, err
		})
		spawn("B", func(context.Context) (int, error) { p.Resolve(1); return 2, nil })
		spawn("C", func(context.Context) (int, error) { panic("C") })
		ex.Post(func() { note("post") })
		spawn("D", func(context.Context) (int, error) { return 4, nil })
	})
	if want := "A|B|C|post|D|A resumed"; strings.Join(log, "|") != want {
		t.Fatalf("order\n got %s\nwant %s", strings.Join(log, "|"), want)
	}
	for i, want := range []int{1, 2, 0, 4} {
		v, err := outcome(t, fs[i])
		if i == 2 {
			var pe *PanicError
			if !errors.As(err, &pe) || pe.Value != "C" {
				t.Fatalf("task C = (%v, %v), want its panic", v, err)
			}
		} else if v != want || err != nil {
			t.Fatalf("task %d = (%v, %v), want %d", i, v, err, want)
		}
	}

	// A run of fresh Spawns longer than a batch lets a due timer in after
	// the first batch, as a run of callbacks does.
	var ran []int
	timerAt := -1
	ex.Drive(func() {
		for i := range 300 {
			Spawn(ex, func(context.Context) (int, error) { ran = append(ran, i); return i, nil })
		}
		ex.AfterFunc(0, func() { timerAt = len(ran) })
	})
	if len(ran) != 300 || timerAt != 128 {
		t.Fatalf("ran %d tasks, the timer after %d; want 300 and 128 (one batch)", len(ran), timerAt)
	}
	for i, v := range ran {
		if v != i {
			t.Fatalf("task %d ran as the %d-th", v, i)
		}
	}
}

// Goexit in a task fails that task only; the task before it and the one
// after it still complete, and the loop goes on serving. The Goexit task
// runs in place of the task before it (which finished: its goroutine
// starts the next fresh Spawn), or on the goroutine of the task before it
// as the hub of loop.hubRun (that task yields with the others queued):
// the hub's own body is not ended with it, and its deferred call runs once,
// when the body returns.
func TestGoexitInTaskRunInPlace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yield bool // the first task yields, and is the hub
	}{
		{"after a finished task", false},
		{"under a hub", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var panics spindletest.Panics
			ex := executor.New(executor.WithPanicHandler(panics.Handler))
			ex.Start()
			defer ex.Close()
			var deferred atomic.Int32 // the first task's deferred call
			fs, err := spindletest.Await(t, Call(ex, func() ([]*Future[int], error) {
				return []*Future[int]{
					Spawn(ex, func(ctx context.Context) (int, error) {
						defer deferred.Add(1)
						if tc.yield {
							if err := Yield(ctx); err != nil {
								return 0, err
							}
						}
						if deferred.Load() != 0 {
							return 0, errors.New("deferred call ran before the body returned")
						}
						return 1, nil
					}),
					Spawn(ex, func(context.Context) (int, error) { runtime.Goexit(); return 0, nil }),
					Spawn(ex, func(context.Context) (int, error) { return 3, nil }),
				}, nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			if v, err := spindletest.Await(t, fs[0]); v != 1 || err != nil {
				t.Fatalf("first task = (%v, %v), want (1, nil)", v, err)
			}
			if _, err := spindletest.Await(t, fs[1]); !errors.Is(err, ErrGoexit) {
				t.Fatalf("task that called Goexit: %v, want ErrGoexit", err)
			}
			if v, err := spindletest.Await(t, fs[2]); v != 3 || err != nil {
				t.Fatalf("task after Goexit = (%v, %v)", v, err)
			}
			if n := deferred.Load(); n != 1 {
				t.Fatalf("first task's deferred call ran %d times, want once", n)
			}
			if handled := panics.Got(); len(handled) != 1 || handled[0] != ErrGoexit {
				t.Fatalf("panic handler got %v, want ErrGoexit once", handled)
			}
			// The loop was handed on: it still serves.
			if v, err := spindletest.Await(t, Call(ex, func() (int, error) { return 4, nil })); v != 4 || err != nil {
				t.Fatalf("call after Goexit = (%v, %v)", v, err)
			}
		})
	}
}

// A task that suspends while other tasks are queued runs them on its own
// goroutine until its resumption comes (loop.hubRun): the order is still
// the queue's, resumptions and first runs alike.
func TestSuspendedTaskRunsQueueInOrder(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var order []string
	note := func(s string) { order = append(order, s) }
	ex.Drive(func() {
		Spawn(ex, func(ctx context.Context) (int, error) {
			note("a1")
			_ = Yield(ctx)
			note("a2")
			_ = Yield(ctx)
			note("a3")
			return 0, nil
		})
		Spawn(ex, func(ctx context.Context) (int, error) {
			note("b1")
			_ = Yield(ctx)
			note("b2")
			return 0, nil
		})
		ex.Post(func() { note("cb") })
		Spawn(ex, func(ctx context.Context) (int, error) { note("c1"); return 0, nil })
	})
	want := "a1 b1 cb c1 a2 b2 a3"
	if got := strings.Join(order, " "); got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
}

// A task that yields with nothing else queued goes on at once, but the
// loop still ends its batch after batchSize tasks, so a due timer runs
// while the task keeps yielding.
func TestYieldAloneLetsTimersIn(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	yields, timerAt := 0, -1
	f := Spawn(ex, func(ctx context.Context) (int, error) {
		ex.AfterFunc(0, func() { timerAt = yields })
		for range 1000 {
			if err := Yield(ctx); err != nil {
				return 0, err
			}
			yields++
		}
		return yields, nil
	})
	ex.RunUntilIdle()
	if v, err := outcome(t, f); v != 1000 || err != nil {
		t.Fatalf("task = (%v, %v), want 1000 yields", v, err)
	}
	if timerAt < 0 || timerAt > 200 {
		t.Fatalf("the timer ran after %d yields, want within the first batch or two", timerAt)
	}
}
