package netio_test

// Shared tests of closing and shutting down with output still owed: a
// Server closed, a Server shut down and an executor shut down, on every
// backend. A backend's connections are reached only through its own
// sockets: nothing is written to a descriptor of the process that is not
// one of them (watchFD0), and the drain waits for the output of simulated
// connections as it does for the kernel's.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// offLoop runs fn on a goroutine of its own, as a program calls what may
// not be called from a loop (Server.Close, Server.Shutdown), and returns
// once fn has; done must report true once the loops have done what fn
// waits for, and not before fn has asked for it. On the simulation the
// world is first run until it is quiet, then stepped until done, then
// left alone while fn returns: so the steps are the seed's, not the
// goroutine's timing (a world that does not go quiet fails the test).
func (e *env) offLoop(fn func(), done func() bool) {
	e.t.Helper()
	if e.w != nil {
		e.w.RunUntil(func() bool { return false }, time.Hour)
		if e.w.Step() {
			e.t.Fatalf("sim seed=%d: the world is not quiet at %v: a call off the loop would not be replayed", e.w.Seed(), e.w.Now())
		}
	}
	returned := make(chan struct{})
	go func() { defer close(returned); fn() }()
	stop := time.After(spindletest.Safety) // a real bound: on the simulation, nothing else runs the loops
	for e.w != nil && !done() {
		select {
		case <-stop:
			e.t.Fatalf("sim seed=%d: what the call off the loop waits for was not done within %v (world at %v)", e.w.Seed(), spindletest.Safety, e.w.Now())
		default:
		}
		if !e.w.Step() {
			runtime.Gosched() // fn has not handed its work to a loop yet
		}
	}
	select {
	case <-returned:
	case <-stop:
		e.t.Fatalf("the call off the loop did not return within %v", spindletest.Safety)
	}
}

// connsClosed reports whether ex has closed every connection it opened,
// and at least n.
func connsClosed(ex *executor.Executor, n uint64) func() bool {
	return func() bool { s := netio.StatsOf(ex); return s.Open == 0 && s.Closed >= n }
}

// pattern returns n bytes that tell their offset.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>16)
	}
	return b
}

// Server.Close with output its peer does not take: the connection closes
// at once (what its socket takes now is sent, the rest dropped), the peer
// sees the end, and nothing is written anywhere but to the connection's
// own socket: not to the process's file descriptor 0 (a pipe here).
func sharedServerCloseUnsent(t *testing.T, e *env) {
	written := watchFD0(t)
	size := e.size(4 << 20) // far more than the peer's window
	l := e.listen(netio.WithOutputLimit(0))
	wrote := future.NewPromise[struct{}](e.srv)
	srv := &netio.Server{Handler: func(c *netio.Conn) {
		if _, err := c.Write(pattern(size)); err != nil {
			wrote.Reject(err)
			return
		}
		wrote.Resolve(struct{}{})
	}}
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	var peer *netio.Conn
	must(e, e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		peer = c // does not read until the server has closed
		return nil
	}))
	must(e, wrote.Future())
	// On the simulation a listener is closed from the world's goroutine:
	// closed here, Server.Close finds it closed already.
	l.Close()
	e.offLoop(func() { srv.Close() }, connsClosed(e.srv, 1))
	if n := written(); n != 0 {
		t.Errorf("Server.Close wrote %d bytes to file descriptor 0", n)
	}
	if s := netio.StatsOf(e.srv); s.Open != 0 || s.Closed != 1 {
		t.Errorf("after Server.Close: %+v, want the connection closed", s)
	}
	got := must(e, future.Spawn(e.cli, func(ctx context.Context) (int, error) {
		defer peer.Close()
		b, err := readAll(ctx, peer)
		if err == nil {
			return 0, errors.New("the receive ended with no error")
		}
		if !bytes.Equal(b, pattern(size)[:len(b)]) {
			return 0, fmt.Errorf("the %d bytes received are not what was written", len(b))
		}
		return len(b), nil
	}))
	if e.w != nil && got >= size {
		// The simulated peer's window holds a known share of the output
		// (the kernel's buffers, and the portable backend's writer, may
		// take all of it before the close).
		t.Errorf("the peer received %d bytes of %d: Close sent output its socket did not take at once", got, size)
	}
}

// A graceful shutdown with output the peer has not taken yet: the peer
// receives all of it, then the end. how begins the shutdown: the server's
// executor (Executor.Shutdown, whose drain closes the connection and
// waits for its output) or the Server (Server.Shutdown: the handler's
// receive fails, and its Close sends the output).
func sharedShutdownDelivers(how string) func(t *testing.T, e *env) {
	return func(t *testing.T, e *env) {
		size := e.size(1 << 20) // more than the simulated peer's window
		l := e.listen(netio.WithOutputLimit(0))
		wrote := future.NewPromise[struct{}](e.srv)
		gate := future.NewPromise[struct{}](e.cli) // the peer reads once the shutdown has begun
		openGate := func() { e.cli.Submit(func() { gate.Resolve(struct{}{}) }) }
		srv := &netio.Server{Handler: func(c *netio.Conn) {
			future.Spawn(c.Executor(), func(ctx context.Context) (struct{}, error) {
				if _, err := c.Write(pattern(size)); err != nil {
					return struct{}{}, err
				}
				wrote.Resolve(struct{}{})
				if how == "Executor.Shutdown" {
					c.Executor().Shutdown(ctx) // on the loop: begins the drain and returns
					openGate()
				}
				for {
					if _, err := c.Recv().Await(ctx); err != nil {
						break // ErrServerClosed, or the executor's closing
					}
				}
				if how == "Server.Shutdown" {
					openGate()
				}
				return struct{}{}, c.Close()
			})
		}}
		if err := srv.Serve(l); err != nil {
			t.Fatal(err)
		}
		peer := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
			defer c.Close()
			if _, err := gate.Future().Await(ctx); err != nil {
				return err
			}
			b, err := readAll(ctx, c)
			if err != io.EOF {
				return fmt.Errorf("the receive ended with %v after %d bytes, want io.EOF after %d", err, len(b), size)
			}
			if !bytes.Equal(b, pattern(size)) {
				return fmt.Errorf("received %d bytes, not the %d written", len(b), size)
			}
			return nil
		})
		must(e, wrote.Future())
		if how == "Server.Shutdown" {
			l.Close() // on the simulation, from the world's goroutine (see sharedServerCloseUnsent)
			var err error
			e.offLoop(func() { err = srv.Shutdown(spindletest.Context(t)) }, connsClosed(e.srv, 1))
			if err != nil {
				t.Errorf("Server.Shutdown: %v", err)
			}
		}
		must(e, peer)
		if how == "Executor.Shutdown" {
			if e.w != nil {
				e.w.RunUntil(e.srv.Closed, time.Hour)
			} else {
				select {
				case <-e.srv.Done():
				case <-time.After(spindletest.Safety):
				}
			}
			if !e.srv.Closed() {
				t.Error("the server's executor did not finish its drain")
			}
		}
	}
}
