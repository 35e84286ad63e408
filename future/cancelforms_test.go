package future_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// blocker is a Go function that runs until its ctx ends or it is released,
// and reports why its ctx ended.
type blocker struct {
	started chan struct{}
	release chan struct{}
	ended   chan error // context.Cause of fn's ctx, once fn returns
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}), release: make(chan struct{}), ended: make(chan error, 1)}
}

func (b *blocker) fn(ctx context.Context) (int, error) {
	close(b.started)
	defer func() { b.ended <- context.Cause(ctx) }()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-b.release:
		return 7, nil
	}
}

// passingDeadline is a ctx with a deadline that passes when pass is
// called, not on the clock: a deadline of a millisecond may pass before
// GoContext starts fn on a loaded machine, and then fn never starts.
type passingDeadline struct {
	done chan struct{}
	once sync.Once
}

func (d *passingDeadline) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (d *passingDeadline) Done() <-chan struct{}       { return d.done }
func (d *passingDeadline) Value(any) any               { return nil }
func (d *passingDeadline) pass()                       { d.once.Do(func() { close(d.done) }) }

func (d *passingDeadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// WithTimeout fails with ErrTimeout when the time is up and cancels the
// work behind the future; Timeout, by contract, leaves it running.
func TestWithTimeoutCancelsTheWork(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	b := newBlocker()
	work := future.Go(ex, b.fn)
	_, err := spindletest.Await(t, future.WithTimeout(work, time.Millisecond))
	if !errors.Is(err, future.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WithTimeout: %v, want ErrTimeout", err)
	}
	if cause := spindletest.Recv(t, b.ended); !errors.Is(cause, context.Canceled) {
		t.Errorf("the work's ctx ended with %v, want context.Canceled", cause)
	}
	if _, err := spindletest.Await(t, work); !errors.Is(err, context.Canceled) {
		t.Errorf("the work's future: %v, want context.Canceled", err)
	}

	// Timeout leaves it running.
	b = newBlocker()
	work = future.Go(ex, b.fn)
	if _, err := spindletest.Await(t, future.Timeout(work, time.Millisecond)); !errors.Is(err, future.ErrTimeout) {
		t.Fatalf("Timeout: %v", err)
	}
	if work.Ready() {
		t.Error("Timeout cancelled its source")
	}
	close(b.release)
	if v, err := spindletest.Await(t, work); v != 7 || err != nil {
		t.Errorf("the work after Timeout: %d, %v", v, err)
	}
	<-b.ended
}

// In time, WithTimeout completes like its source and cancels nothing;
// cancelling it cancels the source.
func TestWithTimeoutOutcomes(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	b := newBlocker()
	work := future.Go(ex, b.fn)
	timed := future.WithTimeout(work, time.Hour)
	close(b.release)
	if v, err := spindletest.Await(t, timed); v != 7 || err != nil {
		t.Fatalf("in time: %d, %v", v, err)
	}
	if cause := <-b.ended; cause != nil {
		t.Errorf("the work's ctx ended with %v before it returned", cause)
	}

	b = newBlocker()
	work = future.Go(ex, b.fn)
	timed = future.WithTimeout(work, time.Hour)
	timed.Cancel()
	if cause := spindletest.Recv(t, b.ended); !errors.Is(cause, context.Canceled) {
		t.Errorf("after Cancel the work's ctx ended with %v", cause)
	}
	if _, err := spindletest.Await(t, work); !errors.Is(err, context.Canceled) {
		t.Errorf("after Cancel the work's future: %v", err)
	}

	ready := future.Resolved(ex, 1)
	if future.WithTimeout(ready, time.Millisecond) != ready {
		t.Error("a ready future is not returned as it is")
	}
	spindletest.MustPanic(t, "future: ", "nil future", func() { future.WithTimeout[int](nil, time.Second) })
}

// GoContext's function sees the caller's values and deadline; the end of
// the caller's ctx ends the function's and fails the future at once,
// without waiting for the function.
func TestGoContext(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	type key struct{}

	t.Run("values and deadline", func(t *testing.T) {
		deadline := time.Now().Add(time.Hour)
		ctx, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), deadline)
		defer cancel()
		f := future.GoContext(ctx, ex, func(ctx context.Context) (string, error) {
			d, ok := ctx.Deadline()
			if !ok || !d.Equal(deadline) {
				return "", errors.New("the caller's deadline is not visible")
			}
			v, _ := ctx.Value(key{}).(string)
			return v, nil
		})
		if v, err := spindletest.Await(t, f); v != "v" || err != nil {
			t.Fatalf("%q, %v", v, err)
		}
	})
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancel", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			d := &passingDeadline{done: make(chan struct{})}
			return d, d.pass
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			b := newBlocker()
			block := make(chan struct{}) // holds fn after its ctx ended
			f := future.GoContext(ctx, ex, func(ctx context.Context) (int, error) {
				defer func() { <-block }()
				return b.fn(ctx)
			})
			<-b.started
			cancel() // the cancel, or the deadline passing, once fn runs
			if _, err := spindletest.Await(t, f); !errors.Is(err, tc.want) {
				t.Fatalf("future: %v, want %v", err, tc.want)
			}
			if cause := spindletest.Recv(t, b.ended); !errors.Is(cause, tc.want) {
				t.Errorf("fn's ctx ended with %v, want %v", cause, tc.want)
			}
			close(block) // the future failed while fn was still running
		})
	}
	t.Run("ended", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		f := future.GoContext(ctx, ex, func(context.Context) (int, error) {
			t.Error("fn started under a ctx that had ended")
			return 0, nil
		})
		if !f.Ready() {
			t.Fatal("the future of an ended ctx is pending")
		}
		if _, err := spindletest.Await(t, f); !errors.Is(err, context.Canceled) {
			t.Fatalf("future: %v", err)
		}
	})
	t.Run("misuse", func(t *testing.T) {
		fn := func(context.Context) (int, error) { return 0, nil }
		//lint:ignore SA1012 passing nil is the mistake under test
		spindletest.MustPanic(t, "future: ", "nil context", func() { future.GoContext(nil, ex, fn) })
		spindletest.MustPanic(t, "future: ", "nil executor", func() { future.GoContext(context.Background(), nil, fn) })
		spindletest.MustPanic(t, "future: ", "nil func", func() { future.GoContext[int](context.Background(), ex, nil) })
	})
}

// The ends of GoContext's future race one another (the caller's ctx, fn's
// return, Cancel, the executor closing): each future completes once, and
// nothing is left behind (the race detector and goleak watch).
func TestGoContextRaces(t *testing.T) {
	for range 20 {
		ex := executor.New()
		ex.Start()
		const n = 50
		var wg sync.WaitGroup
		fs := make([]*future.Future[int], n)
		for i := range n {
			ctx, cancel := context.WithCancel(context.Background())
			fs[i] = future.GoContext(ctx, ex, func(ctx context.Context) (int, error) { return i, nil })
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					fs[i].Cancel()
				}
				cancel()
			}()
		}
		wg.Wait()
		_ = ex.Close()
		for i, f := range fs {
			if v, err := spindletest.Await(t, f); err == nil && v != i {
				t.Fatalf("future %d: %d", i, v)
			}
		}
	}
}

// SpawnErr's future resolves when the body returns nil and fails with its
// error or panic otherwise.
func TestSpawnErr(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	for _, tc := range []struct {
		name  string
		fn    func(context.Context) error
		check func(error) bool
	}{
		{"nil", func(context.Context) error { return nil }, func(err error) bool { return err == nil }},
		{"error", func(context.Context) error { return errGo }, func(err error) bool { return errors.Is(err, errGo) }},
		{"panic", func(context.Context) error { panic("boom") }, func(err error) bool {
			var pe *future.PanicError
			return errors.As(err, &pe) && pe.Value == "boom"
		}},
		{"await", func(ctx context.Context) error {
			_, err := future.Sleep(ex, time.Millisecond).Await(ctx)
			return err
		}, func(err error) bool { return err == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := spindletest.Await(t, future.SpawnErr(ex, tc.fn)); !tc.check(err) {
				t.Fatalf("SpawnErr: %v", err)
			}
		})
	}
	spindletest.MustPanic(t, "future: ", "nil func", func() { future.SpawnErr(ex, nil) })
	spindletest.MustPanic(t, "future: ", "nil executor", func() { future.SpawnErr(nil, func(context.Context) error { return nil }) })
}
