package simdisk

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a scheduler that runs nothing (the tests call the disk
// directly).
type clock struct{ now int64 }

func (c *clock) Now() int64                  { return c.now }
func (c *clock) After(time.Duration, func()) {}

func newDisk(seed int64) *Disk { return New(&clock{}, rand.New(rand.NewSource(seed))) }

func TestOpenFlags(t *testing.T) {
	d := newDisk(1)
	cases := []struct {
		name string
		flag int
		err  error
	}{
		{"missing", os.O_RDONLY, fs.ErrNotExist},
		{"create", os.O_RDWR | os.O_CREATE, nil},
		{"exclusive", os.O_RDWR | os.O_CREATE | os.O_EXCL, fs.ErrExist},
		{"open", os.O_RDONLY, nil},
	}
	for _, c := range cases {
		_, _, err := d.Open("/a/b", c.flag, 0o600)
		if c.err == nil && err != nil || c.err != nil && !errors.Is(err, c.err) {
			t.Fatalf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	h, _ := must2(t)(d.Open("a/b", os.O_RDONLY, 0)) // the same file, cleaned
	if _, err := h.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("write to a read-only handle: %v", err)
	}
}

func must2(t *testing.T) func(h *Handle, n int64, err error) (*Handle, int64) {
	return func(h *Handle, n int64, err error) (*Handle, int64) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return h, n
	}
}

func TestCapacityAndTruncate(t *testing.T) {
	d := newDisk(1)
	d.Faults.Capacity = 10
	h, _ := must2(t)(d.Open("f", os.O_RDWR|os.O_CREATE, 0o644))
	if n, err := h.WriteAt([]byte("0123456789abc"), 0); n != 10 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past the capacity: %d, %v", n, err)
	}
	if d.Used() != 10 {
		t.Fatalf("used %d", d.Used())
	}
	if err := h.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if err := h.Truncate(11); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("truncate past the capacity: %v", err)
	}
	d.Crash(rand.New(rand.NewSource(1)))
	if got, _ := d.ReadFile("f"); len(got) > 4 {
		t.Fatalf("a crash brought back %q past the truncate", got)
	}
}

func TestNamesAndHandles(t *testing.T) {
	d := newDisk(1)
	h, _ := must2(t)(d.Open("a", os.O_RDWR|os.O_CREATE, 0o644))
	if _, err := h.WriteAt([]byte("data"), 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Rename("a", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Stat("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old name: %v", err)
	}
	if fi, err := d.Stat("b"); err != nil || fi.Size() != 4 || fi.Name() != "b" {
		t.Fatalf("stat of the new name: %v %v", fi, err)
	}
	if err := d.Remove("b"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if n, err := h.ReadAt(buf, 0); n != 4 || err != nil || string(buf) != "data" {
		t.Fatalf("read through a handle of a removed file: %d %v %q", n, err, buf)
	}
	if d.Used() != 4 {
		t.Fatalf("used %d while a handle keeps the file", d.Used())
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if d.Used() != 0 {
		t.Fatalf("used %d after the last handle closed", d.Used())
	}
	if err := h.Close(); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("second close: %v", err)
	}
}

// TestCrash checks what survives a crash: synced bytes always, unsynced
// ones as the seed decides, the same way for the same seed.
func TestCrash(t *testing.T) {
	run := func(seed int64) []byte {
		d := newDisk(seed)
		h, _ := must2(t)(d.Open("f", os.O_RDWR|os.O_CREATE, 0o644))
		if _, err := h.WriteAt(bytes.Repeat([]byte("s"), 100), 0); err != nil {
			t.Fatal(err)
		}
		if err := h.Sync(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			if _, err := h.WriteAt(bytes.Repeat([]byte{byte('a' + i)}, 50), int64(100+50*i)); err != nil {
				t.Fatal(err)
			}
		}
		d.Crash(rand.New(rand.NewSource(seed)))
		if _, err := h.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EBADF) {
			t.Fatalf("a handle from before the crash: %v", err)
		}
		got, _ := d.ReadFile("f")
		if !bytes.Equal(got[:100], bytes.Repeat([]byte("s"), 100)) {
			t.Fatalf("seed %d: synced bytes lost", seed)
		}
		return got
	}
	seen := map[string]bool{}
	for seed := int64(1); seed <= 20; seed++ {
		a, b := run(seed), run(seed)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two crashes differ", seed)
		}
		seen[string(a)] = true
	}
	if len(seen) < 5 {
		t.Fatalf("20 seeds gave %d outcomes", len(seen))
	}
}

func TestSyncEIO(t *testing.T) {
	d := newDisk(1)
	d.Faults.SyncEIO = 1
	h, _ := must2(t)(d.Open("f", os.O_RDWR|os.O_CREATE, 0o644))
	if _, err := h.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := h.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync: %v", err)
	}
	d.Faults.CrashKeep = 1 // a crash would keep an unsynced write
	d.Crash(rand.New(rand.NewSource(3)))
	if d.Syncs() != 1 {
		t.Fatalf("syncs %d", d.Syncs())
	}
	if got, _ := d.ReadFile("f"); len(got) != 0 {
		t.Fatalf("a crash kept %q, which a failed sync lost", got)
	}
}

// After a failed Sync the writes it covered are lost to the disk: reads
// still see them until a crash, a later Sync does not make them durable,
// and the crash drops them, whatever it does to unsynced writes; writes
// after the failure are synced as usual.
func TestSyncEIOLosesItsWrites(t *testing.T) {
	cases := []struct {
		name             string
		base             string // synced first
		lost             []write
		later            []write
		syncLater        bool
		crashKeep        float64
		beforeCrash, got string
	}{
		{"a new file's bytes", "", []write{{0, []byte("AAAA")}}, []write{{4, []byte("BBBB")}}, true, 0, "AAAABBBB", "\x00\x00\x00\x00BBBB"},
		{"an overwrite goes back to the old bytes", "oldoldold", []write{{3, []byte("NEW")}}, nil, true, 1, "oldNEWold", "oldoldold"},
		{"a later overwrite of the lost range is kept", "", []write{{0, []byte("AAAA")}}, []write{{2, []byte("bb")}}, true, 0, "AAbb", "\x00\x00bb"},
		{"unsynced later writes follow the crash's rules", "", []write{{0, []byte("AAAA")}}, []write{{4, []byte("CC")}}, false, 1, "AAAACC", "\x00\x00\x00\x00CC"},
		{"the file's size goes back", "xy", []write{{2, []byte("zzzz")}}, nil, true, 1, "xyzzzz", "xy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newDisk(1)
			h, _ := must2(t)(d.Open("f", os.O_RDWR|os.O_CREATE, 0o644))
			writeAll := func(ws []write) {
				for _, w := range ws {
					if _, err := h.WriteAt(w.data, w.off); err != nil {
						t.Fatal(err)
					}
				}
			}
			writeAll([]write{{0, []byte(c.base)}})
			if err := h.Sync(); err != nil {
				t.Fatal(err)
			}
			writeAll(c.lost)
			d.Faults.SyncEIO = 1
			if err := h.Sync(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("sync: %v, want EIO", err)
			}
			d.Faults.SyncEIO = 0
			writeAll(c.later)
			if c.syncLater {
				if err := h.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			if got, _ := d.ReadFile("f"); string(got) != c.beforeCrash {
				t.Fatalf("before the crash the file holds %q, want %q", got, c.beforeCrash)
			}
			d.Faults.CrashKeep, d.Faults.CrashLose, d.Faults.CrashTear = c.crashKeep, 1-c.crashKeep, 0
			d.Crash(rand.New(rand.NewSource(1)))
			if got, _ := d.ReadFile("f"); string(got) != c.got {
				t.Fatalf("after the crash the file holds %q, want %q", got, c.got)
			}
		})
	}
}

// A sync costs the bytes written since the last one, not the file's size:
// a log of n appends, each synced, applies each byte to the durable state
// once.
func TestSyncCostIsLinear(t *testing.T) {
	d := newDisk(1)
	h, _ := must2(t)(d.Open("log", os.O_RDWR|os.O_CREATE, 0o644))
	const n, size = 5000, 16
	rec := bytes.Repeat([]byte("r"), size)
	for i := 0; i < n; i++ {
		if _, err := h.WriteAt(rec, int64(i*size)); err != nil {
			t.Fatal(err)
		}
		if err := h.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := h.Sync(); err != nil { // nothing new: nothing to apply
			t.Fatal(err)
		}
	}
	if d.synced != n*size {
		t.Fatalf("%d syncs of a growing log applied %d bytes, want %d", 2*n, d.synced, n*size)
	}
	d.Crash(rand.New(rand.NewSource(1)))
	if got, _ := d.ReadFile("log"); !bytes.Equal(got, bytes.Repeat(rec, n)) {
		t.Fatalf("the synced log came back as %d bytes, want %d", len(got), n*size)
	}
}

// BenchmarkSyncedLog appends a record and syncs it, as a log with
// appendfsync always does: the cost per op must not grow with the log.
func BenchmarkSyncedLog(b *testing.B) {
	d := New(&clock{}, rand.New(rand.NewSource(1)))
	h, _, err := d.Open("log", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	rec := bytes.Repeat([]byte("r"), 64)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := h.WriteAt(rec, int64(i*len(rec))); err != nil {
			b.Fatal(err)
		}
		if err := h.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
