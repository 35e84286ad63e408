package fileio_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// TestOps runs every operation against a temp dir and checks the result
// against the file system (package os).
func TestOps(t *testing.T) { onEngines(t, testOps) }

func testOps(t *testing.T, eng fileio.Engine) {
	ex := startedOn(t, eng)
	cases := []struct {
		name string
		run  func(t *testing.T, dir string)
	}{
		{"create write read", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "f")
			f := must(t, fileio.Create(ex, p))
			if n := must(t, f.WriteAt([]byte("hello, world"), 0)); n != 12 {
				t.Fatalf("WriteAt: %d", n)
			}
			if n := must(t, f.WriteAt([]byte("W"), 7)); n != 1 {
				t.Fatalf("WriteAt: %d", n)
			}
			if b := must(t, f.ReadAt(0, 64)); string(b) != "hello, World" {
				t.Fatalf("ReadAt: %q", b)
			}
			if b := must(t, f.ReadAt(7, 3)); string(b) != "Wor" {
				t.Fatalf("ReadAt(7, 3): %q", b)
			}
			if b := must(t, f.ReadAt(100, 3)); len(b) != 0 {
				t.Fatalf("ReadAt past the end: %q", b)
			}
			must(t, f.Close())
			if b, _ := os.ReadFile(p); string(b) != "hello, World" {
				t.Fatalf("on disk: %q", b)
			}
		}},
		{"append in order", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "log")
			if err := os.WriteFile(p, []byte("head:"), 0o644); err != nil {
				t.Fatal(err)
			}
			f := must(t, fileio.OpenFile(ex, p, os.O_RDWR, 0))
			var offs []int64
			onLoop(t, ex, func() {
				for _, s := range []string{"a", "bb", "ccc"} {
					f.Append([]byte(s)).OnComplete(func(off int64, err error) {
						if err != nil {
							t.Error(err)
						}
						offs = append(offs, off)
					})
				}
			})
			off := must(t, f.Append([]byte("dddd"), fileio.Durable))
			if off != 11 || len(offs) != 3 || offs[0] != 5 || offs[1] != 6 || offs[2] != 8 {
				t.Fatalf("offsets %v then %d, want [5 6 8] then 11", offs, off)
			}
			must(t, f.Close())
			if b, _ := os.ReadFile(p); string(b) != "head:abbcccdddd" {
				t.Fatalf("on disk: %q", b)
			}
		}},
		{"O_APPEND", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "a")
			os.WriteFile(p, []byte("x"), 0o644)
			f := must(t, fileio.OpenFile(ex, p, os.O_WRONLY|os.O_APPEND, 0))
			if off := must(t, f.Append([]byte("yz"))); off != 1 {
				t.Fatalf("Append at %d, want 1", off)
			}
			if _, err := await(t, f.WriteAt([]byte("q"), 0)); err == nil {
				t.Fatal("WriteAt on an O_APPEND file succeeded")
			}
			must(t, f.Close())
			if b, _ := os.ReadFile(p); string(b) != "xyz" {
				t.Fatalf("on disk: %q", b)
			}
		}},
		{"truncate stat", func(t *testing.T, dir string) {
			f := must(t, fileio.Create(ex, filepath.Join(dir, "t")))
			must(t, f.WriteAt(make([]byte, 100), 0))
			must(t, f.Truncate(10))
			if fi := must(t, f.Stat()); fi.Size() != 10 || fi.Name() != "t" || fi.IsDir() {
				t.Fatalf("Stat: %v %d", fi.Name(), fi.Size())
			}
			if off := must(t, f.Append([]byte("x"))); off != 10 {
				t.Fatalf("Append after Truncate at %d, want 10", off)
			}
			must(t, f.Truncate(1000))
			if fi := must(t, fileio.Stat(ex, filepath.Join(dir, "t"))); fi.Size() != 1000 {
				t.Fatalf("Stat: %d", fi.Size())
			}
			must(t, f.Close())
		}},
		{"sync datasync", func(t *testing.T, dir string) {
			f := must(t, fileio.Create(ex, filepath.Join(dir, "s")))
			must(t, f.WriteAt([]byte("abc"), 0))
			must(t, f.Sync())
			must(t, f.DataSync())
			if n := must(t, f.WriteAt([]byte("d"), 3, fileio.Durable)); n != 1 {
				t.Fatalf("durable WriteAt: %d", n)
			}
			must(t, f.Close())
		}},
		{"rename remove", func(t *testing.T, dir string) {
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			must(t, must(t, fileio.Create(ex, a)).Close())
			must(t, fileio.Rename(ex, a, b))
			if _, err := os.Stat(a); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("old name after Rename: %v", err)
			}
			must(t, fileio.Remove(ex, b))
			if _, err := os.Stat(b); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("after Remove: %v", err)
			}
			d := must(t, fileio.Open(ex, dir)) // a directory syncs, for the names in it
			must(t, d.Sync())
			must(t, d.Close())
		}},
		{"reader writer", func(t *testing.T, dir string) {
			f := must(t, fileio.Create(ex, filepath.Join(dir, "rw")))
			w := fileio.NewWriter(f, 0)
			var want bytes.Buffer
			for i := 0; i < 10; i++ {
				p := bytes.Repeat([]byte{byte('a' + i)}, 100+i)
				want.Write(p)
				w.Write(p) // in flight together: each where the last ended
			}
			must(t, w.Write([]byte("end"), fileio.Durable))
			want.WriteString("end")
			r := fileio.NewReader(f, 0)
			var got []byte
			for {
				b, err := await(t, r.Read(333))
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, b...)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("read %d bytes, want %d", len(got), want.Len())
			}
			must(t, f.Close())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, t.TempDir()) })
	}
}

// TestErrors checks that every failure is a value that says what failed.
func TestErrors(t *testing.T) { onEngines(t, testErrors) }

func testErrors(t *testing.T, eng fileio.Engine) {
	ex := startedOn(t, eng)
	dir := t.TempDir()
	closed := must(t, fileio.Create(ex, filepath.Join(dir, "closed")))
	must(t, closed.Close())
	ro := must(t, fileio.Create(ex, filepath.Join(dir, "ro")))
	must(t, ro.Close())
	ro = must(t, fileio.Open(ex, filepath.Join(dir, "ro")))
	t.Cleanup(func() { ro.Close() })
	rw := must(t, fileio.Create(ex, filepath.Join(dir, "rw")))
	t.Cleanup(func() { rw.Close() })
	cases := []struct {
		name   string
		err    func() error
		is     error
		op     string
		noPath bool
	}{
		{"open missing", func() error { _, err := await(t, fileio.Open(ex, filepath.Join(dir, "none"))); return err }, fs.ErrNotExist, "open", false},
		{"exclusive create", func() error {
			_, err := await(t, fileio.OpenFile(ex, filepath.Join(dir, "rw"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644))
			return err
		}, fs.ErrExist, "open", false},
		{"stat missing", func() error { _, err := await(t, fileio.Stat(ex, filepath.Join(dir, "none"))); return err }, fs.ErrNotExist, "stat", false},
		{"remove missing", func() error { _, err := await(t, fileio.Remove(ex, filepath.Join(dir, "none"))); return err }, fs.ErrNotExist, "remove", false},
		{"rename missing", func() error {
			_, err := await(t, fileio.Rename(ex, filepath.Join(dir, "none"), filepath.Join(dir, "x")))
			return err
		}, fs.ErrNotExist, "", true},
		{"read after close", func() error { _, err := await(t, closed.ReadAt(0, 1)); return err }, fs.ErrClosed, "read", false},
		{"write after close", func() error { _, err := await(t, closed.WriteAt([]byte("x"), 0)); return err }, fs.ErrClosed, "write", false},
		{"append after close", func() error { _, err := await(t, closed.Append([]byte("x"))); return err }, fs.ErrClosed, "write", false},
		{"sync after close", func() error { _, err := await(t, closed.Sync()); return err }, fs.ErrClosed, "sync", false},
		{"stat after close", func() error { _, err := await(t, closed.Stat()); return err }, fs.ErrClosed, "stat", false},
		{"truncate after close", func() error { _, err := await(t, closed.Truncate(0)); return err }, fs.ErrClosed, "truncate", false},
		{"close twice", func() error { _, err := await(t, closed.Close()); return err }, fs.ErrClosed, "close", false},
		{"write to read-only", func() error { _, err := await(t, ro.WriteAt([]byte("x"), 0)); return err }, syscall.EBADF, "write", false},
		{"append to read-only", func() error { _, err := await(t, ro.Append([]byte("x"))); return err }, syscall.EBADF, "write", false},
		{"negative read offset", func() error { _, err := await(t, rw.ReadAt(-1, 1)); return err }, nil, "read", false},
		{"negative read count", func() error { _, err := await(t, rw.ReadAt(0, -1)); return err }, nil, "read", false},
		{"negative write offset", func() error { _, err := await(t, rw.WriteAt([]byte("x"), -1)); return err }, nil, "write", false},
		{"negative truncate", func() error { _, err := await(t, rw.Truncate(-1)); return err }, nil, "truncate", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.err()
			if err == nil {
				t.Fatal("no error")
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("%v is not %v", err, c.is)
			}
			if c.noPath {
				var le *os.LinkError
				if !errors.As(err, &le) {
					t.Fatalf("%T is not an *os.LinkError", err)
				}
				return
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Op != c.op || pe.Path == "" {
				t.Fatalf("%v (%T): want an *fs.PathError of op %q with the path", err, err, c.op)
			}
		})
	}
}

// TestNilArguments checks that a nil executor or File is a clear panic.
func TestNilArguments(t *testing.T) {
	var nilFile *fileio.File
	cases := []struct {
		name string
		fn   func()
	}{
		{"Open", func() { fileio.Open(nil, "x") }},
		{"Stat", func() { fileio.Stat(nil, "x") }},
		{"Configure", func() { fileio.Configure(nil, fileio.Config{}) }},
		{"File.ReadAt", func() { nilFile.ReadAt(0, 1) }},
		{"File.Close", func() { nilFile.Close() }},
		{"NewReader", func() { fileio.NewReader(nil, 0) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { spindletest.MustPanic(t, "fileio: ", "nil", c.fn) })
	}
}

// TestAfterExecutorClose checks that operations on a closed executor fail
// with executor.ErrClosed.
func TestAfterExecutorClose(t *testing.T) { onEngines(t, testAfterExecutorClose) }

func testAfterExecutorClose(t *testing.T, eng fileio.Engine) {
	ex := newOn(t, eng)
	ex.Start()
	f := must(t, fileio.Create(ex, filepath.Join(t.TempDir(), "f")))
	ex.Close()
	for name, err := range map[string]error{
		"Create":   func() error { _, err := await(t, fileio.Create(ex, filepath.Join(t.TempDir(), "g"))); return err }(),
		"WriteAt":  func() error { _, err := await(t, f.WriteAt([]byte("x"), 0)); return err }(),
		"Sync":     func() error { _, err := await(t, f.Sync()); return err }(),
		"Close":    func() error { _, err := await(t, f.Close()); return err }(),
		"ReadAt":   func() error { _, err := await(t, f.ReadAt(0, 1)); return err }(),
		"Rename":   func() error { _, err := await(t, fileio.Rename(ex, "a", "b")); return err }(),
		"Truncate": func() error { _, err := await(t, f.Truncate(0)); return err }(),
	} {
		if !errors.Is(err, executor.ErrClosed) {
			t.Errorf("%s after the executor closed: %v, want executor.ErrClosed", name, err)
		}
	}
	if s := fileio.StatsOf(ex); s.Open != 0 || s.Engine != string(eng) {
		t.Fatalf("stats after close: %+v", s)
	}
}
