package fileio_test

import (
	"path/filepath"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// started returns a running executor, closed when the test ends.
func started(t testing.TB) *executor.Executor {
	t.Helper()
	ex := executor.New(executor.WithName(t.Name()))
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
