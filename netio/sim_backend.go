package netio

// The simulated backend: the sockets of a simulated network (package sim).
//
// A loop that a simulation steps (loop.Loop.Sim is a *simnet.Poller) is
// served by this backend whatever the build: its listeners, dials and
// connections are simulated sockets, their events come from the poller
// when the loop polls its IO (the simulation's driver has delivered them),
// and nothing here starts a goroutine or touches the kernel.
//
// Invariants (all loop-owned, on the simulation's one goroutine):
//   - a simulated connection has c.addrs set and c.sk.sim holds its
//     socket; a simulated listener has l.ls.sim set;
//   - out[woff:] is the output not yet taken, as on epoll; a write the
//     socket took in part is resumed by its Writable event;
//   - a connection being dialled (dialP set) is not seen by its user until
//     its Connected event resolves or fails dialP;
//   - open lists the backend's open connections, each at the index it
//     knows (a closed one's place goes to the last), so the executor's
//     close interrupts them in an order that only the run decides, never
//     a map's.

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/simnet"
)

// simBackend serves the sockets of one simulated poller.
type simBackend struct {
	p    *simnet.Poller
	open []*Conn // the open connections (each knows its index)
}

// simConn is a simulated connection's part.
type simConn struct {
	c     *Conn
	s     *simnet.Sock
	woff  int
	idx   int
	dialP *future.Promise[*Conn]
	full  bool // the last write left output the socket did not take
}

// simListener is a simulated listener's part.
type simListener struct {
	l  *Listener
	ln *simnet.Listener
}

// simBackendOf returns the backend of p, making it on first use.
func simBackendOf(p *simnet.Poller) *simBackend {
	if b, ok := p.Ext.(*simBackend); ok {
		return b
	}
	b := &simBackend{p: p}
	p.Ext = b
	return b
}

// Wait does nothing: the simulation's driver has delivered the events
// before it steps the loop.
func (b *simBackend) Wait(time.Duration) {}

// Dispatch hands the poller's events to their sockets.
func (b *simBackend) Dispatch() { b.p.Dispatch() }

// Wake does nothing: the driver steps a loop that has work.
func (b *simBackend) Wake() {}

func (b *simBackend) init(r *reactor) (loop.IO, error) { return b, nil }

func (b *simBackend) conns(r *reactor) []*Conn { return append([]*Conn(nil), b.open...) }

func (b *simBackend) shut(r *reactor) {}

func (b *simBackend) name() Backend { return BackendSim }

// newConn attaches the simulated socket s to r. Loop only.
func (b *simBackend) newConn(r *reactor, s *simnet.Sock, cfg *listenConfig) *Conn {
	c := newConnOf(s.Local, s.Remote)
	if !c.attach(r, cfg) {
		s.Close()
		return nil
	}
	x := &simConn{c: c, s: s, idx: len(b.open)}
	c.sk.sim = x
	b.open = append(b.open, c)
	s.SetHandler(x)
	return c
}

// Event handles the socket's events.
func (x *simConn) Event(ev simnet.Event) {
	c := x.c
	if x.dialP != nil {
		if ev&simnet.Connected == 0 {
			return
		}
		x.connected()
		if x.dialP != nil || c.isReleased() {
			return
		}
		// The peer's bytes or end may have come before the connect ended
		// (their Readable was dropped above): nothing would tell them
		// again, so look now.
		ev |= simnet.Readable
	}
	if ev&simnet.Readable != 0 {
		c.readable()
		if !c.isReleased() && !c.receiving() {
			x.peerEnd()
		}
	}
	if ev&simnet.Writable != 0 && !c.isReleased() && c.out != nil && !c.isDirty() {
		c.r.be.flushOut(c)
	}
}

// peerEnd looks at a socket that became readable while nobody receives
// from it: if the peer has ended (or reset) and nothing it sent is left
// unread, the connection has ended (see Conn.leave), as epoll's hang-up
// finds out on the kernel's sockets.
func (x *simConn) peerEnd() {
	switch err := x.s.End(); err {
	case nil:
	case io.EOF:
		x.c.leave(io.EOF)
	default:
		x.c.leave(simOpError(x.c, "read", err))
	}
}

// connected ends a dial.
func (x *simConn) connected() {
	c, p := x.c, x.dialP
	if err := x.s.Err(); err != nil {
		ra := c.ext.raddr
		c.abort(&net.OpError{Op: "dial", Net: ra.Network(), Addr: ra, Err: os.NewSyscallError("connect", err)})
		return
	}
	x.dialP = nil
	if !p.Resolve(c) {
		c.abort(net.ErrClosed) // the Dial was cancelled meanwhile
	}
}

func (b *simBackend) readNow(c *Conn) (int, error, bool) {
	if c.isReleased() {
		return 0, net.ErrClosed, true
	}
	x := c.sk.sim
	if c.rbuf == nil {
		c.rbuf = c.r.getR()
	}
	n, err, ok := x.s.Read(c.rbuf)
	if !ok || n == 0 {
		c.r.putR(c.rbuf)
		c.rbuf = nil
	}
	if err != nil {
		return 0, simOpError(c, "read", err), true
	}
	return n, nil, ok
}

func (b *simBackend) flushOut(c *Conn) {
	x := c.sk.sim
	if c.out == nil || x.dialP != nil {
		return
	}
	n, err := x.s.Write(c.out[x.woff:])
	x.full = err == nil && n < len(c.out)-x.woff
	if err != nil {
		c.abort(simOpError(c, "write", err))
		return
	}
	if n == 0 {
		return
	}
	x.woff += n
	if x.woff == len(c.out) {
		c.r.putW(c.out)
		c.out, x.woff = nil, 0
	} else if x.woff >= len(c.out)/2 {
		k := copy(c.out, c.out[x.woff:])
		c.out, x.woff = c.out[:k], 0
	}
	c.took(n)
}

func (b *simBackend) full(c *Conn) bool { return c.sk.sim.full && c.out != nil }

func (b *simBackend) lastWrite(c *Conn) {
	if x := c.sk.sim; !c.isReleased() && c.out != nil && x.dialP == nil {
		_, _ = x.s.Write(c.out[x.woff:])
	}
}

func (b *simBackend) shutWrite(c *Conn) error {
	c.sk.sim.s.ShutWrite()
	return nil
}

func (b *simBackend) mayReset(c *Conn) bool { return c.sk.sim.s.Unsettled() }

func (b *simBackend) unacked(c *Conn) int { return c.sk.sim.s.Unacked() }

func (b *simBackend) reset(c *Conn) { c.sk.sim.s.Reset() }

// addr is never asked: a simulated connection keeps its addresses.
func (b *simBackend) addr(c *Conn, remote bool) net.Addr {
	if remote {
		return c.ext.raddr
	}
	return c.ext.laddr
}

func (b *simBackend) closeSock(c *Conn) {
	x := c.sk.sim
	x.s.Close()
	if i := x.idx; i < len(b.open) && b.open[i] == c {
		last := b.open[len(b.open)-1]
		b.open[i] = last
		last.sk.sim.idx = i
		b.open[len(b.open)-1] = nil
		b.open = b.open[:len(b.open)-1]
	}
	if c.out != nil {
		c.r.putW(c.out)
		c.out, x.woff = nil, 0
	}
	if p := x.dialP; p != nil {
		x.dialP = nil
		p.Reject(c.werr)
	}
}

func (b *simBackend) listen(l *Listener, network, address string) (net.Addr, error) {
	ln, err := b.p.Listen(network, address, l.reusesPort())
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: simAddr{network, address}, Err: os.NewSyscallError("bind", err)}
	}
	l.ls.sim = &simListener{l: l, ln: ln}
	ln.SetHandler(l.ls.sim)
	return ln.Addr, nil
}

// Event tells the listener that a connection may be waiting.
func (sl *simListener) Event(simnet.Event) { sl.l.acceptable() }

// acceptNow accepts as epoll's does: an accept the network aborted
// (simnet's AcceptAbort) is tried again at once, one that failed
// otherwise (AcceptFail: EMFILE, ENFILE) is the shared code's to count,
// report and retry, its connection left queued.
func (b *simBackend) acceptNow(l *Listener) (*Conn, error, bool) {
	if l.isClosed() {
		return nil, net.ErrClosed, true
	}
	s, err := l.ls.sim.ln.Accept()
	for err != nil && acceptAgain(err) {
		s, err = l.ls.sim.ln.Accept()
	}
	if err != nil {
		return nil, os.NewSyscallError("accept4", err), true
	}
	if s == nil {
		return nil, nil, false
	}
	c := b.newConn(l.r, s, &l.cfg)
	if c == nil {
		return nil, nil, true // the executor closed under it
	}
	return c, nil, true
}

func (b *simBackend) forget(l *Listener) {}

func (b *simBackend) closeListener(l *Listener) error {
	l.ls.sim.ln.Close()
	return nil
}

func (b *simBackend) dial(ctx context.Context, lp *loop.Loop, network, address string, p *future.Promise[*Conn]) {
	if lp.OnLoop() {
		b.connect(ctx, lp, network, address, p)
		return
	}
	toLoop(lp, func() { b.connect(ctx, lp, network, address, p) }, func() { p.Reject(executor.ErrClosed) })
}

// connect starts a simulated connect on the loop.
func (b *simBackend) connect(ctx context.Context, lp *loop.Loop, network, address string, p *future.Promise[*Conn]) {
	if err := ctx.Err(); err != nil {
		p.Reject(err)
		return
	}
	r, err := reactorOf(lp)
	if err != nil {
		p.Reject(err)
		return
	}
	s, err := b.p.Dial(network, address)
	if err != nil {
		var ae *net.AddrError
		if !errors.As(err, &ae) {
			err = &net.OpError{Op: "dial", Net: network, Addr: simAddr{network, address}, Err: err}
		}
		p.Reject(err)
		return
	}
	cfg := defaultListenConfig()
	c := b.newConn(r, s, &cfg)
	if c == nil {
		p.Reject(executor.ErrClosed)
		return
	}
	c.sk.sim.dialP = p
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			toLoop(lp, func() {
				if c.sk.sim.dialP == p {
					c.abort(ctx.Err())
				}
			}, func() {})
		})
		p.Future().OnComplete(func(*Conn, error) { stop() })
	}
}

// simOpError is the error of a failed operation on c's socket, as the
// kernel's backends report it.
func simOpError(c *Conn, op string, err error) error {
	la, ra := c.LocalAddr(), c.RemoteAddr()
	return &net.OpError{Op: op, Net: la.Network(), Source: la, Addr: ra, Err: os.NewSyscallError(op, err)}
}

// simAddr is an address as it was given, for errors.
type simAddr struct{ net, s string }

func (a simAddr) Network() string { return a.net }
func (a simAddr) String() string  { return a.s }

// sendFile: the simulated network sends a file by the copy path.
func (b *simBackend) sendFile(*Conn, *fileOut) (*future.Future[struct{}], bool) { return nil, false }
