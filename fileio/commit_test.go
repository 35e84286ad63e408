package fileio_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
)

// TestGroupCommit checks that the syncs asked for in one batch of the loop
// share one fsync, whatever asks for them: Sync, DataSync, Durable writes
// and appends.
func TestGroupCommit(t *testing.T) { onEngines(t, testGroupCommit) }

func testGroupCommit(t *testing.T, eng fileio.Engine) {
	cases := []struct {
		name      string
		n         int
		ask       func(f *fileio.File, i int) *future.Future[struct{}]
		wantFsync uint64
	}{
		{"Sync", 50, func(f *fileio.File, i int) *future.Future[struct{}] { return f.Sync() }, 1},
		{"DataSync", 50, func(f *fileio.File, i int) *future.Future[struct{}] { return f.DataSync() }, 1},
		{"mixed", 20, func(f *fileio.File, i int) *future.Future[struct{}] {
			if i%2 == 0 {
				return f.DataSync()
			}
			return f.Sync()
		}, 1},
		{"Durable Append", 100, func(f *fileio.File, i int) *future.Future[struct{}] {
			return future.Then(f.Append([]byte(fmt.Sprintf("%03d\n", i)), fileio.Durable), func(int64) (struct{}, error) { return struct{}{}, nil })
		}, 1},
		{"Durable Append and Sync", 100, func(f *fileio.File, i int) *future.Future[struct{}] {
			if i%10 == 0 {
				return f.Sync()
			}
			return future.Then(f.Append([]byte(fmt.Sprintf("%03d\n", i)), fileio.Durable), func(int64) (struct{}, error) { return struct{}{}, nil })
		}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := startedOn(t, eng)
			f, _ := create(t, ex, "f")
			before := fileio.StatsOf(ex)
			var all *future.Future[[]struct{}]
			onLoop(t, ex, func() { // one task: one batch
				fs := make([]*future.Future[struct{}], c.n)
				for i := range fs {
					fs[i] = c.ask(f, i)
				}
				all = future.All(fs...)
			})
			must(t, all)
			after := fileio.StatsOf(ex)
			if got := after.Fsyncs - before.Fsyncs; got != c.wantFsync {
				t.Fatalf("%d syncs asked in one batch took %d fsyncs, want %d", c.n, got, c.wantFsync)
			}
			if got := after.Syncs - before.Syncs; got != uint64(c.n) {
				t.Fatalf("Stats.Syncs grew by %d, want %d", got, c.n)
			}
			if after.Writes-before.Writes > 1 {
				t.Fatalf("the appends of one batch took %d writes, want 1", after.Writes-before.Writes)
			}
			must(t, f.Close())
		})
	}
}

// TestSyncCoversOnlyEarlierWrites checks that a write accepted after a
// sync round has started is never reported covered by it: its Durable
// completion waits for the next fsync.
func TestSyncCoversOnlyEarlierWrites(t *testing.T) { onEngines(t, testSyncCoversOnlyEarlierWrites) }

func testSyncCoversOnlyEarlierWrites(t *testing.T, eng fileio.Engine) {
	ex := startedOn(t, eng)
	f, p := create(t, ex, "f")
	type result struct {
		fsyncs uint64
		err    error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	onLoop(t, ex, func() {
		f.Sync().OnComplete(func(_ struct{}, err error) { first <- result{fileio.StatsOf(ex).Fsyncs, err} })
		// A timer runs after the batch boundary, where the sync round has
		// started: the write is accepted while it is in flight (or done).
		ex.AfterFunc(0, func() {
			if fileio.StatsOf(ex).Fsyncs != 1 {
				t.Errorf("the sync round had not started at the batch boundary")
			}
			f.WriteAt([]byte("late"), 0, fileio.Durable).OnComplete(func(_ int, err error) {
				second <- result{fileio.StatsOf(ex).Fsyncs, err}
			})
		})
	})
	r1, r2 := <-first, <-second
	if r1.err != nil || r2.err != nil {
		t.Fatal(r1.err, r2.err)
	}
	if r1.fsyncs != 1 || r2.fsyncs != 2 {
		t.Fatalf("fsyncs when the Sync and the later durable write completed: %d and %d, want 1 and 2", r1.fsyncs, r2.fsyncs)
	}
	must(t, f.Close())
	if b, _ := os.ReadFile(p); string(b) != "late" {
		t.Fatalf("on disk: %q", b)
	}
}

// TestSyncWaitsForWritesInFlight checks that a Sync asked for while writes
// are in flight starts its fsync only once they have completed.
func TestSyncWaitsForWritesInFlight(t *testing.T) { onEngines(t, testSyncWaitsForWritesInFlight) }

func testSyncWaitsForWritesInFlight(t *testing.T, eng fileio.Engine) {
	ex := startedOn(t, eng)
	f, _ := create(t, ex, "f")
	const n = 32
	var writes []*future.Future[int]
	var synced *future.Future[struct{}]
	doneBefore := make(chan int, 1)
	onLoop(t, ex, func() {
		for i := 0; i < n; i++ {
			writes = append(writes, f.WriteAt(make([]byte, 64<<10), int64(i)<<16))
		}
		synced = f.Sync()
		synced.OnComplete(func(struct{}, error) {
			k := 0
			for _, w := range writes {
				if w.Ready() {
					k++
				}
			}
			doneBefore <- k
		})
	})
	must(t, synced)
	if k := <-doneBefore; k != n {
		t.Fatalf("the Sync completed with %d of the %d writes before it complete", k, n)
	}
	must(t, f.Close())
}

// TestShutdownWaits checks that a Shutdown lets the appends and syncs
// accepted before it finish: nothing accepted is lost.
func TestShutdownWaits(t *testing.T) { onEngines(t, testShutdownWaits) }

func testShutdownWaits(t *testing.T, eng fileio.Engine) {
	ex := newOn(t, eng)
	ex.Start()
	p := filepath.Join(t.TempDir(), "f")
	f := must(t, fileio.Create(ex, p))
	var last *future.Future[int64]
	onLoop(t, ex, func() {
		for i := 0; i < 100; i++ {
			last = f.Append([]byte("0123456789"), fileio.Durable)
		}
		f.Close()
		go ex.Shutdown(t.Context())
	})
	if off := must(t, last); off != 990 {
		t.Fatalf("last append at %d", off)
	}
	<-ex.Done()
	if b, _ := os.ReadFile(p); len(b) != 1000 {
		t.Fatalf("%d bytes on disk after Shutdown, want 1000", len(b))
	}
}
