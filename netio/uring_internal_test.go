//go:build linux && !purego

package netio

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ringOrSkip sets up a ring, or skips when this kernel refuses io_uring.
func ringOrSkip(t *testing.T) *uring {
	t.Helper()
	u, err := newUring(8)
	if err != nil {
		t.Skipf("the kernel refuses io_uring here: %v", err)
	}
	t.Cleanup(u.close)
	return u
}

// The ring alone: a submitted multishot poll completes with the socket's
// readiness and its user_data, stays armed, and a wait with nothing to
// complete ends at its timeout.
func TestUringRing(t *testing.T) {
	u := ringOrSkip(t)
	a, b := pairOf(t)
	defer unix.Close(a)
	defer unix.Close(b)
	unix.Write(b, []byte("x"))
	u.pollAdd(a, unix.EPOLLIN, 42)
	if err := u.enter(1, 5*time.Second); err != nil && !errors.Is(err, unix.EINTR) {
		t.Fatalf("enter: %v", err)
	}
	if n := u.ready(); n != 1 {
		t.Fatalf("%d completions, want 1", n)
	}
	var got []cqe
	u.reap(func(c *cqe) { got = append(got, *c) })
	if got[0].userData != 42 || uint32(got[0].res)&unix.EPOLLIN == 0 || got[0].flags&cqeFMore == 0 {
		t.Fatalf("completion %+v, want user_data 42, EPOLLIN, still armed", got[0])
	}
	if n := u.ready(); n != 0 {
		t.Fatalf("%d completions after reaping, want 0", n)
	}
	err := u.enter(1, time.Millisecond)
	if !errors.Is(err, unix.ETIME) && !errors.Is(err, unix.EINTR) {
		t.Fatalf("waiting with nothing to complete: %v, want ETIME", err)
	}
	unix.Write(b, []byte("y")) // a new edge on the armed poll
	u.enter(1, 5*time.Second)
	got = got[:0]
	u.reap(func(c *cqe) { got = append(got, *c) })
	if len(got) != 1 || got[0].userData != 42 {
		t.Fatalf("after a second write: %+v, want one completion for 42", got)
	}
}

// SPINDLE_NETIO=uring makes the poller wait in the ring; when the kernel
// refuses io_uring, the poller falls back to epoll and still serves its
// sockets.
func TestUringSelection(t *testing.T) {
	ringOrSkip(t)
	t.Setenv("SPINDLE_NETIO", "uring")
	real := uringSetup
	defer func() { uringSetup = real }()
	for _, tc := range []struct {
		name   string
		refuse error // what io_uring_setup fails with, or nil
		onRing bool
	}{
		{"uring", nil, true},
		{"ENOSYS", unix.ENOSYS, false},
		{"EPERM", unix.EPERM, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uringSetup = real
			if tc.refuse != nil {
				uringSetup = func(uint32, *uringParams) (int, error) { return -1, tc.refuse }
			}
			r := &reactor{}
			if err := r.initPoller(); err != nil {
				t.Fatal(err)
			}
			defer r.shutPoller()
			if on := r.poller.ring != nil; on != tc.onRing {
				t.Fatalf("on the ring: %v, want %v", on, tc.onRing)
			}
			a, b := pairOf(t)
			defer unix.Close(a)
			defer unix.Close(b)
			h := &recorder{}
			if _, err := r.register(a, h); err != nil {
				t.Fatal(err)
			}
			for h.n == 0 {
				r.Wait(5 * time.Second) // the first edge: writable
				r.Dispatch()
			}
			h.n = 0
			unix.Write(b, []byte("x"))
			for h.n == 0 {
				r.Wait(5 * time.Second)
				r.Dispatch()
			}
			r.Wake()
			h.n = 0
			r.Wait(5 * time.Second)
			r.Dispatch()
			if h.n != 0 {
				t.Fatalf("a wake-up reached a socket (%d events)", h.n)
			}
		})
	}
}
