//go:build linux && !purego

package netio

import (
	"testing"

	"golang.org/x/sys/unix"
)

// recorder is a handler that counts its events.
type recorder struct{ n int }

func (h *recorder) event(uint32) { h.n++ }

// pairOf returns a connected pair of non-blocking Unix sockets.
func pairOf(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fds[0], fds[1]
}

// epollOf returns an epoll backend without a loop, closed at the test's
// end.
func epollOf(t *testing.T) *epollBackend {
	t.Helper()
	r := &epollBackend{}
	if _, err := r.init(nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.shut(nil) })
	return r
}

// mustRegister registers fd for h, or fails the test.
func mustRegister(t *testing.T, r *epollBackend, fd int, h handler) int32 {
	t.Helper()
	i, err := r.register(fd, h)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// The epoll backend alone, without a loop: events reach the socket registered in
// their slot, a wake-up reaches nobody, and an event read before its
// socket closed is dropped, also when the slot was taken again by a new
// socket meanwhile, or the table was given back.
func TestEpollPoller(t *testing.T) {
	r := epollOf(t)
	poll := func() { r.Wait(0); r.Dispatch() }

	a, b := pairOf(t)
	defer unix.Close(b)
	h1 := &recorder{}
	i := mustRegister(t, r, a, h1)
	poll() // the first edge: writable
	if h1.n != 1 {
		t.Fatalf("after registering: %d events, want 1", h1.n)
	}

	for _, tc := range []struct {
		name  string
		close func() // between the wait and the dispatch
		want  int    // events h1 gets
	}{
		{"ready", func() {}, 1},
		{"wake-up", func() { r.Wake() }, 1},
	} {
		h1.n = 0
		unix.Write(b, []byte("x"))
		r.Wait(0)
		tc.close()
		r.Dispatch()
		if h1.n != tc.want {
			t.Fatalf("%s: %d events, want %d", tc.name, h1.n, tc.want)
		}
	}
	r.Wake()
	h1.n = 0
	poll()
	if h1.n != 0 {
		t.Fatalf("a wake-up reached a socket (%d events)", h1.n)
	}

	// The reused-slot rule: the event read for a is for slot i at its old
	// generation; a closes and c takes slot i before the dispatch.
	h1.n = 0
	unix.Write(b, []byte("y"))
	r.Wait(0)
	if r.nready == 0 {
		t.Fatal("no event read for a")
	}
	r.unregister(i)
	unix.Close(a)
	c, d := pairOf(t)
	defer unix.Close(c)
	defer unix.Close(d)
	h2 := &recorder{}
	j := mustRegister(t, r, c, h2)
	if j != i {
		t.Fatalf("c took slot %d, want a's slot %d", j, i)
	}
	r.Dispatch()
	if h1.n != 0 || h2.n != 0 {
		t.Fatalf("stale event dispatched: a's handler %d, c's handler %d events; want 0 and 0", h1.n, h2.n)
	}
	poll() // c's own first edge
	if h2.n != 1 {
		t.Fatalf("c: %d events, want 1", h2.n)
	}

	// An event for a slot past the end of a table given back is stale.
	h2.n = 0
	unix.Write(d, []byte("z"))
	r.Wait(0)
	r.slots, r.free = nil, nil
	r.Dispatch()
	if h2.n != 0 {
		t.Fatalf("an event past the table's end was dispatched (%d)", h2.n)
	}
}
