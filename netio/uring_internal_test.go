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
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/uring"
)

// ringOrSkip skips when this kernel refuses io_uring.
func ringOrSkip(t *testing.T) {
	t.Helper()
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	_, err := future.Call(ex, func() (*uring.Ring, error) { return uring.Of((*loop.Loop)(ex)) }).Await(context.Background())
	if err != nil {
		t.Skipf("the kernel refuses io_uring here: %v", err)
	}
}

// backendAfterFirstSocket makes ex serve a socket (its reactor) and
// returns the backend that serves it.
func backendAfterFirstSocket(t *testing.T, ex *executor.Executor) backend {
	t.Helper()
	be, err := future.Call(ex, func() (backend, error) {
		r, err := reactorOf((*loop.Loop)(ex))
		if err != nil {
			return nil, err
		}
		return r.be, nil
	}).Await(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// A refused ring is said once per process, with log/slog, naming the
// kernel's refusal and the fallback; a ring nobody asked for is never
// mentioned. Each loop names the backend it got.
func TestUringRefusalSaidOnce(t *testing.T) {
	defer uring.Refuse(unix.EPERM)()
	refusedOnce = sync.Once{}
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)
	for _, env := range []string{"", "epoll", "uring", "uring", "uring"} {
		t.Setenv("SPINDLE_NETIO", env)
		ex := executor.New()
		ex.Start()
		if b := backendAfterFirstSocket(t, ex).name(); b != BackendEpoll {
			t.Errorf("SPINDLE_NETIO=%q with the ring refused: backend %q, want epoll", env, b)
		}
		ex.Close()
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
	for _, tc := range []struct {
		name   string
		refuse error
		onRing bool
	}{
		{"uring", nil, true},
		{"ENOSYS", unix.ENOSYS, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			if err := Use(ex, BackendURing); err != nil {
				t.Fatal(err)
			}
			ex.Start()
			defer ex.Close()
			if tc.refuse != nil {
				restore := uring.Refuse(tc.refuse)
				backendAfterFirstSocket(t, ex)
				restore()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s := servedPair(t, ctx, ex)
			if st := s.look(); st.ring != tc.onRing {
				t.Fatalf("on the ring: %v, want %v", st.ring, tc.onRing)
			}
			if b, want := StatsOf(ex).Backend, map[bool]string{true: "io_uring", false: "epoll"}[tc.onRing]; b != want {
				t.Errorf("Stats.Backend = %q, want %q", b, want)
			}
			pending := s.receiveOnlyWhenAsked(tc.onRing)
			s.sendBig()
			s.nc.Write([]byte("x"))
			if b, err := pending.Await(ctx); string(b) != "x" || err != nil {
				t.Fatalf("pending Recv: %q, %v", b, err)
			}
			s.closeFreesSlot(tc.onRing)
		})
	}
}

// served is a connection of ex and its peer, for TestUringServes.
type served struct {
	t   *testing.T
	ctx context.Context
	ex  *executor.Executor
	c   *Conn
	nc  net.Conn
}

// servedPair accepts a connection on ex from a peer of package net.
func servedPair(t *testing.T, ctx context.Context, ex *executor.Executor) *served {
	t.Helper()
	l, err := Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted := l.Accept()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	c, err := accepted.Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &served{t, ctx, ex, c, nc}
}

type ringState struct {
	ring, recv, rbuf bool
	inq              int
}

// look reads the connection's state on its loop.
func (s *served) look() ringState {
	c := s.c
	v, _ := future.Call(s.ex, func() (ringState, error) {
		inq, _ := unix.IoctlGetInt(int(c.sk.fd), unix.SIOCINQ)
		_, ring := c.r.be.(*uringBackend)
		return ringState{ring, c.sk.ur.rf&rfRecv != 0, c.rbuf != nil, inq}, nil
	}).Await(s.ctx)
	return v
}

// receiveOnlyWhenAsked checks that nobody receiving leaves the bytes in the
// kernel, and that a pending receive holds no buffer; it returns that
// pending receive.
func (s *served) receiveOnlyWhenAsked(onRing bool) *future.Future[[]byte] {
	t := s.t
	s.nc.Write([]byte("ping"))
	for st := s.look(); st.inq != 4; st = s.look() {
		if s.ctx.Err() != nil {
			t.Fatalf("the peer's bytes never reached the socket: %+v", st)
		}
		if st.recv {
			t.Fatalf("a receive in flight with none pending: %+v", st)
		}
	}
	if b, err := s.c.Recv().Await(s.ctx); string(b) != "ping" || err != nil {
		t.Fatalf("Recv: %q, %v", b, err)
	}
	pending := s.c.Recv()
	if st := s.look(); st.rbuf || (onRing && !st.recv) {
		t.Fatalf("waiting for input: %+v, want a receive in flight and no buffer held", st)
	}
	return pending
}

// sendBig writes 4 MiB, more than the socket takes at once, which the
// peer reads as it comes, in order.
func (s *served) sendBig() {
	t := s.t
	const big = 4 << 20
	f, _ := future.Call(s.ex, func() (*future.Future[struct{}], error) {
		b := make([]byte, big)
		for i := range b {
			b[i] = byte(i % 251)
		}
		s.c.Write(b)
		return s.c.Flush(), nil
	}).Await(s.ctx)
	got := make([]byte, big)
	if _, err := io.ReadFull(s.nc, got); err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		if b != byte(i%251) {
			t.Fatalf("byte %d is %d, want %d", i, b, byte(i%251))
		}
	}
	if _, err := f.Await(s.ctx); err != nil {
		t.Fatal(err)
	}
}

// closeFreesSlot closes the connection with a receive in flight: the peer
// reads EOF, and (on the ring) the slot comes free once the ring has
// cancelled the receive.
func (s *served) closeFreesSlot(onRing bool) {
	t, c, ctx := s.t, s.c, s.ctx
	next := c.Recv()
	future.Call(s.ex, func() (struct{}, error) { c.Close(); return struct{}{}, nil }).Await(ctx)
	if _, err := next.Await(ctx); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Recv pending at Close: %v, want net.ErrClosed", err)
	}
	if n, err := s.nc.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("peer after Close: %d, %v; want EOF", n, err)
	}
	if !onRing {
		return
	}
	for turn := 0; ; turn++ {
		busy, _ := future.Call(s.ex, func() (bool, error) { return c.r.be.(*uringBackend).busyConns(), nil }).Await(ctx)
		if !busy {
			break
		}
		if turn > 10000 || ctx.Err() != nil {
			t.Fatal("the closed connection's slot still waits for its operations")
		}
		future.Call(s.ex, func() (struct{}, error) { return struct{}{}, nil }).Await(ctx) // a turn of the loop
	}
}

// A loop whose io_uring another component made first (files on the loop)
// has its sockets served by that ring, also when epoll was asked for:
// epoll cannot be the wait of a loop that waits in its ring.
func TestRingMadeFirstServesSockets(t *testing.T) {
	ringOrSkip(t)
	ex := executor.New()
	if err := Use(ex, BackendEpoll); err != nil {
		t.Fatal(err)
	}
	ex.Start()
	defer ex.Close()
	if _, err := future.Call(ex, func() (*uring.Ring, error) { return uring.Of((*loop.Loop)(ex)) }).Await(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b := backendAfterFirstSocket(t, ex).name(); b != BackendURing {
		t.Fatalf("backend %q, want io_uring: the loop waits in its ring", b)
	}
	if b := StatsOf(ex).Backend; b != string(BackendURing) {
		t.Fatalf("Stats.Backend = %q, want io_uring", b)
	}
}

// The executor closes while the ring has an accept and a receive in
// flight: both fail with executor.ErrClosed, and the ring closes with
// nothing left in flight (no slot is orphaned).
func TestUringCloseWithOperationsInFlight(t *testing.T) {
	ringOrSkip(t)
	ringOrphans.mu.Lock()
	orphans := len(ringOrphans.slots)
	ringOrphans.mu.Unlock()
	ex := executor.New()
	if err := Use(ex, BackendURing); err != nil {
		t.Fatal(err)
	}
	ex.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := servedPair(t, ctx, ex)
	l, err := Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accept, recv := l.Accept(), s.c.Recv()
	for st := s.look(); !st.recv; st = s.look() {
		if ctx.Err() != nil {
			t.Fatal("no receive in flight")
		}
	}
	ex.Close()
	<-ex.Done()
	if _, err := accept.Await(ctx); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Accept pending at the close: %v, want executor.ErrClosed", err)
	}
	if _, err := recv.Await(ctx); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Recv pending at the close: %v, want executor.ErrClosed", err)
	}
	ringOrphans.mu.Lock()
	defer ringOrphans.mu.Unlock()
	if n := len(ringOrphans.slots); n != orphans {
		t.Errorf("the ring closed with operations in flight (%d orphaned tables, %d before)", n, orphans)
	}
}

// TestUseRecordsEpoll checks that Use tells internal/uring which loops
// epoll is to serve (so fileio does not make them a ring on
// SPINDLE_NETIO's word), and takes it back when io_uring is chosen again.
func TestUseRecordsEpoll(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	lp := (*loop.Loop)(ex)
	for _, step := range []struct {
		b    Backend
		want bool
	}{{BackendEpoll, true}, {BackendURing, false}, {BackendEpoll, true}} {
		if err := Use(ex, step.b); err != nil {
			t.Fatal(err)
		}
		if got := uring.Declined(lp); got != step.want {
			t.Fatalf("after Use(%s): Declined = %v, want %v", step.b, got, step.want)
		}
	}
}
