package netio

// The backend contract: what serves the sockets of a loop.
//
// The shared code (conn.go, listen.go, reactor.go) keeps a connection's
// and a listener's state and rules; a backend moves the bytes. There are
// three: the kernel's sockets through epoll (Linux, poller_epoll.go and
// the other *_epoll.go files), the kernel's sockets through package net
// and goroutines (-tags purego and other systems, sock_net.go), and the
// simulated network of package sim (backend_sim.go), which serves the
// loops a simulation steps. The first two are chosen when the program is
// built (hostBackend); the simulated one is chosen per loop, by the
// simulation that steps it (backendOf).
//
// Shared code reaches a connection's or a listener's socket only through
// the backend (r.be, c.r.be, l.be), never through the host's functions:
// on a simulated loop those would act on the zero value of the host's part
// of the socket (descriptor 0 of the process).
//
// Invariants:
//   - a loop is served by one backend for its whole life: backendOf
//     depends only on what the loop was made with (loop.Loop.Sim), so a
//     listener, a dial and the reactor of one loop agree on it;
//   - every method except listen and dial runs on the loop; listen may
//     run on any goroutine (Listen), dial on any goroutine before it
//     hands itself to the loop;
//   - readNow reports ok=false only when nothing is readable now, and the
//     backend then calls c.readable on the loop once bytes, an end or an
//     error may be there; flushOut hands the output on and reports what
//     was taken through c.took, or fails c (c.abort); acceptNow likewise,
//     with l.acceptable.

import (
	"context"
	"net"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/simnet"
)

// backend serves the sockets of one loop (see above).
type backend interface {
	// init opens what the backend needs on r's loop and returns the IO
	// the loop waits in, or nil when the loop's own wait will do.
	init(r *reactor) (loop.IO, error)
	// conns returns the connections the backend serves on r's loop.
	conns(r *reactor) []*Conn
	// shut closes what init opened, once the executor has closed.
	shut(r *reactor)
	// name names the backend that serves r's loop once init has run:
	// "epoll", "io_uring", "portable" or "sim" (Stats.Backend).
	name(r *reactor) string

	// readNow reads what c's socket has into c.rbuf (taking a buffer
	// from the reactor's pool if it has none): n bytes, or n == 0 and a
	// nil error at EOF, or the socket's error; ok is false when nothing
	// is readable yet.
	readNow(c *Conn) (n int, err error, ok bool)
	// flushOut hands c.out to the socket, as much as it takes now.
	flushOut(c *Conn)
	// full reports whether c's socket took less than it was handed last
	// and has not asked for more since (the output limit's stall rule).
	full(c *Conn) bool
	// lastWrite sends what the socket takes at once of the output, before
	// the executor's close drops the rest.
	lastWrite(c *Conn)
	// shutWrite shuts the write side of c's socket.
	shutWrite(c *Conn) error
	// mayReset reports whether closing c's socket now could make the peer
	// see a reset and lose output: input arrived that was not read, or
	// output taken is not yet delivered.
	mayReset(c *Conn) bool
	// unacked returns how many bytes of c's output the socket took that
	// the peer has not acknowledged yet; 0 when the backend cannot tell.
	unacked(c *Conn) int
	// reset makes the close of c's socket that follows reset the
	// connection: the output the socket holds is dropped, and the peer
	// sees a reset.
	reset(c *Conn)
	// addr returns the local (or, with remote, the peer's) address of c's
	// socket, for a connection that does not keep them itself (c.addrs
	// false). Any goroutine.
	addr(c *Conn, remote bool) net.Addr
	// closeSock closes c's socket and gives its buffers back.
	closeSock(c *Conn)

	// listen opens l's listening socket and returns its address.
	listen(l *Listener, network, address string) (net.Addr, error)
	// acceptNow accepts one connection; ok is false when none is waiting.
	acceptNow(l *Listener) (c *Conn, err error, ok bool)
	// forget lets the loop's state of l go once l is closed.
	forget(l *Listener)
	// closeListener closes l's listening socket; called under l.mu.
	closeListener(l *Listener) error

	// dial connects to address and completes p with the connection, on
	// lp's loop.
	dial(ctx context.Context, lp *loop.Loop, network, address string, p *future.Promise[*Conn])
}

// backendOf returns the backend that serves lp's sockets. Any goroutine.
func backendOf(lp *loop.Loop) backend {
	if p, ok := lp.Sim().(*simnet.Poller); ok {
		return simBackendOf(p)
	}
	return hostBackend{}
}

// hostBackend is the backend chosen when the program is built: the kernel's
// sockets, through epoll or through package net.
type hostBackend struct{}

var (
	_ backend = hostBackend{}
	_ backend = (*simBackend)(nil)
)

func (hostBackend) init(r *reactor) (loop.IO, error) {
	if err := r.initPoller(); err != nil {
		return nil, err
	}
	return r.loopIO(), nil
}

func (hostBackend) conns(r *reactor) []*Conn                   { return r.allConns() }
func (hostBackend) shut(r *reactor)                            { r.shutPoller() }
func (hostBackend) name(r *reactor) string                     { return r.backendName() }
func (hostBackend) readNow(c *Conn) (int, error, bool)         { return c.readNow() }
func (hostBackend) flushOut(c *Conn)                           { c.flushOut() }
func (hostBackend) full(c *Conn) bool                          { return c.full() }
func (hostBackend) lastWrite(c *Conn)                          { c.lastWrite() }
func (hostBackend) shutWrite(c *Conn) error                    { return c.shutWrite() }
func (hostBackend) closeSock(c *Conn)                          { c.closeSock() }
func (hostBackend) acceptNow(l *Listener) (*Conn, error, bool) { return l.acceptNow() }
func (hostBackend) forget(l *Listener)                         { l.forget() }
func (hostBackend) closeListener(l *Listener) error            { return l.closeSock() }

func (hostBackend) listen(l *Listener, network, address string) (net.Addr, error) {
	return l.listenSock(network, address)
}

func (hostBackend) dial(ctx context.Context, lp *loop.Loop, network, address string, p *future.Promise[*Conn]) {
	dial(ctx, lp, network, address, p)
}

func (hostBackend) mayReset(c *Conn) bool { return c.mayReset() }
func (hostBackend) unacked(c *Conn) int   { return c.unacked() }
func (hostBackend) reset(c *Conn)         { c.reset() }

func (hostBackend) addr(c *Conn, remote bool) net.Addr { return c.sk.addr(remote) }
