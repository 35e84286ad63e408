//go:build go1.25

package synctesttest

// The tests alternate on purpose: ordinary, bubble, ordinary, bubble. The
// futures' wake-up channels are pooled per executor, so none made in one
// bubble is used in another or outside (that aborts the binary with "select
// on synctest channel from outside bubble"), and the loop's watchdog
// sleeps while the loop does, so fake time jumps and synctest can see a
// deadlock.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// roundTrips awaits Call and Do on ex from the calling goroutine, off the
// loop: the two paths that park on a pooled channel.
func roundTrips(t *testing.T, ex *executor.Executor) {
	t.Helper()
	ctx := context.Background()
	for i := range 50 {
		if v, err := future.Call(ex, func() (int, error) { return i, nil }).Await(ctx); err != nil || v != i {
			t.Fatalf("Call(%d).Await = %d, %v", i, v, err)
		}
		if v, err := future.Do(ctx, ex, func() (int, error) { return i, nil }); err != nil || v != i {
			t.Fatalf("Do(%d) = %d, %v", i, v, err)
		}
	}
}

// start returns a started executor that is closed when t ends (inside the
// bubble, for a bubble's t).
func start(t *testing.T, opts ...executor.Option) *executor.Executor {
	ex := executor.New(opts...)
	ex.Start()
	t.Cleanup(func() { _ = ex.Close() })
	return ex
}

// ordinary is an ordinary test of an ordinary executor, between bubbles.
func ordinary(t *testing.T) {
	ex := start(t)
	roundTrips(t, ex)
	if _, err := spindletest.Await(t, future.Sleep(ex, time.Millisecond)); err != nil {
		t.Fatal(err)
	}
}

func TestOrdinaryFirst(t *testing.T) { ordinary(t) }

// A bubble with the default watchdog and delay probe: round trips, then a
// 24 h Sleep that takes no real time, during which the probe sends nothing.
func TestBubbleSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := start(t)
		roundTrips(t, ex)
		start := time.Now()
		if _, err := future.Sleep(ex, 24*time.Hour).Await(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 24*time.Hour {
			t.Fatalf("Sleep(24h) took %v of fake time", d)
		}
		// Probing every 100 ms for a day would fill the window (600
		// samples); a loop that slept has nothing to probe.
		if n := ex.Stats().Delay.Samples; n > 10 {
			t.Fatalf("%d delay samples over a sleeping day: the probe kept the bubble awake", n)
		}
	})
}

func TestOrdinaryBetween(t *testing.T) { ordinary(t) }

// Timers fire in order at their fake times.
func TestBubbleTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := start(t)
		start := time.Now()
		fired := make(chan time.Duration, 3)
		if err := ex.Submit(func() {
			for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
				ex.AfterFunc(d, func() { fired <- time.Since(start) })
			}
		}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
			if got := <-fired; got != want {
				t.Fatalf("timer fired after %v, want %v", got, want)
			}
		}
		stopped := false
		if err := ex.Submit(func() { stopped = ex.AfterFunc(time.Hour, func() { fired <- 0 }).Stop() }); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !stopped {
			t.Fatal("Stop of a pending timer returned false")
		}
	})
}

// Timeout fails a future that does not complete in time, at exactly that
// time, and passes one that does.
func TestBubbleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := start(t)
		start := time.Now()
		p := future.NewPromise[int](ex)
		_, err := future.Timeout(p.Future(), 5*time.Second).Await(context.Background())
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Fatalf("Timeout of a pending future: %v after %v, want DeadlineExceeded after 5s", err, time.Since(start))
		}
		soon := future.Then(future.Sleep(ex, time.Second), func(struct{}) (int, error) { return 7, nil })
		if v, err := future.Timeout(soon, 5*time.Second).Await(context.Background()); v != 7 || err != nil {
			t.Fatalf("Timeout of a future done in 1s = %d, %v", v, err)
		}
		p.Resolve(0)
	})
}

func TestOrdinaryAfterTimers(t *testing.T) { ordinary(t) }

// A Group of tasks that sleep: they run concurrently on fake time, and the
// first failure cancels the others' ctx.
func TestBubbleGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := start(t)
		start := time.Now()
		g := future.NewGroup(context.Background(), ex)
		for i := 1; i <= 10; i++ {
			g.Go(func(ctx context.Context) error {
				_, err := future.Sleep(ex, time.Duration(i)*time.Second).Await(ctx)
				return err
			})
		}
		if err := g.Wait(context.Background()); err != nil || time.Since(start) != 10*time.Second {
			t.Fatalf("Wait = %v after %v, want nil after 10s", err, time.Since(start))
		}
		boom := errors.New("boom")
		g = future.NewGroup(context.Background(), ex)
		g.Go(func(ctx context.Context) error {
			_, _ = future.Sleep(ex, time.Second).Await(ctx)
			return boom
		})
		g.Go(func(ctx context.Context) error {
			_, err := future.Sleep(ex, time.Hour).Await(ctx)
			return err
		})
		start = time.Now()
		if err := g.Wait(context.Background()); !errors.Is(err, boom) || time.Since(start) != time.Second {
			t.Fatalf("Wait = %v after %v, want boom after 1s", err, time.Since(start))
		}
	})
}

// Close releases a task suspended on a long Sleep and a goroutine parked
// in Await, with ErrClosed, at once.
func TestBubbleClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := executor.New()
		ex.Start()
		task := future.Spawn(ex, func(ctx context.Context) (int, error) {
			_, err := future.Sleep(ex, time.Hour).Await(ctx)
			return 0, err
		})
		parked := make(chan error, 1)
		go func() {
			_, err := future.NewPromise[int](ex).Future().Await(context.Background())
			parked <- err
		}()
		synctest.Wait() // the task and the goroutine wait
		start := time.Now()
		if err := ex.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := task.Await(context.Background()); !errors.Is(err, executor.ErrClosed) {
			t.Fatalf("suspended task: %v, want ErrClosed", err)
		}
		if err := <-parked; !errors.Is(err, executor.ErrClosed) {
			t.Fatalf("parked Await: %v, want ErrClosed", err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("Close took %v of fake time", d)
		}
	})
}

// A callback that blocks in time.Sleep past the stall threshold is a stall
// on fake time, reported while it lasts.
func TestBubbleStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stalls := make(chan executor.Stall, 1)
		ex := start(t, executor.WithStallHandler(time.Second, func(s executor.Stall) { stalls <- s }))
		if _, err := future.Call(ex, func() (int, error) { time.Sleep(3 * time.Second); return 0, nil }).Await(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-stalls:
			if s.Duration < time.Second || s.Duration > 3*time.Second || !strings.Contains(string(s.Stack), "TestBubbleStall") {
				t.Fatalf("Stall{%v}, want a duration in [1s, 3s] and the sleeping callback's stack:\n%s", s.Duration, s.Stack)
			}
		default:
			t.Fatal("the stall was not reported")
		}
	})
}

func TestOrdinaryLast(t *testing.T) { ordinary(t) }

// deadlockEnv makes the test binary run TestDeadlockChild's bubble.
const deadlockEnv = "SPINDLE_SYNCTEST_DEADLOCK"

// A goroutine that awaits a promise nobody resolves, on a loop with the
// default watchdog and probe, is a deadlock that synctest reports (rather
// than a hang until -timeout). synctest reports it by failing the whole
// binary, so the bubble runs in a child process of this test binary.
func TestDeadlockReported(t *testing.T) {
	ctx := spindletest.Context(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDeadlockChild$", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), deadlockEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the child passed; want synctest's deadlock report:\n%s", out)
	}
	if ctx.Err() != nil || !strings.Contains(string(out), "deadlock") {
		t.Fatalf("the child failed without a deadlock report (%v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "(*Future[...]).Await") {
		t.Errorf("the report does not show the forgotten Await:\n%s", out)
	}
}

// TestDeadlockChild is TestDeadlockReported's child: it deadlocks on
// purpose, and only when the parent asks.
func TestDeadlockChild(t *testing.T) {
	if os.Getenv(deadlockEnv) == "" {
		t.Skip("run by TestDeadlockReported")
	}
	synctest.Test(t, func(t *testing.T) {
		ex := start(t)
		p := future.NewPromise[int](ex) // forgotten: nobody resolves it
		_, _ = p.Future().Await(context.Background())
	})
}
