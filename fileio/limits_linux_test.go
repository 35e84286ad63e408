package fileio_test

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/spindle-rt/spindle/fileio"
)

// TestFullDevice writes to /dev/full, which answers every write with
// ENOSPC as a full file system does: the error is the write's value.
func TestFullDevice(t *testing.T) { onEngines(t, testFullDevice) }

func testFullDevice(t *testing.T, eng fileio.Engine) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full:", err)
	}
	ex := startedOn(t, eng)
	cases := []struct {
		name  string
		write func(f *fileio.File) error
	}{
		{"WriteAt", func(f *fileio.File) error { _, err := await(t, f.WriteAt([]byte("x"), 0)); return err }},
		{"Append", func(f *fileio.File) error { _, err := await(t, f.Append([]byte("x"))); return err }},
		{"Durable Append", func(f *fileio.File) error { _, err := await(t, f.Append([]byte("x"), fileio.Durable)); return err }},
		{"Writer", func(f *fileio.File) error { _, err := await(t, fileio.NewWriter(f, 0).Write([]byte("x"))); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := must(t, fileio.OpenFile(ex, "/dev/full", os.O_WRONLY, 0))
			defer f.Close()
			err := c.write(f)
			var pe *fs.PathError
			if !errors.Is(err, syscall.ENOSPC) || !errors.As(err, &pe) || pe.Path != "/dev/full" {
				t.Fatalf("%v, want ENOSPC in an *fs.PathError naming /dev/full", err)
			}
		})
	}
}

// TestFileSizeLimit lowers RLIMIT_FSIZE so that a write past it fails with
// EFBIG (Go ignores SIGXFSZ): the appends it carried fail, the part that
// was written is truncated away, and appends go on once there is room.
func TestFileSizeLimit(t *testing.T) { onEngines(t, testFileSizeLimit) }

func testFileSizeLimit(t *testing.T, eng fileio.Engine) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	ex := startedOn(t, eng)
	f, p := create(t, ex, "big")
	must(t, f.Append(make([]byte, 1000)))
	lim := syscall.Rlimit{Cur: 1500, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip("cannot lower RLIMIT_FSIZE:", err)
	}
	_, err := await(t, f.Append(make([]byte, 1000))) // 500 bytes fit
	_, werr := await(t, f.WriteAt([]byte("x"), 2000))
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, syscall.EFBIG) || !errors.Is(werr, syscall.EFBIG) {
		t.Fatalf("Append past the limit: %v; WriteAt: %v; want EFBIG", err, werr)
	}
	if off := must(t, f.Append([]byte("tail"), fileio.Durable)); off != 1000 {
		t.Fatalf("the next Append went at %d, want 1000 (the torn one cut away)", off)
	}
	must(t, f.Close())
	if fi, _ := os.Stat(p); fi.Size() != 1004 {
		t.Fatalf("file size %d, want 1004", fi.Size())
	}
}
