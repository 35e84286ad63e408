package fileio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/internal/uring"
)

// openFDs counts the process's open descriptors (Linux), -1 elsewhere.
func openFDs(t *testing.T) int {
	if runtime.GOOS != "linux" {
		return -1
	}
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func wait[T any](t *testing.T, f *future.Future[T]) (T, error) {
	t.Helper()
	return spindletest.Await[T](t, f)
}

// TestExecutorCloseRaces closes the executor while files are open and
// operations of every kind are in flight or waiting: each future
// completes (with its result, or executor.ErrClosed), every descriptor is
// closed once, after the system calls in flight on it, and no worker
// remains.
func TestExecutorCloseRaces(t *testing.T) {
	for _, eng := range []Engine{EnginePool, EngineURing} {
		t.Run(string(eng), func(t *testing.T) { executorCloseRaces(t, eng) })
	}
}

// onRing skips a test of the io_uring engine where the kernel refuses it.
func onRing(t *testing.T, eng Engine) {
	if eng != EngineURing {
		return
	}
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	_, err := wait(t, future.Call(ex, func() (*uring.Ring, error) { return uring.Of((*loop.Loop)(ex)) }))
	if err != nil {
		t.Skipf("the kernel refuses io_uring here: %v", err)
	}
}

func executorCloseRaces(t *testing.T, eng Engine) {
	onRing(t, eng)
	for round := 0; round < 20; round++ {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			fds := openFDs(t)
			dir := t.TempDir()
			ex := executor.New()
			Configure(ex, Config{Workers: 1 + round%4, Engine: eng})
			ex.Start()
			var futs []func() error
			var files []*File
			for i := 0; i < 4; i++ {
				f, err := wait(t, Create(ex, filepath.Join(dir, fmt.Sprint(i))))
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, f)
			}
			var eg engine
			done := make(chan struct{})
			ex.Submit(func() {
				st, _ := stateOf((*loop.Loop)(ex))
				eg = st.eng
				if eg.name() != string(eng) {
					t.Errorf("engine %s, want %s", eg.name(), eng)
				}
				for i, f := range files {
					w := f.WriteAt(make([]byte, 4096), 0)
					a := f.Append([]byte("x"), Durable)
					s := f.Sync()
					r := f.ReadAt(0, 10)
					o := Open(ex, filepath.Join(dir, fmt.Sprint(i)))
					futs = append(futs,
						func() error { _, err := wait(t, w); return err },
						func() error { _, err := wait(t, a); return err },
						func() error { _, err := wait(t, s); return err },
						func() error { _, err := wait(t, r); return err },
						func() error {
							g, err := wait(t, o)
							if err == nil {
								_, err = wait(t, g.Close())
							}
							return err
						})
					if i%2 == 0 {
						c := f.Close()
						futs = append(futs, func() error { _, err := wait(t, c); return err })
					}
				}
				if round%2 == 0 {
					ex.Close() // from the loop, with everything in flight
				}
				close(done)
			})
			<-done
			ex.Close()
			for _, f := range futs {
				if err := f(); err != nil && !errors.Is(err, executor.ErrClosed) {
					t.Fatalf("an operation failed with %v, want its result or executor.ErrClosed", err)
				}
			}
			eg.wait() // the workers end as their system calls return
			if fds >= 0 {
				if n := openFDs(t); n != fds {
					t.Fatalf("%d descriptors open after the executor closed, %d before", n, fds)
				}
			}
			for _, f := range files {
				if _, err := wait(t, f.Sync()); !errors.Is(err, executor.ErrClosed) {
					t.Fatalf("Sync after the executor closed: %v", err)
				}
			}
		})
	}
}

// TestCloseWaitsForOps checks that a File's Close lets everything asked
// before it finish, closes the descriptor once, and refuses what comes
// after.
func TestCloseWaitsForOps(t *testing.T) {
	for _, eng := range []Engine{EnginePool, EngineURing} {
		t.Run(string(eng), func(t *testing.T) { closeWaitsForOps(t, eng) })
	}
}

func closeWaitsForOps(t *testing.T, eng Engine) {
	onRing(t, eng)
	ex := executor.New()
	Configure(ex, Config{Engine: eng})
	ex.Start()
	defer ex.Close()
	p := filepath.Join(t.TempDir(), "f")
	if _, err := wait(t, Stat(ex, filepath.Dir(p))); err != nil { // the engine (and its ring) made first
		t.Fatal(err)
	}
	fds := openFDs(t)
	f, err := wait(t, Create(ex, p))
	if err != nil {
		t.Fatal(err)
	}
	var ws []*future.Future[int64]
	var closed, after *future.Future[struct{}]
	ex.Submit(func() {
		for i := 0; i < 100; i++ {
			ws = append(ws, f.Append([]byte("abcd"), Durable))
		}
		closed = f.Close()
		after = f.Sync()
	})
	if _, err := wait(t, future.Call(ex, func() (int, error) { return 0, nil })); err != nil {
		t.Fatal(err)
	}
	if _, err := wait(t, closed); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if _, err := wait(t, w); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wait(t, after); err == nil {
		t.Fatal("Sync after Close succeeded")
	}
	if b, _ := os.ReadFile(p); len(b) != 400 {
		t.Fatalf("%d bytes after Close, want 400", len(b))
	}
	if fds >= 0 {
		if n := openFDs(t); n != fds {
			t.Fatalf("%d descriptors open after Close, %d before", n, fds)
		}
	}
}
