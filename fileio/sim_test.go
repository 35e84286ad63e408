package fileio_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/sim"
)

// simRun runs body as a task on a new executor of h and steps the world
// until the task has returned; it returns the task's error.
func simRun(t *testing.T, w *sim.World, h *sim.Host, body func(ctx context.Context, ex *executor.Executor) error) error {
	t.Helper()
	ex := h.Executor()
	done := future.Spawn(ex, func(ctx context.Context) (struct{}, error) { return struct{}{}, body(ctx, ex) })
	if !w.RunUntil(done.Ready, time.Hour) {
		t.Fatalf("seed %d: the task did not finish", w.Seed())
	}
	if s := fileio.StatsOf(ex); s.Engine != "sim" {
		t.Fatalf("engine %q on a simulated loop", s.Engine)
	}
	_, err := done.Await(context.Background())
	return err
}

// record is the i-th record of a log: n bytes of one letter, never zero.
func record(i, n int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, n) }

// runLog appends records of the seed's choosing to a file, some durable,
// with syncs between, and returns the trace and what the file holds.
func runLog(t *testing.T, seed int64) (trace string, data []byte) {
	w := sim.New(seed)
	defer w.Close()
	h := w.Host("db")
	rng := w.Rand()
	err := simRun(t, w, h, func(ctx context.Context, ex *executor.Executor) error {
		f, err := fileio.Create(ex, "/data/log").Await(ctx)
		if err != nil {
			return err
		}
		var pending []*future.Future[int64]
		for i := 0; i < 20; i++ {
			var opts []fileio.WriteOption
			if rng.Intn(2) == 0 {
				opts = append(opts, fileio.Durable)
			}
			pending = append(pending, f.Append(record(i, 1+rng.Intn(200)), opts...))
			if rng.Intn(3) == 0 {
				if _, err := f.Sync().Await(ctx); err != nil {
					return err
				}
			}
		}
		for _, p := range pending {
			if _, err := p.Await(ctx); err != nil {
				return err
			}
		}
		_, err = f.Close().Await(ctx)
		return err
	})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	data, _ = h.Disk().ReadFile("/data/log")
	return w.TraceHex(), data
}

// TestSimDeterminism checks that one seed gives one run, byte for byte,
// and that seeds differ.
func TestSimDeterminism(t *testing.T) {
	traces := map[string]bool{}
	for seed := int64(1); seed <= 8; seed++ {
		tr1, d1 := runLog(t, seed)
		tr2, d2 := runLog(t, seed)
		if tr1 != tr2 || !bytes.Equal(d1, d2) {
			t.Fatalf("seed %d: two runs differ: trace %s and %s, %d and %d bytes", seed, tr1, tr2, len(d1), len(d2))
		}
		if len(d1) == 0 {
			t.Fatalf("seed %d: nothing written", seed)
		}
		traces[tr1] = true
	}
	if len(traces) < 8 {
		t.Fatalf("8 seeds gave %d distinct traces", len(traces))
	}
}

// TestSimFaults turns the simulated disk's faults on.
func TestSimFaults(t *testing.T) {
	cases := []struct {
		name   string
		faults func(*sim.DiskFaults)
		body   func(ctx context.Context, ex *executor.Executor, f *fileio.File) error
	}{
		{"failed fsync", func(fl *sim.DiskFaults) { fl.SyncEIO = 1 }, func(ctx context.Context, ex *executor.Executor, f *fileio.File) error {
			if _, err := f.Append([]byte("x"), fileio.Durable).Await(ctx); !errors.Is(err, syscall.EIO) {
				return errors.New("durable Append: " + errString(err) + ", want EIO")
			}
			if _, err := f.Sync().Await(ctx); !errors.Is(err, fileio.ErrSyncFailed) || !errors.Is(err, syscall.EIO) {
				return errors.New("Sync after a failed fsync: " + errString(err) + ", want ErrSyncFailed wrapping EIO")
			}
			if _, err := f.WriteAt([]byte("y"), 0, fileio.Durable).Await(ctx); !errors.Is(err, fileio.ErrSyncFailed) {
				return errors.New("durable WriteAt after a failed fsync: " + errString(err))
			}
			if _, err := f.Append([]byte("z")).Await(ctx); err != nil {
				return errors.New("a plain Append after a failed fsync: " + err.Error())
			}
			return nil
		}},
		{"full disk", func(fl *sim.DiskFaults) { fl.Capacity = 100 }, func(ctx context.Context, ex *executor.Executor, f *fileio.File) error {
			if _, err := f.Append(record(0, 60)).Await(ctx); err != nil {
				return err
			}
			if _, err := f.Append(record(1, 60), fileio.Durable).Await(ctx); !errors.Is(err, syscall.ENOSPC) {
				return errors.New("Append past the capacity: " + errString(err) + ", want ENOSPC")
			}
			if _, err := f.WriteAt(record(2, 60), 60).Await(ctx); !errors.Is(err, syscall.ENOSPC) {
				return errors.New("WriteAt past the capacity: " + errString(err) + ", want ENOSPC")
			}
			off, err := f.Append(record(3, 30), fileio.Durable).Await(ctx)
			if err != nil || off != 60 {
				return errors.New("Append that fits after a failed one: at " + itoa(off) + ", " + errString(err))
			}
			return nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := sim.New(1)
			defer w.Close()
			h := w.Host("db")
			c.faults(&h.Disk().Faults)
			err := simRun(t, w, h, func(ctx context.Context, ex *executor.Executor) error {
				f, err := fileio.Create(ex, "/f").Await(ctx)
				if err != nil {
					return err
				}
				if err := c.body(ctx, ex, f); err != nil {
					return err
				}
				_, err = f.Close().Await(ctx)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("full disk contents", func(t *testing.T) {
		w := sim.New(2)
		defer w.Close()
		h := w.Host("db")
		h.Disk().Faults.Capacity = 100
		err := simRun(t, w, h, func(ctx context.Context, ex *executor.Executor) error {
			f, err := fileio.Create(ex, "/f").Await(ctx)
			if err != nil {
				return err
			}
			f.Append(record(0, 60)).Await(ctx)
			f.Append(record(1, 60)).Await(ctx) // fails: 40 of it fit
			f.Append(record(2, 30)).Await(ctx)
			_, err = f.Close().Await(ctx)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := h.Disk().ReadFile("/f")
		if want := append(record(0, 60), record(2, 30)...); !bytes.Equal(got, want) {
			t.Fatalf("the file holds %q, want the whole appends only", got)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestSimCrash crashes the disk with records synced and unsynced: what a
// Sync or a Durable write reported survives; each unsynced record is
// kept, lost or torn, as the seed says, and across seeds all three happen.
func TestSimCrash(t *testing.T) {
	var kept, lost, torn int
	for seed := int64(1); seed <= 30; seed++ {
		w := sim.New(seed)
		h := w.Host("db")
		const synced, each, n = 1000, 100, 8
		var durable []int64 // offsets of records acknowledged durable
		err := simRun(t, w, h, func(ctx context.Context, ex *executor.Executor) error {
			f, err := fileio.Create(ex, "/log").Await(ctx)
			if err != nil {
				return err
			}
			if _, err := f.Append(record(25, synced), fileio.Durable).Await(ctx); err != nil {
				return err
			}
			for i := 0; i < n; i++ { // one write each: each awaited
				opts := []fileio.WriteOption(nil)
				if w.Rand().Intn(4) == 0 {
					opts = append(opts, fileio.Durable)
				}
				off, err := f.Append(record(i, each), opts...).Await(ctx)
				if err != nil {
					return err
				}
				if opts != nil {
					durable = append(durable, off)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		d := h.Disk()
		d.Crash(w.Rand())
		got, _ := d.ReadFile("/log")
		w.Close()
		if len(got) < synced || !bytes.Equal(got[:synced], record(25, synced)) {
			t.Fatalf("seed %d: the synced part did not survive the crash", seed)
		}
		last := int64(0)
		if len(durable) > 0 {
			last = durable[len(durable)-1] + each
		}
		if int64(len(got)) < last {
			t.Fatalf("seed %d: %d bytes after the crash, but a durable record ended at %d", seed, len(got), last)
		}
		for i := 0; i < n; i++ {
			off := synced + i*each
			var part []byte
			if off < len(got) {
				part = got[off:min(off+each, len(got))]
			}
			whole, zeros := bytes.Equal(part, record(i, each)), 0
			for _, b := range part {
				if b == 0 {
					zeros++
				}
			}
			prefix := bytes.TrimRight(part, "\x00")
			switch {
			case int64(off+each) <= last && !whole:
				t.Fatalf("seed %d: record %d, covered by a durable one, did not survive whole", seed, i)
			case whole:
				kept++
			case len(prefix) == 0:
				lost++
			case bytes.Equal(prefix, record(i, len(prefix))):
				torn++
			default:
				t.Fatalf("seed %d: record %d holds bytes nobody wrote: %q", seed, i, part)
			}
		}
	}
	if kept == 0 || lost == 0 || torn == 0 {
		t.Fatalf("over 30 seeds: %d records kept, %d lost, %d torn; want each to happen", kept, lost, torn)
	}
}
