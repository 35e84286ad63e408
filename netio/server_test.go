package netio_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

// lineServer answers "+line" to every line; "slow" is answered 50 ms
// later, from a timer. A connection ends once its reads fail and no answer
// is due; started gets every "slow" line as it starts, ended every error
// that ended a connection.
type lineServer struct {
	started chan string
	ended   chan error
	conns   atomic.Int32
}

func newLineServer() *lineServer {
	return &lineServer{started: make(chan string, 16), ended: make(chan error, 64)}
}

func (s *lineServer) handle(c *netio.Conn) {
	s.conns.Add(1)
	pending, done := 0, false
	end := func() {
		if done && pending == 0 {
			c.Close()
		}
	}
	r := netio.NewReader(c, 0)
	r.ReadLines(func(line []byte) error {
		if string(line) == "slow" {
			pending++
			s.started <- "slow"
			c.Executor().AfterFunc(50*time.Millisecond, func() {
				c.WriteString("+slow\n")
				pending--
				end()
			})
			return nil
		}
		c.WriteString("+" + string(line) + "\n")
		return nil
	}).OnComplete(func(_ struct{}, err error) {
		s.ended <- err
		done = true
		end()
	})
}

// ended fails unless the peer of nc closes: EOF (or a reset) after want.
func endsWith(t *testing.T, nc net.Conn, want string) {
	t.Helper()
	b, err := io.ReadAll(nc)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read %q, then %v; want %q, then EOF", b, err, want)
		return
	}
	if string(b) != want {
		t.Errorf("read %q before EOF, want %q", b, want)
	}
}

// Shutdown stops accepting, lets an in-flight answer and the end of a
// line already begun arrive, closes idle connections, and returns once
// every connection is closed.
func TestServerShutdown(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	ls := newLineServer()
	srv := &netio.Server{Handler: ls.handle}
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	idle, busy, half := dialNet(t, l), dialNet(t, l), dialNet(t, l)
	io.WriteString(busy, "slow\n")
	io.WriteString(half, "hello\nwor")
	br := bufio.NewReader(half)
	if s, err := br.ReadString('\n'); s != "+hello\n" || err != nil {
		t.Fatalf("half: %q, %v", s, err)
	}
	spindletest.Recv(t, ls.started)
	// The partial "wor" is with the reader once the loop has served its
	// receive: a round trip through the loop after the answer before it.
	onLoop(t, ex, func() int { return 0 })

	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(spindletest.Context(t)) }()

	endsWith(t, idle, "")
	endsWith(t, busy, "+slow\n") // answered before the close
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while a line was half read", err)
	default:
	}
	io.WriteString(half, "ld\n") // the line begun before Shutdown is finished
	if s, err := br.ReadString('\n'); s != "+world\n" || err != nil {
		t.Fatalf("half, after Shutdown: %q, %v", s, err)
	}
	endsWith(t, half, "")
	if err := spindletest.Recv(t, shut); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for range 3 {
		if err := spindletest.Recv(t, ls.ended); !errors.Is(err, netio.ErrServerClosed) {
			t.Errorf("a connection's reads ended with %v, want ErrServerClosed", err)
		}
	}
	if nc, err := net.Dial("tcp", l.Addr().String()); err == nil {
		nc.Close()
		t.Error("a connection was accepted after Shutdown")
	}
	if err := srv.Serve(listen(t, ex)); !errors.Is(err, netio.ErrServerClosed) {
		t.Errorf("Serve after Shutdown: %v, want ErrServerClosed", err)
	}
}

// A connection whose handler never closes it holds Shutdown until its ctx
// ends; then Shutdown closes it and returns ctx's error.
func TestServerShutdownTimeout(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	var stuck *netio.Conn
	accepted := make(chan struct{})
	srv := &netio.Server{Handler: func(c *netio.Conn) { stuck = c; close(accepted) }} // never reads nor closes
	srv.Serve(l)
	nc := dialNet(t, l)
	spindletest.Recv(t, accepted) // the portable backend accepts on a goroutine of its own
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want context.DeadlineExceeded", err)
	}
	endsWith(t, nc, "")
	if _, err := onLoop(t, ex, func() result { n, err := stuck.WriteString("x"); return result{n, err} }).get(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Shutdown gave up: %v, want net.ErrClosed", err)
	}
}

// Close closes the listeners and every connection at once: pending
// receives fail with net.ErrClosed.
func TestServerClose(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	ls := newLineServer()
	srv := &netio.Server{Handler: ls.handle}
	srv.Serve(l)
	a, b := dialNet(t, l), dialNet(t, l)
	io.WriteString(a, "x\n")
	readN(t, a, 3)
	io.WriteString(b, "y\n")
	readN(t, b, 3)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := spindletest.Recv(t, ls.ended); !errors.Is(err, net.ErrClosed) {
			t.Errorf("reads ended with %v, want net.ErrClosed", err)
		}
	}
	endsWith(t, a, "")
	endsWith(t, b, "")
	if err := srv.Shutdown(spindletest.Context(t)); err != nil {
		t.Errorf("Shutdown after Close: %v", err)
	}
}

// ServeGroup serves every shard, and Shutdown finds the connections of
// each.
func TestServerGroup(t *testing.T) {
	g := shard.New(2)
	g.Start()
	defer g.Close()
	ls := newLineServer()
	srv := &netio.Server{Handler: ls.handle, IdleTimeout: time.Hour}
	lns, err := srv.ServeGroup(g, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	ncs := make([]net.Conn, n)
	for i := range ncs {
		ncs[i] = dialNet(t, lns[0])
		io.WriteString(ncs[i], "ping\n")
		if got := string(readN(t, ncs[i], 6)); got != "+ping\n" {
			t.Fatalf("conn %d: %q", i, got)
		}
	}
	if err := srv.Shutdown(spindletest.Context(t)); err != nil {
		t.Fatal(err)
	}
	for _, nc := range ncs {
		endsWith(t, nc, "")
	}
	if got := ls.conns.Load(); got != n {
		t.Errorf("%d connections handled, want %d", got, n)
	}
}

func TestServerMisuse(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	for _, tc := range []struct {
		name, want string
		fn         func()
	}{
		{"nil Handler", "nil Handler", func() { (&netio.Server{}).Serve(&netio.Listener{}) }},
		{"nil Listener", "nil *Listener", func() { (&netio.Server{Handler: func(*netio.Conn) {}}).Serve(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spindletest.MustPanic(t, "netio:", tc.want, tc.fn)
		})
	}
	g := shard.New(1)
	defer g.Close()
	if _, err := (&netio.Server{}).ServeGroup(g, "tcp", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "nil Handler") {
		t.Errorf("ServeGroup with nil Handler: %v", err)
	}
}
