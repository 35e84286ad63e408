package future_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/gid"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	errA = errors.New("error A")
	errB = errors.New("error B")
	errC = errors.New("error C")
)

// result returns the outcome of f, which must already be ready.
func result[T any](t testing.TB, f *future.Future[T]) (T, error) {
	t.Helper()
	if !f.Ready() {
		t.Fatalf("future is not ready")
	}
	return f.Await(context.Background())
}

func addOne(v int) (int, error) { return v + 1, nil }

// register is one way of hanging a continuation on a future: reg calls mark
// when the continuation runs and returns a future that completes, with the
// source's outcome, once the continuation has run.
type register struct {
	name string
	reg  func(f *future.Future[int], mark func()) *future.Future[int]
}

var registers = []register{
	{"Then", func(f *future.Future[int], mark func()) *future.Future[int] {
		return future.Then(f, func(v int) (int, error) { mark(); return v, nil })
	}},
	{"Transform", func(f *future.Future[int], mark func()) *future.Future[int] {
		return future.Transform(f, func(v int, err error) (int, error) { mark(); return v, err })
	}},
	{"OnComplete", func(f *future.Future[int], mark func()) *future.Future[int] {
		p := future.NewPromise[int](f.Executor())
		f.OnComplete(func(v int, err error) { mark(); p.Complete(v, err) })
		return p.Future()
	}},
}

// Continuations on a ready future are scheduled, never run inside the call
// that registers them: neither from a goroutine off the loop nor from a
// callback on the loop.
func TestContinuationsAreAsync(t *testing.T) {
	for _, r := range registers {
		t.Run(r.name+"/off_loop", func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			var ran, onLoop bool
			out := r.reg(future.Resolved(ex, 7), func() { ran, onLoop = true, ex.OnLoop() })
			if ran {
				t.Fatal("continuation ran before the registering call returned")
			}
			if n := ex.RunUntilIdle(); n == 0 {
				t.Fatal("RunUntilIdle ran no task")
			}
			if !ran || !onLoop {
				t.Fatalf("ran=%v onLoop=%v, want both true", ran, onLoop)
			}
			if v, err := result(t, out); v != 7 || err != nil {
				t.Fatalf("got (%v, %v), want (7, nil)", v, err)
			}
		})
		t.Run(r.name+"/on_loop", func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			var ran, onLoop, ranAtReturn bool
			var out *future.Future[int]
			call := future.Call(ex, func() (struct{}, error) {
				out = r.reg(future.Resolved(ex, 8), func() { ran, onLoop = true, ex.OnLoop() })
				ranAtReturn = ran
				return struct{}{}, nil
			})
			ex.RunUntilIdle()
			if _, err := result(t, call); err != nil {
				t.Fatal(err)
			}
			if ranAtReturn {
				t.Fatal("continuation registered on the loop ran before the registering call returned")
			}
			if !ran || !onLoop {
				t.Fatalf("ran=%v onLoop=%v, want both true", ran, onLoop)
			}
			if v, err := result(t, out); v != 8 || err != nil {
				t.Fatalf("got (%v, %v), want (8, nil)", v, err)
			}
		})
	}
}

// A promise resolved from a foreign goroutine while the loop runs elsewhere
// hands its continuations to the loop: they never run on the resolver.
func TestContinuationsNeverRunOnResolvingGoroutine(t *testing.T) {
	for _, r := range registers {
		t.Run(r.name, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			ex.Start()
			p := future.NewPromise[int](ex)
			var runG atomic.Uintptr
			var onLoop atomic.Bool
			out := r.reg(p.Future(), func() {
				runG.Store(gid.Current())
				onLoop.Store(ex.OnLoop())
			})
			resolverG := make(chan uintptr, 1)
			go func() {
				p.Resolve(42)
				resolverG <- gid.Current()
			}()
			if v, err := spindletest.Await(t, out); v != 42 || err != nil {
				t.Fatalf("got (%v, %v), want (42, nil)", v, err)
			}
			if !onLoop.Load() {
				t.Fatal("continuation did not run on the loop")
			}
			if g := <-resolverG; g == runG.Load() {
				t.Fatal("continuation ran on the resolving goroutine")
			}
		})
	}

	t.Run("resolver_idle_loop", func(t *testing.T) {
		// The loop is driven step by step on this goroutine: Resolve must
		// only queue the continuation.
		ex := executor.New()
		defer ex.Close()
		p := future.NewPromise[int](ex)
		ran := false
		out := future.Then(p.Future(), func(v int) (int, error) { ran = true; return v * 2, nil })
		p.Resolve(21)
		if ran {
			t.Fatal("Then callback ran inside Resolve")
		}
		ex.RunUntilIdle()
		if v, err := result(t, out); v != 42 || err != nil || !ran {
			t.Fatalf("got (%v, %v) ran=%v, want (42, nil) ran=true", v, err, ran)
		}
	})
}

// Continuations registered on one future run in registration order, mixed
// kinds included, whether the future is pending or ready when they are
// registered.
func TestFIFOOnOneFuture(t *testing.T) {
	for _, pending := range []bool{true, false} {
		t.Run(fmt.Sprintf("pending=%v", pending), func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			p := future.NewPromise[int](ex)
			if !pending {
				p.Resolve(1)
			}
			const n = 300
			var got []int
			for i := range n {
				r := registers[i%len(registers)]
				r.reg(p.Future(), func() { got = append(got, i) })
			}
			if pending {
				p.Resolve(1)
			}
			ex.RunUntilIdle()
			if len(got) != n {
				t.Fatalf("%d continuations ran, want %d", len(got), n)
			}
			for i, v := range got {
				if v != i {
					t.Fatalf("continuation %d ran at position %d: order %v", v, i, got[:min(len(got), i+5)])
				}
			}
		})
	}
}

// Two chains resolved one after the other advance in lock step: each link
// schedules the next at the back of the queue.
func TestFIFOIndependentChains(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var got []string
	chain := func(name string, head *future.Future[int]) *future.Future[int] {
		f := head
		for i := 1; i <= 4; i++ {
			f = future.Then(f, func(v int) (int, error) {
				got = append(got, fmt.Sprintf("%s%d", name, i))
				return v + 1, nil
			})
		}
		return f
	}
	pa, pb := future.NewPromise[int](ex), future.NewPromise[int](ex)
	ta, tb := chain("A", pa.Future()), chain("B", pb.Future())
	pa.Resolve(0)
	pb.Resolve(100)
	ex.RunUntilIdle()
	want := "A1 B1 A2 B2 A3 B3 A4 B4"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("order %q, want %q", s, want)
	}
	if v, _ := result(t, ta); v != 4 {
		t.Fatalf("chain A = %d, want 4", v)
	}
	if v, _ := result(t, tb); v != 104 {
		t.Fatalf("chain B = %d, want 104", v)
	}
}

// A failure skips every Then callback and reaches the tail unchanged.
func TestErrorPropagatesThroughThen(t *testing.T) {
	wrapped := fmt.Errorf("wrapped: %w", errA)
	cases := []struct {
		name string
		head func(ex *executor.Executor) (*future.Future[int], func())
	}{
		{"Failed", func(ex *executor.Executor) (*future.Future[int], func()) {
			return future.Failed[int](ex, wrapped), func() {}
		}},
		{"Reject", func(ex *executor.Executor) (*future.Future[int], func()) {
			p := future.NewPromise[int](ex)
			return p.Future(), func() { p.Reject(wrapped) }
		}},
		{"Complete", func(ex *executor.Executor) (*future.Future[int], func()) {
			p := future.NewPromise[int](ex)
			return p.Future(), func() { p.Complete(99, wrapped) }
		}},
		{"callback_error", func(ex *executor.Executor) (*future.Future[int], func()) {
			p := future.NewPromise[int](ex)
			f := future.Then(p.Future(), func(int) (int, error) { return 0, wrapped })
			return f, func() { p.Resolve(1) }
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			head, fire := c.head(ex)
			calls := 0
			f := head
			for range 10 {
				f = future.Then(f, func(v int) (int, error) { calls++; return v + 1, nil })
			}
			s := future.Then(f, func(v int) (string, error) { calls++; return "x", nil })
			fire()
			ex.RunUntilIdle()
			_, err := result(t, s)
			if calls != 0 {
				t.Fatalf("%d Then callbacks ran on a failed chain", calls)
			}
			if err != wrapped || !errors.Is(err, errA) {
				t.Fatalf("tail error %v, want the head's error %v", err, wrapped)
			}
		})
	}
}

func TestTransform(t *testing.T) {
	cases := []struct {
		name    string
		in      func(ex *executor.Executor) *future.Future[int]
		fn      func(int, error) (string, error)
		want    string
		wantErr error
	}{
		{"recover_error", func(ex *executor.Executor) *future.Future[int] { return future.Failed[int](ex, errA) },
			func(v int, err error) (string, error) {
				if errors.Is(err, errA) {
					return "recovered", nil
				}
				return "", errC
			}, "recovered", nil},
		{"value_to_error", func(ex *executor.Executor) *future.Future[int] { return future.Resolved(ex, 3) },
			func(v int, err error) (string, error) {
				if v == 3 && err == nil {
					return "", errB
				}
				return "bad", nil
			}, "", errB},
		{"value_to_value", func(ex *executor.Executor) *future.Future[int] { return future.Resolved(ex, 3) },
			func(v int, err error) (string, error) { return fmt.Sprint(v * 2), err }, "6", nil},
		{"error_to_other_error", func(ex *executor.Executor) *future.Future[int] { return future.Failed[int](ex, errA) },
			func(v int, err error) (string, error) { return "", fmt.Errorf("%w and %w", err, errB) }, "", errB},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			out := future.Transform(c.in(ex), c.fn)
			// A value after the transformed error must again skip Then.
			tail := future.Then(out, func(s string) (string, error) { return s + "!", nil })
			ex.RunUntilIdle()
			v, err := result(t, out)
			if v != c.want || !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("Transform = (%q, %v), want (%q, %v)", v, err, c.want, c.wantErr)
			}
			tv, terr := result(t, tail)
			if c.wantErr == nil && (tv != c.want+"!" || terr != nil) {
				t.Fatalf("Then after recovery = (%q, %v)", tv, terr)
			}
			if c.wantErr != nil && (tv != "" || !errors.Is(terr, c.wantErr)) {
				t.Fatalf("Then after error = (%q, %v)", tv, terr)
			}
		})
	}
}

func TestResolvedAndFailed(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	r := future.Resolved(ex, "v")
	if !r.Ready() || r.Executor() != ex {
		t.Fatalf("Resolved: Ready=%v Executor ok=%v", r.Ready(), r.Executor() == ex)
	}
	if v, err := r.Await(context.Background()); v != "v" || err != nil {
		t.Fatalf("Resolved = (%q, %v)", v, err)
	}
	f := future.Failed[string](ex, errA)
	if !f.Ready() {
		t.Fatal("Failed future is not ready")
	}
	if v, err := f.Await(context.Background()); v != "" || err != errA {
		t.Fatalf("Failed = (%q, %v)", v, err)
	}
	if r.Cancel() || f.Cancel() {
		t.Fatal("Cancel of a completed future returned true")
	}
	if res, ok := f.Peek(); !ok || res.Err != errA {
		t.Fatalf("Peek of a failed future = (%+v, %v)", res, ok)
	}
	p := future.NewPromise[string](ex)
	if _, ok := p.Future().Peek(); ok {
		t.Fatal("Peek of a pending future reported a result")
	}
	p.Resolve("later")
	if res, ok := p.Future().Peek(); !ok || res.Value != "later" || res.Err != nil {
		t.Fatalf("Peek after Resolve = (%+v, %v)", res, ok)
	}
}

// A panic in a callback, call or task body fails its future with a
// *PanicError carrying the value and the panicking stack, and the loop goes
// on running. A task's panic that nobody waits for when it happens reaches
// the panic handler as well: a failure is never silent.
func TestPanicBecomesPanicError(t *testing.T) {
	cases := []struct {
		name    string
		mk      func(ex *executor.Executor, v any) *future.Future[int]
		handled int // panics the handler must see
	}{
		{"Then", func(ex *executor.Executor, v any) *future.Future[int] {
			return future.Then(future.Resolved(ex, 1), func(int) (int, error) { panic(v) })
		}, 0},
		{"Transform", func(ex *executor.Executor, v any) *future.Future[int] {
			return future.Transform(future.Failed[int](ex, errB), func(int, error) (int, error) { panic(v) })
		}, 0},
		{"Call", func(ex *executor.Executor, v any) *future.Future[int] {
			return future.Call(ex, func() (int, error) { panic(v) })
		}, 0},
		{"Spawn", func(ex *executor.Executor, v any) *future.Future[int] {
			return future.Spawn(ex, func(context.Context) (int, error) { panic(v) })
		}, 1},
		{"Spawn_after_await", func(ex *executor.Executor, v any) *future.Future[int] {
			return future.Spawn(ex, func(ctx context.Context) (int, error) {
				if _, err := future.Sleep(ex, 0).Await(ctx); err != nil {
					return 0, err
				}
				panic(v)
			})
		}, 1},
		{"Spawn_observed", func(ex *executor.Executor, v any) *future.Future[int] {
			f := future.Spawn(ex, func(context.Context) (int, error) { panic(v) })
			f.OnComplete(func(int, error) {}) // someone waits: no report
			return f
		}, 0},
	}
	for _, c := range cases {
		for _, val := range []any{"boom " + c.name, fmt.Errorf("boom %s: %w", c.name, errA)} {
			t.Run(fmt.Sprintf("%s/%T", c.name, val), func(t *testing.T) {
				handled := 0
				ex := executor.New(executor.WithPanicHandler(func(v any) {
					if v != val {
						t.Errorf("panic handler got %v, want %v", v, val)
					}
					handled++
				}))
				defer ex.Close()
				f := c.mk(ex, val)
				ex.RunUntilIdle()
				if handled != c.handled {
					t.Errorf("panic handler called %d times, want %d", handled, c.handled)
				}
				_, err := result(t, f)
				var pe *future.PanicError
				if !errors.As(err, &pe) {
					t.Fatalf("error %v (%T) is not a *PanicError", err, err)
				}
				if pe.Value != val {
					t.Fatalf("PanicError.Value = %v, want %v", pe.Value, val)
				}
				if len(pe.Stack) == 0 || !bytes.Contains(pe.Stack, []byte("TestPanicBecomesPanicError")) {
					t.Fatalf("PanicError.Stack does not show the panicking function:\n%s", pe.Stack)
				}
				if !strings.Contains(err.Error(), "boom") {
					t.Fatalf("Error() = %q does not mention the panic value", err.Error())
				}
				if _, isErr := val.(error); isErr && !errors.Is(err, errA) {
					t.Fatalf("errors.Is through PanicError to the panic's error failed: %v", err)
				}
				// The loop survived.
				after := future.Then(future.Resolved(ex, 1), addOne)
				ex.RunUntilIdle()
				if v, err := result(t, after); v != 2 || err != nil {
					t.Fatalf("loop after the panic: (%v, %v)", v, err)
				}
			})
		}
	}
}

// A panic that no future carries (OnComplete, Post, Submit) goes to the
// executor's panic handler and the loop goes on.
func TestPanicWithoutFutureGoesToHandler(t *testing.T) {
	cases := []struct {
		name string
		do   func(ex *executor.Executor)
	}{
		{"OnComplete", func(ex *executor.Executor) {
			future.Resolved(ex, 1).OnComplete(func(int, error) { panic("boom OnComplete") })
		}},
		{"Post", func(ex *executor.Executor) {
			future.Call(ex, func() (int, error) {
				ex.Post(func() { panic("boom Post") })
				return 0, nil
			})
		}},
		{"Submit", func(ex *executor.Executor) {
			if err := ex.Submit(func() { panic("boom Submit") }); err != nil {
				panic(err)
			}
		}},
		{"OnCancel", func(ex *executor.Executor) {
			p := future.NewPromise[int](ex)
			p.OnCancel(func() { panic("boom OnCancel") })
			p.Future().Cancel()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []any
			var handlerOnLoop bool
			var ex *executor.Executor
			ex = executor.New(executor.WithPanicHandler(func(v any) {
				got = append(got, v)
				handlerOnLoop = ex.OnLoop()
			}))
			defer ex.Close()
			c.do(ex)
			after := false
			if err := ex.Submit(func() { after = true }); err != nil {
				t.Fatal(err)
			}
			ex.RunUntilIdle()
			if len(got) != 1 || got[0] != "boom "+c.name {
				t.Fatalf("handler got %v, want [boom %s]", got, c.name)
			}
			if !handlerOnLoop {
				t.Fatal("panic handler did not run on the loop")
			}
			if !after {
				t.Fatal("work queued after the panic did not run")
			}
		})
	}
}

// A chain of 10^6 Then links resolves without recursion: the stack limit is
// lowered so that a recursive resolution would crash the test.
func TestLongChain(t *testing.T) {
	n := 1_000_000
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			old := debug.SetMaxStack(8 << 20)
			defer debug.SetMaxStack(old)
			p := future.NewPromise[int](ex)
			calls := 0
			f := p.Future()
			for range n {
				f = future.Then(f, func(v int) (int, error) { calls++; return v + 1, nil })
			}
			start := time.Now()
			if fail {
				p.Reject(errA)
			} else {
				p.Resolve(0)
			}
			ran := ex.RunUntilIdle()
			v, err := result(t, f)
			t.Logf("%d links in %v, %d tasks", n, time.Since(start), ran)
			if fail {
				if calls != 0 || !errors.Is(err, errA) {
					t.Fatalf("failed chain: %d calls, err %v", calls, err)
				}
			} else if v != n || err != nil || calls != n {
				t.Fatalf("chain = (%d, %v) after %d calls, want (%d, nil)", v, err, calls, n)
			}
			if ran < n || ran > n+n/10 {
				t.Fatalf("%d tasks for %d links", ran, n)
			}
		})
	}
}

func TestAwaitTimeout(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Start()
	p := future.NewPromise[int](ex)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := p.Future().Await(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await = %v, want context.DeadlineExceeded", err)
	}
	if ctx.Err() == nil {
		t.Fatalf("Await returned after %v, before its ctx ended", time.Since(start))
	}

	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := p.Future().Await(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await with a cancelled ctx = %v, want context.Canceled", err)
	}

	// The future is still usable after the timed-out waits.
	p.Resolve(5)
	if v, err := spindletest.Await(t, p.Future()); v != 5 || err != nil {
		t.Fatalf("Await after resolve = (%v, %v)", v, err)
	}
}

// On the loop, outside a task, Await of a pending future reports a deadlock at
// once; a ready future still returns its value there.
func TestAwaitDeadlockOnLoop(t *testing.T) {
	for _, started := range []bool{false, true} {
		t.Run(fmt.Sprintf("started=%v", started), func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			pending := future.NewPromise[int](ex).Future()
			ready := future.Resolved(ex, 3)
			type out struct {
				pendErr  error
				readyV   int
				readyErr error
			}
			// The timeout only turns a hang into a failure.
			ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
			defer cancel()
			call := future.Call(ex, func() (out, error) {
				var o out
				_, o.pendErr = pending.Await(ctx)
				o.readyV, o.readyErr = ready.Await(ctx)
				return o, nil
			})
			// Also from a Then callback.
			th := future.Then(ready, func(int) (error, error) {
				_, err := pending.Await(ctx)
				return err, nil
			})
			var o out
			var thenErr, err error
			if started {
				ex.Start()
				o, err = spindletest.Await(t, call)
				if err == nil {
					thenErr, err = spindletest.Await(t, th)
				}
			} else {
				ex.RunUntilIdle()
				o, err = result(t, call)
				if err == nil {
					thenErr, err = result(t, th)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(o.pendErr, future.ErrDeadlock) || !errors.Is(thenErr, future.ErrDeadlock) {
				t.Fatalf("Await on the loop of a pending future = %v / %v, want ErrDeadlock", o.pendErr, thenErr)
			}
			if o.readyV != 3 || o.readyErr != nil {
				t.Fatalf("Await on the loop of a ready future = (%v, %v), want (3, nil)", o.readyV, o.readyErr)
			}
		})
	}
}

func TestAwaitFromManyGoroutines(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Start()
	p := future.NewPromise[string](ex)
	const n = 64
	var started, done sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
			defer cancel()
			started.Done()
			v, err := p.Future().Await(ctx)
			if err != nil || v != "go" {
				errs <- fmt.Errorf("Await = (%q, %v)", v, err)
			}
		}()
	}
	started.Wait()
	p.Resolve("go")
	done.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCancel(t *testing.T) {
	t.Run("pending", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		p := future.NewPromise[int](ex)
		var runs int
		var onLoop bool
		p.OnCancel(func() { runs++; onLoop = ex.OnLoop() })
		if !p.Future().Cancel() {
			t.Fatal("Cancel of a pending future returned false")
		}
		if runs != 0 {
			t.Fatal("OnCancel ran inside Cancel")
		}
		if p.Future().Cancel() {
			t.Fatal("second Cancel returned true")
		}
		if p.Resolve(1) || p.Reject(errA) || p.Complete(2, nil) {
			t.Fatal("completing a cancelled promise returned true")
		}
		ex.RunUntilIdle()
		if runs != 1 || !onLoop {
			t.Fatalf("OnCancel ran %d times (onLoop=%v), want once on the loop", runs, onLoop)
		}
		if v, err := result(t, p.Future()); v != 0 || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled future = (%v, %v), want (0, context.Canceled)", v, err)
		}
	})

	t.Run("resolved_normally", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		p := future.NewPromise[int](ex)
		runs := 0
		p.OnCancel(func() { runs++ })
		if !p.Resolve(4) {
			t.Fatal("Resolve returned false")
		}
		if p.Future().Cancel() {
			t.Fatal("Cancel after Resolve returned true")
		}
		p.OnCancel(func() { runs++ }) // registered after completion: never runs
		ex.RunUntilIdle()
		if runs != 0 {
			t.Fatalf("OnCancel ran %d times on a resolved future", runs)
		}
		if v, err := result(t, p.Future()); v != 4 || err != nil {
			t.Fatalf("got (%v, %v)", v, err)
		}
	})

	t.Run("OnCancel_after_cancel", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		p := future.NewPromise[int](ex)
		p.Future().Cancel()
		runs := 0
		p.OnCancel(func() { runs++ })
		if runs != 0 {
			t.Fatal("OnCancel registered after Cancel ran synchronously")
		}
		ex.RunUntilIdle()
		if runs != 1 {
			t.Fatalf("OnCancel registered after Cancel ran %d times, want 1", runs)
		}
	})

	t.Run("from_foreign_goroutine", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		ex.Start()
		p := future.NewPromise[int](ex)
		ran := make(chan bool, 2)
		p.OnCancel(func() { ran <- ex.OnLoop() })
		go p.Future().Cancel()
		select {
		case onLoop := <-ran:
			if !onLoop {
				t.Fatal("OnCancel did not run on the loop")
			}
		case <-time.After(spindletest.Safety):
			t.Fatal("OnCancel did not run")
		}
		if _, err := spindletest.Await(t, p.Future()); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
		// Exactly once: nothing else arrives before the loop is drained.
		ex.Close()
		if len(ran) != 0 {
			t.Fatal("OnCancel ran twice")
		}
	})

	t.Run("propagates_through_Then", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		p := future.NewPromise[int](ex)
		called := false
		th := future.Then(p.Future(), func(v int) (int, error) { called = true; return v, nil })
		tr := future.Transform(p.Future(), func(v int, err error) (error, error) { return err, nil })
		p.Future().Cancel()
		ex.RunUntilIdle()
		if _, err := result(t, th); called || !errors.Is(err, context.Canceled) {
			t.Fatalf("Then on a cancelled future: called=%v err=%v", called, err)
		}
		if seen, _ := result(t, tr); !errors.Is(seen, context.Canceled) {
			t.Fatalf("Transform saw %v, want context.Canceled", seen)
		}
	})

	t.Run("derived_future_before_its_callback", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		p := future.NewPromise[int](ex)
		called := false
		th := future.Then(p.Future(), func(v int) (int, error) { called = true; return v, nil })
		if !th.Cancel() {
			t.Fatal("Cancel of a pending Then future returned false")
		}
		p.Resolve(1)
		ex.RunUntilIdle()
		if called {
			t.Fatal("callback of a cancelled Then future ran")
		}
		if _, err := result(t, th); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("Call_before_it_runs", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		called := false
		f := future.Call(ex, func() (int, error) { called = true; return 1, nil })
		f.Cancel()
		ex.RunUntilIdle()
		if _, err := result(t, f); called || !errors.Is(err, context.Canceled) {
			t.Fatalf("called=%v err=%v", called, err)
		}
	})

	t.Run("Sleep_stops_timer", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		var s *future.Future[struct{}]
		future.Call(ex, func() (int, error) { s = future.Sleep(ex, time.Hour); return 0, nil })
		ex.RunUntilIdle()
		if n := ex.Stats().Timers; n != 1 {
			t.Fatalf("%d timers pending after Sleep, want 1", n)
		}
		s.Cancel()
		ex.RunUntilIdle()
		if n := ex.Stats().Timers; n != 0 {
			t.Fatalf("%d timers pending after cancelling Sleep, want 0", n)
		}
		if _, err := result(t, s); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestPromiseMisuse(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	f := future.Resolved(ex, 1)
	cases := []struct {
		name, want string
		fn         func()
	}{
		{"Reject(nil)", "Reject", func() { future.NewPromise[int](ex).Reject(nil) }},
		{"Failed(nil)", "Failed", func() { future.Failed[int](ex, nil) }},
		{"NewPromise(nil)", "NewPromise", func() { future.NewPromise[int](nil) }},
		{"Then(nil)", "Then", func() { future.Then[int, int](f, nil) }},
		{"Transform(nil)", "Transform", func() { future.Transform[int, int](f, nil) }},
		{"OnComplete(nil)", "OnComplete", func() { f.OnComplete(nil) }},
		{"OnCancel(nil)", "OnCancel", func() { future.NewPromise[int](ex).OnCancel(nil) }},
		{"Call(nil fn)", "Call", func() { future.Call[int](ex, nil) }},
		{"Call(nil ex)", "Call", func() { future.Call(nil, func() (int, error) { return 0, nil }) }},
		{"Spawn(nil fn)", "Spawn", func() { future.Spawn[int](ex, nil) }},
		{"Spawn(nil ex)", "Spawn", func() { future.Spawn(nil, func(context.Context) (int, error) { return 0, nil }) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { spindletest.MustPanic(t, "", c.want, c.fn) })
	}

	t.Run("complete_twice", func(t *testing.T) {
		p := future.NewPromise[int](ex)
		if !p.Resolve(1) {
			t.Fatal("first Resolve returned false")
		}
		if p.Resolve(2) || p.Reject(errA) || p.Complete(3, nil) {
			t.Fatal("second completion returned true")
		}
		if v, err := result(t, p.Future()); v != 1 || err != nil {
			t.Fatalf("got (%v, %v), want the first value", v, err)
		}
		q := future.NewPromise[int](ex)
		if !q.Complete(5, errB) || q.Resolve(6) {
			t.Fatal("Complete with an error did not complete the promise once")
		}
		if _, err := result(t, q.Future()); err != errB {
			t.Fatalf("Complete(v, err) = %v, want %v", err, errB)
		}
	})
}

func TestCloseReleasesAwaiters(t *testing.T) {
	for _, started := range []bool{false, true} {
		t.Run(fmt.Sprintf("started=%v", started), func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			if started {
				ex.Start()
			}
			p := future.NewPromise[int](ex)
			th := future.Then(p.Future(), addOne)
			const n = 16
			var ready, done sync.WaitGroup
			errs := make(chan error, 2*n)
			for i := range 2 * n {
				f := p.Future()
				if i%2 == 1 {
					f = th
				}
				ready.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					// The timeout only turns a hang into a failure.
					ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
					defer cancel()
					ready.Done()
					_, err := f.Await(ctx)
					errs <- err
				}()
			}
			ready.Wait()
			if err := ex.Close(); err != nil {
				t.Fatal(err)
			}
			done.Wait()
			close(errs)
			for err := range errs {
				if !errors.Is(err, executor.ErrClosed) {
					t.Fatalf("Await released by Close with %v, want executor.ErrClosed", err)
				}
			}
			// After Close, Await of a pending future fails at once.
			if _, err := spindletest.Await(t, p.Future()); !errors.Is(err, executor.ErrClosed) {
				t.Fatalf("Await after Close = %v", err)
			}
		})
	}
}

func TestCallAndSpawnAfterClose(t *testing.T) {
	ex := executor.New()
	ex.Start()
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	called := false
	c := future.Call(ex, func() (int, error) { called = true; return 1, nil })
	s := future.Spawn(ex, func(context.Context) (int, error) { called = true; return 1, nil })
	for name, f := range map[string]*future.Future[int]{"Call": c, "Spawn": s} {
		if !f.Ready() {
			t.Fatalf("%s after Close: future not ready", name)
		}
		if _, err := f.Await(context.Background()); !errors.Is(err, executor.ErrClosed) {
			t.Fatalf("%s after Close = %v, want executor.ErrClosed", name, err)
		}
	}
	if called {
		t.Fatal("a function ran after Close")
	}
	// A continuation registered after Close cannot run; awaiting it must not
	// hang.
	th := future.Then(future.Resolved(ex, 1), addOne)
	if _, err := spindletest.Await(t, th); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Then after Close = %v, want executor.ErrClosed", err)
	}
}

// Call runs its function on the loop, from any goroutine, and its future
// carries the result.
func TestCallFromManyGoroutines(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Start()
	counter := 0 // loop-owned: no lock
	const g, per = 8, 200
	spindletest.Parallel(g, func(i int) {
		last := -1
		for j := range per {
			v, err := spindletest.Await(t, future.Call(ex, func() (int, error) {
				if !ex.OnLoop() {
					return 0, errors.New("Call ran off the loop")
				}
				counter++
				return j, nil
			}))
			if err != nil || v != last+1 {
				t.Errorf("goroutine %d: Call = (%v, %v), want (%d, nil)", i, v, err, last+1)
				return
			}
			last = v
		}
	})
	n, err := spindletest.Await(t, future.Call(ex, func() (int, error) { return counter, nil }))
	if n != g*per || err != nil {
		t.Fatalf("counter = %d, %v; want %d", n, err, g*per)
	}
}
