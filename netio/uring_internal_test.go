//go:build linux && !purego

package netio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
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

// A refused ring is said once per process, with log/slog, naming the
// kernel's refusal and the fallback; a ring nobody asked for is never
// mentioned. Each loop names the backend it got.
func TestUringRefusalSaidOnce(t *testing.T) {
	real := uringSetup
	defer func() { uringSetup = real }()
	uringSetup = func(uint32, *uringParams) (int, error) { return -1, unix.EPERM }
	refusedOnce = sync.Once{}
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)
	for _, env := range []string{"", "epoll", "uring", "uring", "uring"} {
		t.Setenv("SPINDLE_NETIO", env)
		r := &reactor{}
		if err := r.initPoller(); err != nil {
			t.Fatal(err)
		}
		if b := r.backendName(); b != "epoll" {
			t.Errorf("SPINDLE_NETIO=%q with the ring refused: backend %q, want epoll", env, b)
		}
		r.shutPoller()
		if env != "uring" && logged.Len() > 0 {
			t.Fatalf("SPINDLE_NETIO=%q, no ring asked for: logged %q", env, logged.String())
		}
	}
	out := logged.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Fatalf("three refused rings logged %d warnings, want 1:\n%s", n, out)
	}
	for _, want := range []string{"io_uring", "epoll", unix.EPERM.Error()} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning does not say %q: %s", want, out)
		}
	}
}

// The io_uring backend serves connections, and where the kernel refuses
// io_uring epoll does: an echo, with the ring's state checked on the way.
// On the ring a connection nobody receives from has no receive in flight
// (its peer's bytes stay in the kernel), one waiting for input holds no
// buffer, a send the socket cannot take at once is completed in parts in
// order, and a closed connection's slot is freed once its operations have
// completed.
func TestUringServes(t *testing.T) {
	ringOrSkip(t)
	t.Setenv("SPINDLE_NETIO", "uring")
	real := uringSetup
	defer func() { uringSetup = real }()
	for _, tc := range []struct {
		name   string
		refuse error
		onRing bool
	}{
		{"uring", nil, true},
		{"ENOSYS", unix.ENOSYS, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uringSetup = real
			if tc.refuse != nil {
				uringSetup = func(uint32, *uringParams) (int, error) { return -1, tc.refuse }
			}
			ex := executor.New()
			ex.Start()
			defer ex.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l, err := Listen(ex, "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			accepted := l.Accept()
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			c, err := accepted.Await(ctx)
			if err != nil {
				t.Fatal(err)
			}
			type state struct {
				ring, recv, rbuf bool
				inq              int
			}
			look := func() state {
				v, _ := future.Call(ex, func() (state, error) {
					inq, _ := unix.IoctlGetInt(int(c.sk.fd), unix.SIOCINQ)
					return state{c.r.ring != nil, c.sk.rf&rfRecv != 0, c.rbuf != nil, inq}, nil
				}).Await(ctx)
				return v
			}
			if s := look(); s.ring != tc.onRing {
				t.Fatalf("on the ring: %v, want %v", s.ring, tc.onRing)
			}
			if b, want := StatsOf(ex).Backend, map[bool]string{true: "io_uring", false: "epoll"}[tc.onRing]; b != want {
				t.Errorf("Stats.Backend = %q, want %q", b, want)
			}

			// Nobody receives: the bytes stay in the kernel.
			nc.Write([]byte("ping"))
			for s := look(); s.inq != 4; s = look() {
				if ctx.Err() != nil {
					t.Fatalf("the peer's bytes never reached the socket: %+v", s)
				}
				if s.recv {
					t.Fatalf("a receive in flight with none pending: %+v", s)
				}
			}
			if b, err := c.Recv().Await(ctx); string(b) != "ping" || err != nil {
				t.Fatalf("Recv: %q, %v", b, err)
			}
			pending := c.Recv()
			if s := look(); s.rbuf || (tc.onRing && !s.recv) {
				t.Fatalf("waiting for input: %+v, want a receive in flight and no buffer held", s)
			}

			// 4 MiB, more than the socket takes at once, read as it comes.
			const big = 4 << 20
			f, _ := future.Call(ex, func() (*future.Future[struct{}], error) {
				b := make([]byte, big)
				for i := range b {
					b[i] = byte(i % 251)
				}
				c.Write(b)
				return c.Flush(), nil
			}).Await(ctx)
			got := make([]byte, big)
			if _, err := io.ReadFull(nc, got); err != nil {
				t.Fatal(err)
			}
			for i, b := range got {
				if b != byte(i%251) {
					t.Fatalf("byte %d is %d, want %d", i, b, byte(i%251))
				}
			}
			if _, err := f.Await(ctx); err != nil {
				t.Fatal(err)
			}
			nc.Write([]byte("x"))
			if b, err := pending.Await(ctx); string(b) != "x" || err != nil {
				t.Fatalf("pending Recv: %q, %v", b, err)
			}

			// Closed with a receive in flight: the peer reads EOF, and the
			// slot comes free once the ring has cancelled the receive.
			next := c.Recv()
			future.Call(ex, func() (struct{}, error) { c.Close(); return struct{}{}, nil }).Await(ctx)
			if _, err := next.Await(ctx); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Recv pending at Close: %v, want net.ErrClosed", err)
			}
			if n, err := nc.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("peer after Close: %d, %v; want EOF", n, err)
			}
			if !tc.onRing {
				return
			}
			for turn := 0; ; turn++ {
				busy, _ := future.Call(ex, func() (bool, error) { return c.r.ringBusyConns(), nil }).Await(ctx)
				if !busy {
					break
				}
				if turn > 10000 || ctx.Err() != nil {
					t.Fatal("the closed connection's slot still waits for its operations")
				}
				future.Call(ex, func() (struct{}, error) { return struct{}{}, nil }).Await(ctx) // a turn of the loop
			}
		})
	}
}
