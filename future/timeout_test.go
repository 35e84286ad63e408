package future_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// Timeout passes on the outcome of a future that completes in time, fails
// with ErrTimeout (a context.DeadlineExceeded) otherwise, never cancels the
// watched future, and keeps no timer once the outcome is known.
func TestTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d      time.Duration
		settle func(p *future.Promise[int], out *future.Future[int]) // on the loop, after Timeout
		want   int
		err    error
		srcEnd bool // the watched future is complete at the end
	}{
		{"value in time", time.Hour, func(p *future.Promise[int], _ *future.Future[int]) { p.Resolve(4) }, 4, nil, true},
		{"error in time", time.Hour, func(p *future.Promise[int], _ *future.Future[int]) { p.Reject(errGo) }, 0, errGo, true},
		{"deadline first", 0, func(*future.Promise[int], *future.Future[int]) {}, 0, context.DeadlineExceeded, false},
		{"cancelled", time.Hour, func(_ *future.Promise[int], out *future.Future[int]) { out.Cancel() }, 0, context.Canceled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			p := future.NewPromise[int](ex)
			var out *future.Future[int]
			ex.Drive(func() {
				out = future.Timeout(p.Future(), tc.d)
				tc.settle(p, out)
			})
			v, err := out.Await(context.Background())
			if !out.Ready() || v != tc.want || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("Timeout: ready %v, %d, %v; want %d, %v", out.Ready(), v, err, tc.want, tc.err)
			}
			if got := p.Future().Ready(); got != tc.srcEnd {
				t.Errorf("watched future ready = %v, want %v (Timeout must not complete it)", got, tc.srcEnd)
			}
			if n := ex.Stats().Timers; n != 0 {
				t.Errorf("%d timers pending after the outcome, want 0", n)
			}
			if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, future.ErrTimeout) {
				t.Errorf("deadline error %v is not ErrTimeout", err)
			}
		})
	}
}

// A ready future comes back as it is; a pending one on a closed executor
// gets a future that has failed with ErrClosed.
func TestTimeoutReadyAndClosed(t *testing.T) {
	ex := executor.New()
	ready := future.Resolved(ex, 3)
	if future.Timeout(ready, time.Hour) != ready {
		t.Error("Timeout of a ready future made a new one")
	}
	pending := future.NewPromise[int](ex).Future()
	ex.Close()
	f := future.Timeout(pending, time.Hour)
	if _, err := f.Await(context.Background()); !f.Ready() || !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Timeout on a closed executor: ready %v, %v", f.Ready(), err)
	}
}

// A task awaiting a Timeout of blocking work resumes when the deadline
// passes; the work goes on and can still be cancelled.
func TestTimeoutOfGoInTask(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	release := make(chan struct{})
	defer close(release)
	task := future.Spawn(ex, func(ctx context.Context) (bool, error) {
		work := future.Go(ex, func(ctx context.Context) (int, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return 0, ctx.Err()
		})
		_, err := future.Timeout(work, time.Millisecond).Await(ctx)
		stillRunning := !work.Ready()
		work.Cancel()
		return stillRunning, err
	})
	running, err := spindletest.Await(t, task)
	if !errors.Is(err, context.DeadlineExceeded) || !running {
		t.Fatalf("task: work still running %v, %v; want true, DeadlineExceeded", running, err)
	}
}

// Timeout may be called from any goroutine.
func TestTimeoutFromGoroutine(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	p := future.NewPromise[string](ex)
	f := future.Timeout(p.Future(), time.Hour)
	go p.Resolve("late but in time")
	if v, err := spindletest.Await(t, f); v != "late but in time" || err != nil {
		t.Fatalf("Timeout: %q, %v", v, err)
	}
	if _, err := spindletest.Await(t, future.Timeout(future.NewPromise[int](ex).Future(), 0)); !errors.Is(err, future.ErrTimeout) {
		t.Fatalf("Timeout(0) from a goroutine: %v", err)
	}
}
