package future_test

import (
	"context"
	"errors"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

func TestDo(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	ctx := context.Background()
	state := 0 // loop-owned
	cases := []struct {
		name    string
		fn      func() (int, error)
		want    int
		wantErr func(error) bool
	}{
		{"value", func() (int, error) { state++; return state, nil }, 1, func(err error) bool { return err == nil }},
		{"error", func() (int, error) { return 0, errA }, 0, func(err error) bool { return err == errA }},
		{"panic", func() (int, error) { panic("boom") }, 0, func(err error) bool {
			var pe *future.PanicError
			return errors.As(err, &pe) && pe.Value == "boom"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := future.Do(ctx, ex, c.fn)
			if v != c.want || !c.wantErr(err) {
				t.Fatalf("Do = %v, %v", v, err)
			}
		})
	}
}

// Many goroutines at once: every call runs once, on the loop.
func TestDoConcurrent(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	n := 0
	spindletest.Parallel(8, func(int) {
		for range 2000 {
			if _, err := future.Do(context.Background(), ex, func() (int, error) { n++; return n, nil }); err != nil {
				t.Error(err)
				return
			}
		}
	})
	if got, _ := future.Do(context.Background(), ex, func() (int, error) { return n, nil }); got != 16000 {
		t.Fatalf("n = %d, want 16000", got)
	}
}

// A ctx that ends before fn starts means fn never runs: here the loop is
// held by a callback while Do waits (or has not even queued its call yet).
func TestDoCtxEndsBeforeStart(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	held, release := make(chan struct{}), make(chan struct{})
	ex.Submit(func() { close(held); <-release })
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	done := make(chan error, 1)
	go func() {
		_, err := future.Do(ctx, ex, func() (int, error) { ran = true; return 1, nil })
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with a ctx that ended = %v, want Canceled", err)
	}
	close(release)
	if r, _ := future.Do(context.Background(), ex, func() (bool, error) { return ran, nil }); r {
		t.Fatal("fn ran after Do returned ctx's error")
	}
}

// A call queued when the executor closes is dropped, not run, and Do
// returns ErrClosed; so does Do once the executor has closed.
func TestDoAfterClose(t *testing.T) {
	ex := executor.New() // nobody runs the loop: the call waits in the inbox
	ran := false
	done := make(chan error, 1)
	go func() {
		_, err := future.Do(context.Background(), ex, func() (int, error) { ran = true; return 1, nil })
		done <- err
	}()
	ex.Close() // before or after the call was queued: it fails either way
	if err := <-done; !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Do across Close = %v, want ErrClosed", err)
	}
	if ran {
		t.Fatal("a call queued when the executor closed ran")
	}
	if _, err := future.Do(context.Background(), ex, func() (int, error) { return 1, nil }); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Do after Close = %v, want ErrClosed", err)
	}
}

// On the loop, Do follows Await's rules: in a task it suspends; in a
// callback it cannot wait.
func TestDoOnTheLoop(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var cbErr error
	ex.Drive(func() {
		_, cbErr = future.Do(context.Background(), ex, func() (int, error) { return 1, nil })
	})
	if !errors.Is(cbErr, future.ErrDeadlock) {
		t.Errorf("Do in a callback = %v, want ErrDeadlock", cbErr)
	}
	task := future.Spawn(ex, func(ctx context.Context) (int, error) {
		return future.Do(ctx, ex, func() (int, error) { return 2, nil })
	})
	ex.Start()
	if v, err := spindletest.Await(t, task); v != 2 || err != nil {
		t.Fatalf("Do in a task = %v, %v", v, err)
	}
}

func TestDoDoesNotAllocate(t *testing.T) {
	if spindletest.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	n := 0
	fn := func() (int, error) { n++; return n, nil }
	ctx := context.Background()
	future.Do(ctx, ex, fn) // fills the pool
	if a := testing.AllocsPerRun(1000, func() { future.Do(ctx, ex, fn) }); a > 0.05 {
		t.Fatalf("Do allocates %v times per call", a)
	}
}
