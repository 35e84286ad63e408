//go:build linux && !purego

package uring_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/uring"
)

// files is a component that is not a socket: it submits a NOP and a READ
// of a file, and records what completes.
type files struct {
	got      chan uring.CQE
	inflight int
	closing  bool
	closed   int // Closed calls
	drained  bool
}

func (f *files) Complete(c uring.CQE) { f.inflight--; f.got <- c }
func (f *files) Closing()             { f.closing = true }
func (f *files) Pending() bool        { return f.inflight > 0 }
func (f *files) Closed(drained bool)  { f.closed++; f.drained = drained }

// ringOf returns ex's ring and a registered component, or skips when the
// kernel refuses io_uring.
func ringOf(t *testing.T, ex *executor.Executor) (*uring.Ring, *files, uring.Tag) {
	t.Helper()
	type got struct {
		r   *uring.Ring
		tag uring.Tag
	}
	f := &files{got: make(chan uring.CQE, 4)}
	g, err := future.Call(ex, func() (got, error) {
		r, err := uring.Of((*loop.Loop)(ex))
		if err != nil {
			return got{}, err
		}
		if again, _ := uring.Of((*loop.Loop)(ex)); again != r {
			t.Error("a second Of made another ring")
		}
		return got{r, r.Register(f)}, nil
	}).Await(context.Background())
	if err != nil {
		t.Skipf("the kernel refuses io_uring here: %v", err)
	}
	return g.r, f, g.tag
}

// next waits for the component's next completion.
func next(t *testing.T, f *files) uring.CQE {
	t.Helper()
	select {
	case c := <-f.got:
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("no completion reached the component")
		return uring.CQE{}
	}
}

// A component other than netio submits on the loop's ring: a NOP and a
// READ of a temporary file complete, each handed to the component with its
// own bits, at the loop's next wait (no Submit asked for).
func TestComponentSubmits(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	r, f, tag := ringOf(t, ex)

	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("hello, ring"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 64) // named by the READ: alive until its completion

	for _, tc := range []struct {
		name string
		fill func(e *uring.SQE)
		bits uint64
		res  int32
	}{
		{"nop", func(e *uring.SQE) { e.Opcode = uring.OpNop }, 7, 0},
		{"read", func(e *uring.SQE) {
			e.Opcode = uring.OpRead
			e.Fd = int32(fd)
			e.Addr = uint64(uintptr(unsafe.Pointer(&buf[0])))
			e.Len = uint32(len(buf))
		}, 1<<59 | 42, int32(len("hello, ring"))},
	} {
		future.Call(ex, func() (struct{}, error) {
			e := r.Next()
			tc.fill(e)
			e.UserData = uring.UserData(tag, tc.bits)
			f.inflight++
			return struct{}{}, nil
		}).Await(context.Background())
		c := next(t, f)
		if c.Bits() != tc.bits || c.UserData>>60 != uint64(tag) || c.Res != tc.res {
			t.Fatalf("%s: completion %+v (bits %#x), want bits %#x, tag %d, res %d", tc.name, c, c.Bits(), tc.bits, tag, tc.res)
		}
	}
	if string(buf[:len("hello, ring")]) != "hello, ring" {
		t.Fatalf("read %q", buf)
	}
}

// At the executor's close an operation still in flight (a poll of a pipe
// nobody writes) is cancelled and its component told: Closing, then the
// cancelled completion, then Closed with nothing left in flight.
func TestCloseCancelsAndTells(t *testing.T) {
	ex := executor.New()
	ex.Start()
	r, f, tag := ringOf(t, ex)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	future.Call(ex, func() (struct{}, error) {
		e := r.Next()
		e.Opcode = uring.OpPollAdd
		e.Fd = int32(p[0])
		e.OpFlags = unix.POLLIN
		e.UserData = uring.UserData(tag, 3)
		f.inflight++
		return struct{}{}, r.Submit()
	}).Await(context.Background())
	ex.Close()
	<-ex.Done()
	c := next(t, f)
	if c.Bits() != 3 || !errors.Is(unix.Errno(-c.Res), unix.ECANCELED) {
		t.Fatalf("the pending poll completed with %+v, want bits 3 and -ECANCELED", c)
	}
	if !f.closing || f.closed != 1 || !f.drained {
		t.Fatalf("closing %v, Closed called %d times, drained %v; want true, 1, true", f.closing, f.closed, f.drained)
	}
}

// A refused ring is asked for once per loop: Of says why, and again
// without asking the kernel.
func TestRefused(t *testing.T) {
	restore := uring.Refuse(unix.EPERM)
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	_, err := future.Call(ex, func() (*uring.Ring, error) { return uring.Of((*loop.Loop)(ex)) }).Await(context.Background())
	restore()
	if !errors.Is(err, unix.EPERM) {
		t.Fatalf("Of with the ring refused: %v, want EPERM", err)
	}
	_, err = future.Call(ex, func() (*uring.Ring, error) { return uring.Of((*loop.Loop)(ex)) }).Await(context.Background())
	if !errors.Is(err, unix.EPERM) {
		t.Fatalf("Of again: %v, want the first refusal (EPERM)", err)
	}
}

// TestDecline checks that Decline records and takes back a loop's
// choice of epoll, and that it does not keep a component that needs the
// ring from making it.
func TestDecline(t *testing.T) {
	cases := []struct {
		name  string
		steps []bool // Decline calls
		want  bool
	}{
		{"never", nil, false},
		{"declined", []bool{true}, true},
		{"declined twice", []bool{true, true}, true},
		{"declined then taken back", []bool{true, false}, false},
		{"taken back only", []bool{false}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := executor.New()
			ex.Start()
			defer ex.Close()
			lp := (*loop.Loop)(ex)
			for _, on := range c.steps {
				uring.Decline(lp, on)
			}
			if got := uring.Declined(lp); got != c.want {
				t.Fatalf("Declined = %v, want %v", got, c.want)
			}
			r, err := future.Call(ex, func() (*uring.Ring, error) { return uring.Of(lp) }).Await(context.Background())
			if err != nil {
				t.Skipf("the kernel refuses io_uring here: %v", err)
			}
			if got, _ := future.Call(ex, func() (*uring.Ring, error) { return uring.Existing(lp), nil }).Await(context.Background()); got != r {
				t.Fatal("Existing does not return the loop's ring")
			}
		})
	}
}
