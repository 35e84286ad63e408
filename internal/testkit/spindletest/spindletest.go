package spindletest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Safety bounds every wait that must not hang. It is never the
// synchronisation itself: a test that reaches it has failed.
const Safety = 20 * time.Second

// Awaiter is what Await waits on: a *future.Future.
type Awaiter[T any] interface {
	Await(ctx context.Context) (T, error)
}

// Await waits for f from a goroutine that does not hold its loop, and fails
// the test if the safety net ends the wait. An Await that succeeded is never
// failed, however late it returned.
func Await[T any](t testing.TB, f Awaiter[T]) (T, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Safety)
	defer cancel()
	v, err := f.Await(ctx)
	if err != nil && ctx.Err() != nil {
		t.Fatalf("Await: safety timeout (%v) hit: %v", Safety, err)
	}
	return v, err
}

// Context returns a context that ends after Safety, or when the test ends.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Safety)
	t.Cleanup(cancel)
	return ctx
}

// MustPanic runs fn and fails the test unless fn panics with a message
// that starts with prefix and contains want.
func MustPanic(t testing.TB, prefix, want string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		v := recover()
		if v == nil {
			t.Fatalf("no panic, want one starting with %q and containing %q", prefix, want)
		}
		msg := fmt.Sprint(v)
		if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, want) {
			t.Fatalf("panic %q, want one starting with %q and containing %q", msg, prefix, want)
		}
	}()
	fn()
}

// Recv receives from ch, failing the test if the safety net ends the wait.
func Recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Safety):
		t.Fatalf("Recv: safety timeout (%v) hit", Safety)
		panic("unreachable")
	}
}

// Stepper is a loop a test drives itself: an *executor.Executor that
// nobody runs.
type Stepper interface {
	RunUntilIdle() int
}

// DriveUntil steps ex's loop until cond holds: a step runs the tasks up
// to their waits, and between steps other goroutines (one that queues work
// of its own, a context's AfterFunc) get the processor. It fails the test
// if cond does not hold within Safety.
func DriveUntil(t testing.TB, ex Stepper, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Safety)
	for ex.RunUntilIdle(); !cond(); ex.RunUntilIdle() {
		if time.Now().After(deadline) {
			t.Fatalf("DriveUntil: safety timeout (%v) hit", Safety)
		}
		runtime.Gosched()
	}
}

// Do sends an HTTP request with body (none if empty), bounded by Safety,
// and returns the status code and the body read back.
func Do(client *http.Client, method, url, body string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Safety)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Parallel calls fn(0), ..., fn(n-1), each on a goroutine of its own, all
// at once, and returns when every call has returned.
func Parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}

// HeapInUse returns the live heap after two full collections (the second
// one frees what finalizers and cleanups of the first released), for
// tests that check that memory follows live work.
func HeapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// Scale returns how many of full operations a test should make in this
// build, so that a memory test stays fast where every operation costs
// more: full, a quarter of it under the race detector, a twentieth with
// the portable goroutine identity (which asks the runtime for the
// caller's stack at every loop-only call).
func Scale(full int) int {
	switch {
	case PortableGoroutineID:
		return full / 20
	case RaceEnabled:
		return full / 4
	}
	return full
}

// Panics records what a panic handler receives: pass its Handler to
// executor.WithPanicHandler. It may be called from any goroutine.
type Panics struct {
	mu  sync.Mutex
	got []any
}

// Handler records v.
func (p *Panics) Handler(v any) {
	p.mu.Lock()
	p.got = append(p.got, v)
	p.mu.Unlock()
}

// Got returns a copy of what the handler has received so far, in order.
func (p *Panics) Got() []any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]any(nil), p.got...)
}
