package fileio_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/internal/uring"
)

// engines are the engines of a host loop that every test body runs on.
var engines = []fileio.Engine{fileio.EnginePool, fileio.EngineURing}

// onEngines runs body once per engine, as a subtest named after it; the
// io_uring one is skipped, with the kernel's reason, where the kernel
// refuses a ring.
func onEngines(t *testing.T, body func(t *testing.T, eng fileio.Engine)) {
	for _, eng := range engines {
		t.Run(string(eng), func(t *testing.T) {
			if eng == fileio.EngineURing {
				if err := ringRefusal(); err != nil {
					t.Skipf("the kernel refuses io_uring here: %v", err)
				}
			}
			body(t, eng)
		})
	}
}

var refusal struct {
	once sync.Once
	err  error
}

// ringRefusal returns why a loop of this process cannot have an io_uring
// (nil if it can), asked once.
func ringRefusal() error {
	refusal.once.Do(func() {
		ex := executor.New()
		ex.Start()
		defer ex.Close()
		_, refusal.err = future.Call(ex, func() (*uring.Ring, error) { return uring.Of((*loop.Loop)(ex)) }).Await(context.Background())
	})
	return refusal.err
}

// newOn returns an executor not yet started whose files eng serves.
func newOn(t testing.TB, eng fileio.Engine) *executor.Executor {
	t.Helper()
	ex := executor.New(executor.WithName(t.Name()))
	if err := fileio.Configure(ex, fileio.Config{Engine: eng}); err != nil {
		t.Fatal(err)
	}
	return ex
}

// startedOn returns a running executor whose files eng serves, closed
// when the test ends.
func startedOn(t testing.TB, eng fileio.Engine) *executor.Executor {
	t.Helper()
	ex := newOn(t, eng)
	ex.Start()
	t.Cleanup(func() { ex.Close() })
	return ex
}

// await waits for f (bounded, so a bug fails the test instead of hanging it).
func await[T any](t testing.TB, f *future.Future[T]) (T, error) {
	t.Helper()
	return spindletest.Await[T](t, f)
}

// must waits for f and fails the test on an error.
func must[T any](t testing.TB, f *future.Future[T]) T {
	t.Helper()
	v, err := await(t, f)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// create creates a file in a temp dir of the test.
func create(t testing.TB, ex *executor.Executor, name string) (*fileio.File, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	return must(t, fileio.Create(ex, p)), p
}

// onLoop runs fn on ex's loop and waits for it.
func onLoop(t testing.TB, ex *executor.Executor, fn func()) {
	t.Helper()
	must(t, future.Call(ex, func() (struct{}, error) { fn(); return struct{}{}, nil }))
}
