package future_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

var errGo = errors.New("go: failed")

// fn's outcome reaches the future, which is completed on the loop, while fn
// itself runs off the loop.
func TestGoOutcome(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fn      func(ctx context.Context) (int, error)
		want    int
		wantErr func(error) bool
	}{
		{"value", func(context.Context) (int, error) { return 7, nil }, 7, func(err error) bool { return err == nil }},
		{"error", func(context.Context) (int, error) { return 0, errGo }, 0, func(err error) bool { return errors.Is(err, errGo) }},
		{"panic", func(context.Context) (int, error) { panic("boom") }, 0, func(err error) bool {
			var pe *future.PanicError
			return errors.As(err, &pe) && pe.Value == "boom" && len(pe.Stack) > 0
		}},
		{"goexit", func(context.Context) (int, error) { runtime.Goexit(); return 1, nil }, 0, func(err error) bool {
			return err != nil && !errors.Is(err, executor.ErrClosed)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			ex.Start()
			defer ex.Close()
			offLoop := make(chan bool, 1)
			f := future.Go(ex, func(ctx context.Context) (int, error) {
				offLoop <- !ex.OnLoop()
				return tc.fn(ctx)
			})
			completedOnLoop := make(chan bool, 1)
			f.OnComplete(func(int, error) { completedOnLoop <- ex.OnLoop() })
			v, err := spindletest.Await(t, f)
			if v != tc.want || !tc.wantErr(err) {
				t.Fatalf("Go: %d, %v", v, err)
			}
			if !<-offLoop {
				t.Error("fn ran on the loop")
			}
			if !<-completedOnLoop {
				t.Error("continuation ran off the loop")
			}
		})
	}
}

// A task that awaits blocking work suspends: the loop goes on serving other
// work while fn blocks.
func TestGoDoesNotBlockTheLoop(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	release := make(chan struct{})
	task := future.Spawn(ex, func(ctx context.Context) (string, error) {
		return future.Go(ex, func(context.Context) (string, error) {
			<-release // blocking work
			return "row", nil
		}).Await(ctx)
	})
	if _, err := spindletest.Await(t, future.Call(ex, func() (int, error) { return 1, nil })); err != nil {
		t.Fatalf("the loop did not serve a Call while fn blocked: %v", err)
	}
	close(release)
	if v, err := spindletest.Await(t, task); v != "row" || err != nil {
		t.Fatalf("task: %q, %v", v, err)
	}
}

// Cancelling the future, or closing the executor, fails it at once, without
// waiting for fn, and ends fn's ctx with the reason as its cause.
func TestGoEndsEarly(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(ex *executor.Executor, f *future.Future[int])
		want error
	}{
		{"cancel", func(_ *executor.Executor, f *future.Future[int]) { f.Cancel() }, context.Canceled},
		{"close", func(ex *executor.Executor, _ *future.Future[int]) { ex.Close() }, executor.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			ex.Start()
			defer ex.Close()
			started, release, returned := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			f := future.Go(ex, func(ctx context.Context) (int, error) {
				close(started)
				<-ctx.Done()
				returned <- context.Cause(ctx)
				<-release // fn goes on after its ctx ended: nobody waits for it
				return 1, nil
			})
			<-started
			tc.end(ex, f)
			if _, err := spindletest.Await(t, f); !errors.Is(err, tc.want) {
				t.Fatalf("Go after %s: %v, want %v", tc.name, err, tc.want)
			}
			if cause := <-returned; !errors.Is(cause, tc.want) {
				t.Errorf("fn's ctx cause %v, want %v", cause, tc.want)
			}
			close(release) // fn returns; its goroutine ends (goleak checks)
		})
	}
}

// Once the executor has begun closing, Go fails at once and never starts fn.
func TestGoAfterClose(t *testing.T) {
	ex := executor.New()
	ex.Close()
	ran := false
	f := future.Go(ex, func(context.Context) (int, error) { ran = true; return 1, nil })
	if !f.Ready() {
		t.Fatal("Go after Close: future not ready")
	}
	if _, err := f.Await(context.Background()); !errors.Is(err, executor.ErrClosed) || ran {
		t.Fatalf("Go after Close: %v, ran %v", err, ran)
	}
}

var goReq = hooks.NewStorage[string]()

// The continuations of a Go future see the caller's async-local value; fn,
// off the loop, sees none.
func TestGoAsyncLocal(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	inside, got := make(chan bool, 1), make(chan string, 1)
	_ = ex.Submit(func() {
		goReq.Run(ex, "req-1", func() {
			f := future.Go(ex, func(context.Context) (int, error) {
				_, ok := goReq.Get(ex)
				inside <- ok
				return 1, nil
			})
			f.OnComplete(func(int, error) {
				v, _ := goReq.Get(ex)
				got <- v
			})
		})
	})
	if spindletest.Recv(t, inside) {
		t.Error("fn saw an async-local value off the loop")
	}
	if v := spindletest.Recv(t, got); v != "req-1" {
		t.Fatalf("continuation saw %q, want req-1", v)
	}
}

// Awaited on the loop outside a task, a pending Go future reports
// ErrDeadlock, as any future does.
func TestGoAwaitOnLoop(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	release := make(chan struct{})
	var err error
	ex.Drive(func() {
		f := future.Go(ex, func(context.Context) (int, error) { <-release; return 1, nil })
		_, err = f.Await(context.Background())
	})
	close(release)
	if !errors.Is(err, future.ErrDeadlock) {
		t.Fatalf("Await on the loop: %v, want ErrDeadlock", err)
	}
}
