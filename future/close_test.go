package future_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// closeReturns fails the test if Close does not return within the safety
// bound.
func closeReturns(t *testing.T, ex *executor.Executor) {
	t.Helper()
	done := make(chan struct{})
	go func() { ex.Close(); close(done) }()
	select {
	case <-done:
	case <-spindletest.Context(t).Done():
		t.Fatal("Close did not return")
	}
}

// Close returns while work keeps producing work: a task looping on Yield,
// two tasks passing an item back and forth, a callback that posts itself.
func TestCloseReturnsUnderEndlessWork(t *testing.T) {
	cases := map[string]func(ex *executor.Executor, started chan<- struct{}) []*future.Future[int]{
		"yield loop": func(ex *executor.Executor, started chan<- struct{}) []*future.Future[int] {
			return []*future.Future[int]{future.Spawn(ex, func(ctx context.Context) (int, error) {
				close(started)
				n := 0
				for future.Yield(ctx) == nil {
					n++
				}
				return n, nil
			})}
		},
		"channel ping-pong": func(ex *executor.Executor, started chan<- struct{}) []*future.Future[int] {
			var once sync.Once
			players, _ := future.Call(ex, func() ([]*future.Future[int], error) {
				a, b := channel.New[int](ex, 0), channel.New[int](ex, 0)
				player := func(in, out *channel.Chan[int], serve bool) *future.Future[int] {
					return future.Spawn(ex, func(ctx context.Context) (int, error) {
						once.Do(func() { close(started) })
						if serve {
							if err := out.SendWait(ctx, 0); err != nil {
								return 0, err
							}
						}
						for {
							v, err := in.RecvWait(ctx)
							if err != nil {
								return v, err
							}
							if err := out.SendWait(ctx, v+1); err != nil {
								return v, err
							}
						}
					})
				}
				return []*future.Future[int]{player(a, b, true), player(b, a, false)}, nil
			}).Await(context.Background())
			return players
		},
		"self-posting callback": func(ex *executor.Executor, started chan<- struct{}) []*future.Future[int] {
			var again func()
			again = func() { ex.Post(again) }
			ex.Submit(func() { close(started); again() })
			return nil
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			ex := executor.New()
			ex.Start()
			started := make(chan struct{})
			fs := mk(ex, started)
			<-started
			closeReturns(t, ex)
			for i, f := range fs {
				if !f.Ready() {
					t.Errorf("task %d still pending after Close", i)
				}
			}
		})
	}
}

// Once closed, everything that needs the loop fails at once with ErrClosed,
// and futures that were waiting on dropped work are ready.
func TestAfterCloseEverythingFails(t *testing.T) {
	ex := executor.New()
	ex.Start()
	p := future.NewPromise[int](ex)
	pending := future.Then(p.Future(), func(v int) (int, error) { return v, nil })
	sleeping := future.Sleep(ex, time.Hour)
	var completes, cancels atomic.Int32
	q := future.NewPromise[int](ex)
	q.Future().OnComplete(func(int, error) { completes.Add(1) })
	r := future.NewPromise[int](ex)
	r.OnCancel(func() { cancels.Add(1) })
	ex.Close()

	if _, err := future.Sleep(ex, time.Hour).Await(context.Background()); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Sleep pending at Close: %v", err)
	}
	if !sleeping.Ready() {
		t.Error("Sleep started before Close still pending")
	}
	fresh := map[string]*future.Future[int]{
		"Then":      future.Then(future.Resolved(ex, 1), func(v int) (int, error) { return v, nil }),
		"Transform": future.Transform(future.Resolved(ex, 1), func(v int, err error) (int, error) { return v, err }),
		"Call":      future.Call(ex, func() (int, error) { return 1, nil }),
		"Spawn":     future.Spawn(ex, func(context.Context) (int, error) { return 1, nil }),
	}
	for name, f := range fresh {
		if !f.Ready() {
			t.Errorf("%s after Close: not ready", name)
			continue
		}
		if _, err := f.Await(context.Background()); !errors.Is(err, executor.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if s, err := future.Sleep(ex, time.Hour).Await(context.Background()); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Sleep after Close = %v, %v", s, err)
	}
	// A continuation registered before Close whose source completes after
	// it cannot run: its future fails instead of staying pending.
	p.Resolve(1)
	if _, err := pending.Await(context.Background()); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Then pending at Close, source resolved after: %v", err)
	}
	// Observer callbacks are not lost: they run on the goroutine that
	// completes the future, and after Close also when registered late.
	q.Resolve(1)
	r.Future().Cancel()
	late := future.Resolved(ex, 1)
	late.OnComplete(func(int, error) { completes.Add(1) })
	if completes.Load() != 2 || cancels.Load() != 1 {
		t.Errorf("OnComplete ran %d times (want 2), OnCancel %d (want 1)", completes.Load(), cancels.Load())
	}
}

// Work queued when Close comes is dropped, and the futures it would have
// completed fail with ErrClosed.
func TestCloseDropsQueuedWorkAndFailsItsFutures(t *testing.T) {
	ex := executor.New()
	ran := false
	ex.Submit(func() { ran = true })
	var chained *future.Future[int]
	ex.Drive(func() {
		chained = future.Then(future.Resolved(ex, 1), func(v int) (int, error) { return v + 1, nil })
		for range 100 {
			chained = future.Then(chained, func(v int) (int, error) { return v + 1, nil })
		}
		ex.Close() // from the loop: the chain's queued link is dropped
	})
	if ran {
		t.Error("work submitted before Close ran")
	}
	if _, err := chained.Await(context.Background()); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("end of a dropped chain: %v, want ErrClosed", err)
	}
}

// A task of one executor (c) awaiting a future of another (d) is released
// when either closes: with ErrClosed when d closes, as a goroutine parked on
// the future is, and as its own executor unwinds it when c closes.
func TestCrossExecutorWaitReleasedOnClose(t *testing.T) {
	for _, closing := range []string{"future's executor", "task's executor"} {
		t.Run(closing, func(t *testing.T) {
			c, d := executor.New(), executor.New()
			c.Start()
			d.Start()
			defer c.Close()
			defer d.Close()
			p := future.NewPromise[int](d)
			waiting := make(chan struct{})
			task := future.Spawn(c, func(ctx context.Context) (int, error) {
				close(waiting)
				return p.Future().Await(ctx)
			})
			<-waiting
			if closing == "future's executor" {
				d.Close()
			} else {
				closeReturns(t, c)
			}
			_, err := spindletest.Await(t, task)
			if closing == "future's executor" && !errors.Is(err, executor.ErrClosed) {
				t.Fatalf("task awaiting a closed executor's future: %v, want ErrClosed", err)
			}
			if err == nil {
				t.Fatal("released task returned no error")
			}
		})
	}
}

// runtime.Goexit in a task body (a t.FailNow) fails the task's future, the
// panic handler is told, and an executor started with Start keeps serving.
func TestGoexitInTask(t *testing.T) {
	var panics spindletest.Panics
	ex := executor.New(executor.WithPanicHandler(panics.Handler))
	ex.Start()
	defer ex.Close()
	f := future.Spawn(ex, func(context.Context) (int, error) {
		runtime.Goexit()
		return 1, nil
	})
	if _, err := spindletest.Await(t, f); !errors.Is(err, future.ErrGoexit) {
		t.Fatalf("task that called Goexit: %v, want ErrGoexit", err)
	}
	// The loop keeps serving: tasks, callbacks and Goexit again.
	for range 3 {
		v, err := spindletest.Await(t, future.Spawn(ex, func(ctx context.Context) (int, error) {
			if _, err := future.Sleep(ex, time.Millisecond).Await(ctx); err != nil {
				return 0, err
			}
			return 2, nil
		}))
		if v != 2 || err != nil {
			t.Fatalf("task after Goexit = %v, %v", v, err)
		}
		g := future.Spawn(ex, func(context.Context) (int, error) { runtime.Goexit(); return 0, nil })
		if _, err := spindletest.Await(t, g); !errors.Is(err, future.ErrGoexit) {
			t.Fatalf("second Goexit: %v", err)
		}
	}
	if v, err := spindletest.Await(t, future.Call(ex, func() (int, error) { return 3, nil })); v != 3 || err != nil {
		t.Fatalf("Call after Goexit = %v, %v", v, err)
	}
	if got := panics.Got(); len(got) != 4 || got[0] != future.ErrGoexit {
		t.Fatalf("panic handler got %v, want ErrGoexit four times", got)
	}
}

// runtime.Goexit in a callback (Submit, Then, AfterFunc, OnComplete) does
// not stop the loop silently either: the panic handler is told, a Then's
// future fails, and the executor keeps serving.
func TestGoexitInCallback(t *testing.T) {
	var panics spindletest.Panics
	ex := executor.New(executor.WithPanicHandler(panics.Handler))
	ex.Start()
	defer ex.Close()
	alive := func(what string) {
		t.Helper()
		if v, err := spindletest.Await(t, future.Call(ex, func() (int, error) { return 1, nil })); v != 1 || err != nil {
			t.Fatalf("after Goexit in %s: Call = %v, %v", what, v, err)
		}
	}
	if err := ex.Submit(runtime.Goexit); err != nil {
		t.Fatal(err)
	}
	alive("Submit")
	then := future.Then(future.Resolved(ex, 1), func(int) (int, error) { runtime.Goexit(); return 0, nil })
	if _, err := spindletest.Await(t, then); !errors.Is(err, future.ErrGoexit) {
		t.Fatalf("Then whose callback called Goexit: %v, want ErrGoexit", err)
	}
	alive("Then")
	fired := make(chan struct{})
	if err := ex.Submit(func() {
		ex.AfterFunc(0, func() { close(fired); runtime.Goexit() })
	}); err != nil {
		t.Fatal(err)
	}
	spindletest.Recv(t, fired)
	alive("AfterFunc")
	future.Resolved(ex, 1).OnComplete(func(int, error) { runtime.Goexit() })
	alive("OnComplete")
	got := panics.Got()
	if len(got) != 4 {
		t.Fatalf("panic handler got %v, want ErrGoexit four times", got)
	}
	for _, v := range got {
		if v != future.ErrGoexit {
			t.Fatalf("panic handler got %v, want ErrGoexit", v)
		}
	}
}

// A Timeout still pending when its executor closes completes with
// executor.ErrClosed, and its OnComplete callbacks run.
func TestTimeoutPendingAtCloseCompletes(t *testing.T) {
	for _, from := range []string{"goroutine", "loop"} {
		ex := executor.New()
		ex.Start()
		p := future.NewPromise[int](ex)
		var tf *future.Future[int]
		if from == "loop" {
			tf, _ = spindletest.Await(t, future.Call(ex, func() (*future.Future[int], error) {
				return future.Timeout(p.Future(), time.Hour), nil
			}))
		} else {
			tf = future.Timeout(p.Future(), time.Hour)
		}
		var got atomic.Value
		tf.OnComplete(func(_ int, err error) { got.Store(err) })
		closeReturns(t, ex)
		if !tf.Ready() {
			t.Fatalf("from %s: Timeout still pending after Close", from)
		}
		if err, _ := got.Load().(error); !errors.Is(err, executor.ErrClosed) {
			t.Fatalf("from %s: OnComplete of a Timeout pending at Close got %v, want ErrClosed", from, err)
		}
	}
}
