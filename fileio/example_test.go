package fileio_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing/fstest"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/sim"
)

// A log on the loop: three durable appends made in one batch go out in
// one write and share one fsync; each future completes once its record is
// on the disk.
func Example() {
	dir, err := os.MkdirTemp("", "fileio-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	out := future.Spawn(ex, func(ctx context.Context) (string, error) {
		f, err := fileio.Create(ex, filepath.Join(dir, "log")).Await(ctx)
		if err != nil {
			return "", err
		}
		defer f.Close()
		offs, err := future.All(
			f.Append([]byte("one\n"), fileio.Durable),
			f.Append([]byte("two\n"), fileio.Durable),
			f.Append([]byte("three\n"), fileio.Durable),
		).Await(ctx)
		if err != nil {
			return "", err
		}
		data, err := f.ReadAt(0, 64).Await(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("offsets %v\n%s", offs, data), nil
	})
	s, err := out.Await(context.Background())
	if err != nil {
		panic(err)
	}
	st := fileio.StatsOf(ex)
	fmt.Print(s)
	fmt.Printf("%d appends, %d write, %d syncs asked, %d fsync\n", st.Appends, st.Writes, st.Syncs, st.Fsyncs)
	// Output:
	// offsets [0 4 8]
	// one
	// two
	// three
	// 3 appends, 1 write, 3 syncs asked, 1 fsync
}

// Under package sim, files live on the host's simulated disk: a crash
// keeps what was synced, and what was not may be lost or torn.
func Example_crash() {
	w := sim.New(7)
	defer w.Close()
	h := w.Host("db")
	ex := h.Executor()
	done := future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
		f, err := fileio.Create(ex, "/data/log").Await(ctx)
		if err != nil {
			return struct{}{}, err
		}
		if _, err := f.Append([]byte("synced\n"), fileio.Durable).Await(ctx); err != nil {
			return struct{}{}, err
		}
		_, err = f.Append([]byte("not synced\n")).Await(ctx)
		return struct{}{}, err
	})
	w.RunUntil(done.Ready, time.Minute)
	before, _ := h.Disk().ReadFile("/data/log")
	h.Disk().Faults.CrashLose = 1 // every unsynced write is lost
	h.Disk().Crash(w.Rand())
	after, _ := h.Disk().ReadFile("/data/log")
	fmt.Printf("before the crash: %q\nafter: %q\n", before, after)
	// Output:
	// before the crash: "synced\nnot synced\n"
	// after: "synced\n"
}

// Work of a file system that is not the operating system's (here an
// fs.FS) runs on the executor's file workers, as fileio's own system
// calls do, and its result comes back to the loop as a future.
func ExampleDo() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	fsys := fstest.MapFS{"greeting.txt": {Data: []byte("hello from a worker\n")}}

	b, err := fileio.Do(ex, func() ([]byte, error) {
		return fs.ReadFile(fsys, "greeting.txt") // may block: never on the loop
	}).Await(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Print(string(b))
	// Output:
	// hello from a worker
}
