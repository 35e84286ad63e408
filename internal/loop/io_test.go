package loop_test

import (
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// fakeIO is an IO whose readiness the test controls: ready() makes the
// next Wait return and Dispatch run fn on the loop.
type fakeIO struct {
	ex *executor.Executor

	mu       sync.Mutex
	wake     chan struct{} // Wake and ready send here (capacity 1)
	asleep   chan struct{} // told each time a blocking Wait begins (capacity 1)
	waits    []time.Duration
	wakes    int
	pending  []func() // handed to Dispatch by the next Wait
	found    []func()
	dispatch int
}

func newFakeIO(ex *executor.Executor) *fakeIO {
	return &fakeIO{ex: ex, wake: make(chan struct{}, 1), asleep: make(chan struct{}, 1)}
}

func (f *fakeIO) Wait(d time.Duration) {
	if !f.ex.OnLoop() {
		panic("Wait off the loop")
	}
	f.mu.Lock()
	f.waits = append(f.waits, d)
	f.mu.Unlock()
	if d != 0 {
		var timeout <-chan time.Time
		if d > 0 {
			timeout = time.After(d)
		}
		select {
		case f.asleep <- struct{}{}:
		default:
		}
		select {
		case <-f.wake:
		case <-timeout:
		}
	}
	f.mu.Lock()
	f.found, f.pending = f.pending, nil
	f.mu.Unlock()
}

func (f *fakeIO) Dispatch() {
	if !f.ex.OnLoop() {
		panic("Dispatch off the loop")
	}
	f.dispatch++
	for _, fn := range f.found {
		fn()
	}
	f.found = nil
}

func (f *fakeIO) Wake() {
	f.mu.Lock()
	f.wakes++
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// ready makes fn the readiness the next Wait finds, and wakes it.
func (f *fakeIO) ready(fn func()) {
	f.mu.Lock()
	f.pending = append(f.pending, fn)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fakeIO) snapshot() (waits []time.Duration, wakes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.waits...), f.wakes
}

// A loop with an IO sleeps in it: readiness is dispatched on the loop,
// Submit wakes it through IO.Wake, and the next timer is the timeout.
func TestIOIsTheLoopsWait(t *testing.T) {
	ex := executor.New()
	f := newFakeIO(ex)
	ex.Drive(func() { lp(ex).SetIO(f) })
	ex.Start()
	defer ex.Close()

	// Readiness runs its handler on the loop.
	spindletest.Recv(t, f.asleep) // the loop sleeps in the IO
	got := make(chan bool, 1)
	f.ready(func() { got <- ex.OnLoop() })
	if !spindletest.Recv(t, got) {
		t.Fatal("dispatched off the loop")
	}

	// Submit to a sleeping loop wakes it through the IO.
	spindletest.Recv(t, f.asleep) // asleep again, after the dispatch
	_, wakesBefore := f.snapshot()
	done := make(chan struct{})
	if err := ex.Submit(func() { close(done) }); err != nil {
		t.Fatal(err)
	}
	spindletest.Recv(t, done)
	if _, wakes := f.snapshot(); wakes <= wakesBefore {
		t.Fatal("Submit to a sleeping loop did not call IO.Wake")
	}

	// A timer bounds the wait.
	fired := make(chan struct{})
	ex.Submit(func() { ex.AfterFunc(20*time.Millisecond, func() { close(fired) }) })
	spindletest.Recv(t, fired)
	waits, _ := f.snapshot()
	bounded := false
	for _, d := range waits {
		if d > 0 && d <= 20*time.Millisecond {
			bounded = true
		}
	}
	if !bounded {
		t.Fatalf("no wait bounded by the 20ms timer: %v", waits)
	}
}

// A busy loop polls its IO with a zero timeout between batches, and
// RunUntilIdle polls it before reporting idle.
func TestIOPolledBetweenBusyBatches(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	f := newFakeIO(ex)
	ex.Drive(func() { lp(ex).SetIO(f) })
	ran := false
	f.ready(func() { ran = true })
	ex.Drive(func() {
		for range 300 {
			ex.Post(func() {})
		}
	})
	if !ran {
		t.Fatal("readiness was not dispatched while the loop ran until idle")
	}
	waits, _ := f.snapshot()
	zero := 0
	for _, d := range waits {
		if d != 0 {
			t.Fatalf("RunUntilIdle blocked in the IO: %v", waits)
		}
		zero++
	}
	if zero < 3 {
		t.Fatalf("%d zero-timeout polls over three batches and the idle check, want at least 3", zero)
	}
}

// A loop without an IO never calls one, and SetIO twice or off the loop
// panics.
func TestSetIOMisuse(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	f := newFakeIO(ex)
	spindletest.MustPanic(t, "executor: ", "does not hold the loop", func() { lp(ex).SetIO(f) })
	ex.Drive(func() { lp(ex).SetIO(f) })
	ex.Drive(func() {
		spindletest.MustPanic(t, "executor: ", "already has an IO", func() { lp(ex).SetIO(newFakeIO(ex)) })
	})
}
