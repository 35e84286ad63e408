//go:build !linux || purego

package netio

// The portable backend: goroutines over package net feed the loop.
//
// Every connection has a reader and a writer goroutine and every listener
// an acceptor goroutine; each blocks in package net and hands what it got
// to the loop through the loop's inbox. The behaviour is the epoll
// backend's: bytes are read only while a receive is pending (the reader
// reads only when the loop asks it to, into the connection's buffer, which
// it owns until the loop takes the result), and output leaves at the batch
// boundary, one write per connection per batch: on the loop, as much as
// the socket takes without waiting (tryWrite), and the rest through the
// writer goroutine, which waits for the socket.
//
// Invariants:
//   - want, wreq and acc carry at most one request each (capacity 1) and
//     the loop sends one only while none is outstanding (reading, writing,
//     accepting), so its sends never block;
//   - while reading is set the reader goroutine owns rbuf; while writing is
//     set the writer goroutine owns inflight; the loop takes them back in
//     the runnable the goroutine submits, which also publishes the
//     goroutine's results (rn, rerr, wn, werr, got, gotErr) through the
//     inbox's lock;
//   - quit is closed once, when the socket is closed; the goroutines exit
//     when they see it, when the socket's calls fail, or when the loop
//     refuses their result because it has closed.

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// portableBackend serves a loop's sockets through package net. Its
// per-loop state is the open connections, for the executor's close.
type portableBackend struct {
	all map[*Conn]struct{}
}

var _ backend = (*portableBackend)(nil)

// init returns no IO: the goroutines hand their results through the
// inbox, and the loop waits as it does without sockets.
func (b *portableBackend) init(*reactor) (loop.IO, error) {
	b.all = make(map[*Conn]struct{})
	return nil, nil
}

func (b *portableBackend) name() Backend { return BackendPortable }

// conns returns the open connections.
func (b *portableBackend) conns(*reactor) []*Conn {
	cs := make([]*Conn, 0, len(b.all))
	for c := range b.all {
		cs = append(cs, c)
	}
	return cs
}

// shut has nothing to close.
func (b *portableBackend) shut(*reactor) {}

// newHostBackend returns the backend of this build: the portable one.
func newHostBackend(Backend) backend { return &portableBackend{} }

// hostProto returns a backend of this build that keeps no loop's state,
// for Listen and Dial.
func hostProto(Backend) backend { return portableProto }

var portableProto = &portableBackend{}

// hostDefault is the backend of a host loop.
const hostDefault = BackendPortable

// hostHas reports whether this build has backend b for host loops.
func hostHas(b Backend) bool { return b == BackendPortable }

// sock is the backend's part of a connection (Conn.sk): package net's
// socket, or a simulated socket (sim).
type sock struct {
	nc   net.Conn
	want chan []byte
	wreq chan []byte
	quit chan struct{}

	// loop-owned
	reading  bool
	got      bool
	writing  bool
	inflight []byte

	// written by the goroutines, read by the loop in onRead / onWrite
	rn   int
	rerr error
	perr error  // what watchEnd found
	pk   peeker // watchEnd's state (peek_unix.go)
	wn   int
	werr error

	sim *simConn // the simulated backend's part (sim_backend.go)
}

// newPortableConn makes a connection of r's loop over nc. Loop only. It
// returns nil (and closes nc) once the executor has closed.
func newPortableConn(r *reactor, nc net.Conn, cfg *listenConfig) *Conn {
	c := newConnOf(nc.LocalAddr(), nc.RemoteAddr())
	if !c.attach(r, cfg) {
		nc.Close()
		return nil
	}
	r.be.(*portableBackend).all[c] = struct{}{}
	s := &c.sk
	s.nc = nc
	s.want = make(chan []byte, 1)
	s.wreq = make(chan []byte, 1)
	s.quit = make(chan struct{})
	go c.readLoop()
	go c.writeLoop()
	return c
}

// readLoop is the body of the reader goroutine. While the loop asks for
// nothing it waits for the socket to become readable and peeks, so that a
// peer that leaves while nobody receives is found out (peerGone) without a
// byte being read for a receive not asked for.
func (c *Conn) readLoop() {
	s := &c.sk
	var failed error // the socket's error, which the peek took: the next read returns it
	for {
		var b []byte
		select {
		case b = <-s.want:
		case <-s.quit:
			return
		default:
			if failed == nil && s.watchEnd() {
				failed = s.perr
				if c.r.lp.ScheduleOffLoop((*peerGone)(c), nil, 0) != nil {
					return
				}
			}
			select {
			case b = <-s.want:
			case <-s.quit:
				return
			}
		}
		if failed != nil {
			s.rn, s.rerr = 0, peekError(c, failed)
		} else {
			s.rn, s.rerr = s.nc.Read(b)
		}
		if c.r.lp.ScheduleOffLoop((*readDone)(c), nil, 0) != nil {
			return
		}
	}
}

// peerGone tells the loop that the peer left (perr: nil for its EOF) while
// nothing was asked of the reader goroutine.
type peerGone Conn

func (g *peerGone) Run() {
	c := (*Conn)(g)
	if c.isReleased() || c.receiving() || c.sk.reading || c.sk.got {
		return // a receive will say so
	}
	if err := c.sk.perr; err != nil {
		c.leave(peekError(c, err))
		return
	}
	c.leave(io.EOF)
}

func (c *Conn) writeLoop() {
	c.sk.serve(c.r.lp, c.sk.wreq, c.sk.nc.Write, &c.sk.wn, &c.sk.werr, (*writeDone)(c))
}

// readDone and writeDone hand a read's or a write's result to the loop.
// They are scheduled (accepted while the executor drains, so that a
// Shutdown still sees output leave), not submitted.
type (
	readDone  Conn
	writeDone Conn
)

func (r *readDone) Run()  { (*Conn)(r).readDone() }
func (w *writeDone) Run() { (*Conn)(w).writeDone() }

// serve is the body of a reader or writer goroutine: for each buffer the
// loop sends on req it calls op and hands the result to the loop (done).
func (s *sock) serve(lp *loop.Loop, req <-chan []byte, op func([]byte) (int, error), n *int, err *error, done loop.Runnable) {
	for {
		var b []byte
		select {
		case b = <-req:
		case <-s.quit:
			return
		}
		*n, *err = op(b)
		if lp.ScheduleOffLoop(done, nil, 0) != nil {
			return
		}
	}
}

// readNow returns what the reader goroutine read, or asks it to read.
func (*portableBackend) readNow(c *Conn) (int, error, bool) {
	s := &c.sk
	if s.got {
		s.got = false
		if s.rn == 0 && c.rbuf != nil {
			c.r.putR(c.rbuf) // the end: no bytes to keep valid
			c.rbuf = nil
		}
		return s.rn, sockErr(s.rerr), true
	}
	if !s.reading && !c.isReleased() {
		if c.rbuf == nil {
			c.rbuf = c.r.getR()
		}
		s.reading = true
		s.want <- c.rbuf
	}
	return 0, nil, false
}

func (c *Conn) readDone() {
	s := &c.sk
	s.reading = false
	if c.isReleased() {
		return
	}
	s.got = true
	c.readable()
}

// flushOut writes the output on the loop, as much as the socket takes at
// once, and hands the rest to the writer goroutine, which waits until the
// socket takes it (writeDone then hands on what came meanwhile). Writing
// on the loop spares most writes two handoffs between goroutines and the
// loop a wake-up; where the socket cannot be written without waiting
// (tryWrite), the writer goroutine writes everything.
func (*portableBackend) flushOut(c *Conn) {
	s := &c.sk
	if s.writing || len(c.out) == 0 {
		return
	}
	n, err, ok := s.tryWrite(c.out)
	if ok {
		if err != nil {
			c.abort(c.writeError(err))
			return
		}
		if n == len(c.out) {
			c.r.putW(c.out)
			c.out = nil
			c.took(n)
			return
		}
	}
	s.writing = true
	s.inflight = c.out
	c.out = nil
	s.wreq <- s.inflight[n:]
	if n > 0 {
		c.took(n)
	}
}

func (c *Conn) writeDone() {
	s := &c.sk
	s.writing = false
	b := s.inflight
	s.inflight = nil
	if c.isReleased() {
		return
	}
	c.r.putW(b)
	if s.werr != nil {
		c.abort(sockErr(s.werr))
		return
	}
	if len(c.out) > 0 {
		c.markDirty()
	}
	c.took(s.wn)
}

// addr is never asked for: the backend keeps the addresses in the Conn's
// extension.
func (*portableBackend) addr(c *Conn, remote bool) net.Addr {
	if remote {
		return c.ext.raddr
	}
	return c.ext.laddr
}

// lastWrite sends what the socket takes at once of the buffered output,
// before the executor's close drops the rest; while the writer goroutine
// writes (and may wait for the peer) what it has not yet written is
// dropped.
func (*portableBackend) lastWrite(c *Conn) {
	if !c.isReleased() && !c.sk.writing && len(c.out) > 0 {
		c.sk.tryWrite(c.out)
	}
}

// shutWrite shuts the write side of the socket.
func (*portableBackend) shutWrite(c *Conn) error {
	if cw, ok := c.sk.nc.(interface{ CloseWrite() error }); ok {
		return sockErr(cw.CloseWrite())
	}
	return nil
}

// full reports whether output is waiting for the kernel: a write is in
// flight on the writer goroutine (package net's Write returns once the
// kernel has taken all of it).
func (*portableBackend) full(c *Conn) bool { return c.sk.writing }

// mayReset reports whether closing the socket now could make the kernel
// reset the connection and lose output: package net does not say whether
// input waits unread or output is unacknowledged, so any connection that
// was written to may.
func (*portableBackend) mayReset(c *Conn) bool { return c.written > 0 }

// reset sets the socket's linger to 0 (package net's SetLinger), so that
// closing it resets the connection and drops the output the kernel holds.
func (*portableBackend) reset(c *Conn) {
	if s, ok := c.sk.nc.(interface{ SetLinger(int) error }); ok {
		_ = s.SetLinger(0)
	}
}

// closeSock closes the socket; the goroutines see quit and exit.
func (b *portableBackend) closeSock(c *Conn) {
	delete(b.all, c)
	s := &c.sk
	close(s.quit)
	s.nc.Close()
	if !s.writing && c.out != nil {
		c.r.putW(c.out)
	}
	c.out = nil
}

// peekError wraps a socket's error from a peek as package net would a
// read's.
func peekError(c *Conn, err error) error {
	return &net.OpError{Op: "read", Net: c.ext.laddr.Network(), Source: c.ext.laddr, Addr: c.ext.raddr, Err: os.NewSyscallError("read", err)}
}

// writeError wraps the error of a write on the loop (tryWrite) as package
// net would a Write's; a closed socket's is net.ErrClosed.
func (c *Conn) writeError(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return net.ErrClosed
	}
	if _, ok := err.(syscall.Errno); !ok {
		return err
	}
	return &net.OpError{Op: "write", Net: c.ext.laddr.Network(), Source: c.ext.laddr, Addr: c.ext.raddr, Err: os.NewSyscallError("write", err)}
}

// sockErr strips package net's wrapping where the error is ours to name.
func sockErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, net.ErrClosed) {
		return net.ErrClosed
	}
	return err
}

// lsock is the backend's part of a listener.
type lsock struct {
	ln       net.Listener
	acc      chan struct{}
	quit     chan struct{}
	accepted *accepted // handed over by the acceptor goroutine

	// loop-owned
	accepting bool

	sim *simListener // the simulated backend's part (sim_backend.go)
}

func (*portableBackend) listen(l *Listener, network, address string) (net.Addr, error) {
	lc := net.ListenConfig{}
	if l.reusesPort() {
		lc.Control = reusePortControl
	}
	ln, err := lc.Listen(context.Background(), network, address)
	if err != nil {
		return nil, err
	}
	l.ls = lsock{ln: ln, acc: make(chan struct{}, 1), quit: make(chan struct{})}
	go l.acceptLoop()
	return ln.Addr(), nil
}

// accepted carries one accept's result to the loop; if the loop closes
// first, Drop closes the connection.
type accepted struct {
	l   *Listener
	nc  net.Conn
	err error
}

func (a *accepted) Run() {
	l := a.l
	l.ls.accepting = false
	if l.isClosed() {
		a.Drop() // nobody will take it
	} else {
		l.ls.accepted = a
	}
	l.acceptable()
}

func (a *accepted) Drop() {
	if a.nc != nil {
		a.nc.Close()
	}
}

func (l *Listener) acceptLoop() {
	s := &l.ls
	for {
		select {
		case <-s.acc:
		case <-s.quit:
			return
		}
		nc, err := s.ln.Accept()
		if l.lp.ScheduleOffLoop(&accepted{l: l, nc: nc, err: err}, nil, 0) != nil {
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// acceptNow returns the connection the acceptor goroutine accepted, or
// asks it to accept one.
func (*portableBackend) acceptNow(l *Listener) (*Conn, error, bool) {
	s := &l.ls
	if a := s.accepted; a != nil {
		s.accepted = nil
		if a.err != nil {
			if errors.Is(a.err, net.ErrClosed) {
				return nil, net.ErrClosed, true
			}
			return nil, a.err, true
		}
		if l.isClosed() {
			a.nc.Close()
			return nil, net.ErrClosed, true
		}
		return newPortableConn(l.r, a.nc, &l.cfg), nil, true
	}
	if !s.accepting {
		s.accepting = true
		s.acc <- struct{}{}
	}
	return nil, nil, false
}

// forget lets the loop's state of the listener go: the backend keeps none.
func (*portableBackend) forget(*Listener) {}

// closeListener closes the listening socket. Called under l.mu, on any
// goroutine: it touches only what listen set before the listener was
// shared (quit, ln), never the loop-owned accepted and accepting. A
// connection accepted but not yet taken is closed by the loop when it
// takes it (acceptNow sees the listener closed), or by Drop.
func (*portableBackend) closeListener(l *Listener) error {
	close(l.ls.quit)
	return l.ls.ln.Close()
}

// dial connects on a goroutine of its own, watched so that the executor's
// closing cancels it.
func (*portableBackend) dial(ctx context.Context, lp *loop.Loop, network, address string, p *future.Promise[*Conn]) {
	d := &dialing{p: p, lp: lp}
	var dctx context.Context
	dctx, d.cancel = context.WithCancel(ctx)
	if !lp.Watch(&d.watch, d) {
		d.cancel()
		p.Reject(executor.ErrClosed)
		return
	}
	go func() {
		var nd net.Dialer
		nc, err := nd.DialContext(dctx, network, address)
		d.cancel()
		lp.Unwatch(&d.watch)
		if err != nil {
			if lp.Closed() {
				err = executor.ErrClosed
			} else if ctx.Err() != nil {
				err = ctx.Err()
			}
			p.Reject(err)
			return
		}
		d.nc = nc
		_ = lp.ScheduleOffLoop(d, nil, 0)
	}()
}

type dialing struct {
	p      *future.Promise[*Conn]
	lp     *loop.Loop
	watch  loop.CloseWatch
	cancel context.CancelFunc
	nc     net.Conn
}

func (d *dialing) Interrupt(error) { d.cancel() }

// Run makes the connection on the loop.
func (d *dialing) Run() {
	r, err := reactorOf(d.lp)
	if err != nil {
		d.nc.Close()
		d.p.Reject(err)
		return
	}
	cfg := defaultListenConfig()
	c := newPortableConn(r, d.nc, &cfg)
	if c == nil {
		d.p.Reject(executor.ErrClosed)
		return
	}
	if !d.p.Resolve(c) {
		c.abort(net.ErrClosed) // the Dial was cancelled meanwhile
	}
}

// Drop closes the connection when the loop closed before Run.
func (d *dialing) Drop() {
	d.nc.Close()
	d.p.Reject(executor.ErrClosed)
}
