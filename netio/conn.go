package netio

// A connection's state, shared by every backend.
//
// Invariants:
//   - everything below "loop-owned" is read and written only by the
//     goroutine that holds the connection's loop; calls from elsewhere
//     (Recv, Close) reach it through the loop's inbox, as runnables that
//     fail their future with executor.ErrClosed if the loop closes first;
//   - bytes are read from the socket only by receive, which runs only for
//     a receive that is pending (a queued Recv, a PollRecv, a TryRecv), so
//     an owner that stops receiving leaves the bytes in the kernel and the
//     peer is held back by TCP flow control;
//   - rbuf[:held] are bytes read but not yet delivered (their Recv was
//     cancelled); otherwise the bytes in rbuf are those the last receive
//     returned, and the next receive may overwrite them;
//   - written counts the bytes Write accepted and taken the bytes the kernel
//     has taken, so Buffered is written-taken; each flush waiter waits for
//     taken to reach the written of its Flush, and waiters are queued in
//     that order;
//   - rerr, once set, is the error of every later receive (io.EOF, the
//     socket's error, net.ErrClosed after Close, executor.ErrClosed after
//     the executor closed); werr likewise for writes and flushes;
//   - released is set once, when the socket is closed; from then on no
//     receive, write or flush is pending and the connection holds no
//     buffer.

import (
	"errors"
	"io"
	"math"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// Conn is a TCP or Unix connection served by one executor's loop. Make one
// with Listener.Accept or Dial. Its receives and write completions are
// events of that loop. Recv, Close and the address and executor getters
// may be called from any goroutine; the other methods are loop-only (a
// callback or task body of the executor) and panic elsewhere.
//
// A Conn is a merge.Stream[[]byte] and a future.Poller[[]byte] through
// PollRecv, so merge.Merge and future.Next receive from it.
type Conn struct {
	r *reactor // its loop is r.lp

	// loop-owned
	rbuf     []byte
	recvq    []*future.Promise[[]byte]
	pollw    executor.Waker
	out      []byte
	rerr     error
	werr     error
	written  uint64
	taken    uint64
	linger   time.Duration
	ext      *connExt // what only some connections need
	owner    *connSet // the Server's connections on this loop, if a Server serves c
	held     int32
	oidx     int32
	limit    int32       // the output limit; <= 0: none
	closeReq atomic.Bool // Close was asked from off the loop
	flags    connFlag
	addrs    bool // the addresses are in ext (set at creation, then read-only); else inline in sk
	dirty    bool
	released bool
	rtimeout bool // the read deadline has passed (deadline.go)
	wtimeout bool // the write deadline has passed
	idle     bool // an idle timeout is set: receives and writes record the time

	sk sock // the backend's part
}

// connFlag is one of a connection's loop-owned flags, kept in one field
// (Conn.flags) so that an idle connection is smaller.
type connFlag uint16

const (
	fPumping  connFlag = 1 << iota // a pump runnable is queued
	fClosing                       // Close has begun: output is being sent, then the socket closes
	fLingerIn                      // Close has sent the output and shut the write side: input is discarded until EOF
	fGone                          // the peer left while nobody received: the socket is freed once the output has left
	fRecvd                         // a receive has returned bytes
	fWShut                         // CloseWrite has been asked
	fWShutOK                       // the write side has been shut
	fPartial                       // a Reader holds the start of a token (reader.go)
	fDrain                         // a Server is shutting down: a receive that would wait fails (server.go)
)

// is reports whether flag f is set. Loop only, as are set, unset and put.
func (c *Conn) is(f connFlag) bool { return c.flags&f != 0 }

func (c *Conn) set(f connFlag) { c.flags |= f }

func (c *Conn) unset(f connFlag) { c.flags &^= f }

// put sets f when on is true, else clears it.
func (c *Conn) put(f connFlag, on bool) {
	if on {
		c.flags |= f
	} else {
		c.flags &^= f
	}
}

// connExt holds the state of a connection that is flushed, lingers or is
// being dialled: kept apart so an idle connection is smaller.
type connExt struct {
	laddr   net.Addr // when c.addrs: set before c is shared, then read-only
	raddr   net.Addr
	flushq  []flushWait
	lingerT *executor.Timer
	done    *future.Promise[error] // Done's, made on first use
	dl      *deadlines             // read, write and idle deadlines, once one is set

	// The output limit's stall: since when the output has been over the
	// limit with the socket full, and how much the kernel had taken then.
	stallAt    time.Duration // on the loop's clock; 0: no stall
	stallTaken uint64
	dialExt             // the host backend's dial state
	sim        *simConn // the simulated backend's state (backend_sim.go)

	tls *tlsState // a TLS connection's state (tls.go)

	sf *fileOut // a SendFile under way (sendfile.go)
}

// newConnOf returns a connection whose addresses are laddr and raddr, or,
// when both are nil, kept inline by the backend.
func newConnOf(laddr, raddr net.Addr) *Conn {
	if laddr == nil && raddr == nil {
		return &Conn{}
	}
	return &Conn{addrs: true, ext: &connExt{laddr: laddr, raddr: raddr}}
}

// x returns c's extension, making it on first use.
func (c *Conn) x() *connExt {
	if c.ext == nil {
		c.ext = &connExt{}
	}
	return c.ext
}

// flushq returns the pending flushes.
func (c *Conn) flushq() []flushWait {
	if c.ext == nil {
		return nil
	}
	return c.ext.flushq
}

type flushWait struct {
	target uint64
	p      *future.Promise[struct{}]
}

// attach finishes making a connection on its loop; the reactor closes it
// with the executor (the backend keeps it in its table of sockets). Loop
// only. It returns false (and the caller closes the socket) once the
// executor has closed.
func (c *Conn) attach(r *reactor, cfg *listenConfig) bool {
	c.r = r
	c.limit, c.linger = clampLimit(cfg.outputLimit), cfg.linger
	if r.closed {
		return false
	}
	r.conns++
	inc(&r.stats.opened)
	if cfg.idle > 0 {
		c.SetIdleTimeout(cfg.idle)
	}
	return true
}

// interrupt closes the connection at once when the executor closes: what
// is pending fails with executor.ErrClosed.
func (c *Conn) interrupt() { c.interruptWith(executor.ErrClosed) }

func (c *Conn) check(op string) {
	if c == nil {
		panic("netio: " + op + " on nil *Conn")
	}
}

// mustLoop panics unless the caller holds c's loop.
func (c *Conn) mustLoop(op string) {
	if c == nil {
		panic("netio: " + op + " on nil *Conn")
	}
	if !c.r.lp.OnLoop() {
		panic("netio: Conn." + op + " called from a goroutine that does not hold the connection's loop; use Submit")
	}
}

// Executor returns the executor whose loop serves c.
func (c *Conn) Executor() *executor.Executor { c.check("Executor"); return c.exe() }

func (c *Conn) exe() *executor.Executor { return (*executor.Executor)(c.r.lp) }

// LocalAddr returns the local address of c.
func (c *Conn) LocalAddr() net.Addr {
	c.check("LocalAddr")
	if c.addrs {
		return c.ext.laddr
	}
	return c.r.be.addr(c, false)
}

// RemoteAddr returns the address of c's peer.
func (c *Conn) RemoteAddr() net.Addr {
	c.check("RemoteAddr")
	if c.addrs {
		return c.ext.raddr
	}
	return c.r.be.addr(c, true)
}

// Recv returns a future of the next bytes received on c (at least one).
// The slice is c's own buffer: it stays valid until the next receive on c
// (Recv, TryRecv, PollRecv) and must be copied to be kept. The future fails
// with io.EOF once the peer has closed its side and everything before was
// received, with net.ErrClosed once c is closed, with the socket's error on
// a failure (errors.Is(err, syscall.ECONNRESET) on a reset), and with
// executor.ErrClosed once the executor has closed. Bytes are read from the
// socket only while a receive is pending. Several Recvs may be pending;
// they are served in order, each after the callbacks of the one before
// have run. Cancelling a pending Recv loses no bytes. Any goroutine.
func (c *Conn) Recv() *future.Future[[]byte] {
	c.check("Recv")
	return onLoopFuture(c.r.lp, c.recvOn)
}

func (c *Conn) recvOn(p *future.Promise[[]byte]) {
	c.recvq = append(sweep(c.recvq), p)
	if len(c.recvq) == 1 && !c.is(fPumping) {
		c.pump()
	}
}

// pump serves the first pending Recv if bytes (or an error) are there; the
// next one is served by a runnable queued behind the callbacks of the
// first, so the bytes the first returned stay valid while they run.
func (c *Conn) pump() {
	for len(c.recvq) > 0 {
		b, err, ok := c.receive()
		if !ok {
			return
		}
		p := c.recvq[0]
		copy(c.recvq, c.recvq[1:])
		c.recvq[len(c.recvq)-1] = nil
		c.recvq = c.recvq[:len(c.recvq)-1]
		if err != nil {
			p.Reject(err)
			continue
		}
		if !p.Resolve(b) {
			c.held = int32(len(b)) // cancelled meanwhile: keep the bytes for the next
			continue
		}
		if len(c.recvq) > 0 && !c.is(fPumping) {
			c.set(fPumping)
			c.r.lp.Post(c.pumpLater)
		}
		return
	}
}

func (c *Conn) pumpLater() {
	c.unset(fPumping)
	c.pump()
}

// receive is one receive: the next bytes, a sticky error, or !ok when
// nothing is readable yet (the backend then calls readable once it may be).
func (c *Conn) receive() ([]byte, error, bool) {
	if c.rtimeout {
		return nil, os.ErrDeadlineExceeded, true // nothing consumed
	}
	if t := c.tlsOf(); t != nil {
		return c.tlsReceive(t)
	}
	if c.held > 0 {
		n := c.held
		c.held = 0
		return c.rbuf[:n], nil, true
	}
	if c.rerr != nil {
		return nil, c.rerr, true
	}
	if c.r.draining {
		return nil, nil, false // Shutdown: nothing more is read for a receive
	}
	n, err, ok := c.r.readNow(c)
	if !ok {
		if c.is(fDrain) && !c.is(fPartial) {
			return nil, ErrServerClosed, true
		}
		return nil, nil, false
	}
	if n > 0 {
		if err != nil && !errors.Is(err, io.EOF) {
			c.rerr = err
		}
		if c.idle {
			c.touch()
		}
		c.set(fRecvd)
		return c.rbuf[:n], nil, true
	}
	if err == nil {
		err = io.EOF
	}
	c.rerr = err
	return nil, err, true
}

// readable is called by the backend, on the loop, when bytes may have
// arrived since a receive found none.
func (c *Conn) readable() {
	if c.is(fLingerIn) {
		c.discardInput()
		return
	}
	if len(c.recvq) > 0 && !c.is(fPumping) {
		c.pump()
	}
	if w := c.pollw; w != nil {
		c.pollw = nil
		w.Wake()
	}
}

// receiving reports whether a receive is pending (a queued Recv, a
// PollRecv waiting): the peer's end is then delivered to it.
func (c *Conn) receiving() bool { return len(c.recvq) > 0 || c.pollw != nil }

// leave ends a connection whose peer has gone while nobody received from
// it: err (io.EOF, or the socket's error) is what receives fail with from
// now on, and the socket is freed at once when nothing is left to send
// (after the output otherwise, or at once on an error). A peer's EOF after
// bytes were received is left to the next receive instead: the peer may
// have shut only its write side and wait for a reply.
func (c *Conn) leave(err error) {
	if c.released || c.is(fClosing) || c.rerr != nil || c.held > 0 {
		return
	}
	if err == io.EOF && c.is(fRecvd) {
		return
	}
	if err == io.EOF && c.tlsOf() != nil {
		// Nothing is left unread and no close_notify came before the
		// end (it would have ended the receives already): a truncation.
		err = errTruncated
	}
	c.rerr = err
	if err != io.EOF || c.written == c.taken {
		c.werr = net.ErrClosed // writes fail as after Close
		c.abort(err)
		return
	}
	c.set(fGone) // drained releases it
}

// TryRecv returns bytes that are already readable on c, without waiting:
// the same slice as Recv's, valid until the next receive. It returns false
// when nothing is readable (or c has ended: Recv or PollRecv then says
// why). On the portable backend a TryRecv that finds nothing asks the
// connection's reader goroutine for the next bytes, so a later TryRecv may
// find them. Loop only.
func (c *Conn) TryRecv() ([]byte, bool) {
	c.mustLoop("TryRecv")
	b, err, ok := c.receive()
	if !ok || err != nil {
		return nil, false
	}
	return b, true
}

// PollRecv is the poll form of Recv, which makes c a merge.Stream[[]byte]
// and a future.Poller[[]byte]: it returns the next bytes (ok), the error
// Recv would fail with (err), or neither, and then wakes w once bytes may
// have arrived. The slice is valid until the next receive. Loop only.
func (c *Conn) PollRecv(w executor.Waker) ([]byte, bool, error) {
	c.mustLoop("PollRecv")
	if w == nil {
		panic("netio: PollRecv with nil Waker")
	}
	b, err, ok := c.receive()
	if !ok {
		c.pollw = w
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// Write copies p into c's output buffer and returns len(p), nil: it never
// blocks. The loop hands the buffer to the kernel at the end of its
// current batch (so the replies to pipelined requests leave in one system
// call) and the rest as the socket can take more. After Close, CloseWrite
// or a failure it writes nothing and returns net.ErrClosed (or the
// connection's error). A Write past the output limit fails the connection
// with ErrOutputLimit when the peer has stopped reading (see
// SetOutputLimit). Loop only: off the loop it panics; use Submit.
func (c *Conn) Write(p []byte) (int, error) { return write(c, "Write", p) }

// WriteString is Write of a string, without converting it.
func (c *Conn) WriteString(s string) (int, error) { return write(c, "WriteString", s) }

func write[S []byte | string](c *Conn, op string, p S) (int, error) {
	c.mustLoop(op)
	if c.werr != nil {
		return 0, c.werr
	}
	if c.is(fClosing) || c.is(fWShut) {
		return 0, net.ErrClosed
	}
	if c.wtimeout {
		return 0, os.ErrDeadlineExceeded
	}
	if x := c.ext; x != nil && x.sf != nil && !x.sf.copying {
		return 0, ErrSendFilePending
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.limit > 0 && c.buffered()+len(p) > int(c.limit) && c.overLimit(len(p)) {
		inc(&c.r.stats.overLimit)
		c.abort(ErrOutputLimit)
		return 0, ErrOutputLimit
	}
	if t := c.tlsOf(); t != nil {
		if t.pout == nil {
			t.pout = c.r.getW()
		}
		t.pout = append(t.pout, p...) // sealed at the batch boundary
		c.markDirty()
		return len(p), nil
	}
	if c.out == nil {
		c.out = c.r.getW()
	}
	c.out = append(c.out, p...)
	c.written += uint64(len(p))
	c.markDirty()
	return len(p), nil
}

// outputStall is how long output over the limit may wait, with the socket
// full and the kernel taking none of it, before the connection is cut: the
// peer has stopped reading.
const outputStall = time.Second

// outputCeiling is how many times its limit a connection's output may
// reach, however the peer reads.
const outputCeiling = 4

// overLimit reports whether a Write of n more bytes, which takes the
// output past the limit, fails the connection (see SetOutputLimit): the
// output would pass the ceiling, or the peer has stopped reading.
func (c *Conn) overLimit(n int) bool {
	waiting := int64(c.buffered()) + int64(n)
	if waiting > outputCeiling*int64(c.limit) {
		return true
	}
	if !c.r.be.full(c) {
		return false // the kernel takes what it can at the end of the batch
	}
	now := time.Duration(c.r.lp.Now()) // the loop's clock: simulated time under package sim
	x := c.x()
	if x.stallAt == 0 || c.taken != x.stallTaken {
		x.stallAt, x.stallTaken = now, c.taken // the stall starts now
		return false
	}
	return now-x.stallAt >= outputStall
}

func (c *Conn) markDirty() {
	if !c.dirty {
		c.dirty = true
		c.r.dirty = append(c.r.dirty, c)
	}
}

// Buffered returns the number of bytes written to c but not yet taken by
// the kernel. Loop only.
func (c *Conn) Buffered() int {
	c.mustLoop("Buffered")
	return c.buffered()
}

// buffered is Buffered for netio's own callers, which have made the check.
func (c *Conn) buffered() int { return int(c.written-c.taken) + c.tlsBuffered() }

// Unacked returns how many bytes of c's output the kernel has taken and
// the peer has not acknowledged yet (on Linux the socket's SIOCOUTQ; for
// a Unix socket, the bytes the peer has not read). With Buffered, it is
// the output still on its way to the peer: a peer that stops reading
// keeps it above zero once its receive buffer is full, even when the
// kernel's send buffer took everything written and Buffered is 0. It is 0
// once c's socket is closed, and always where the system does not tell
// (outside Linux). It costs a system call. Loop only.
func (c *Conn) Unacked() int {
	c.mustLoop("Unacked")
	if c.released {
		return 0
	}
	return c.r.be.unacked(c)
}

// SetOutputLimit sets the output limit of c, which bounds the output held
// for a peer that stopped reading, so that such a peer costs its own
// connection only. A Write that takes the output waiting (Buffered, with
// its bytes) past n fails the connection with ErrOutputLimit when the
// socket is full and the kernel has taken none of c's output for a second,
// or when the output would pass 4*n, however the peer reads. Output the
// kernel takes never counts: one large Write, or a burst of Writes in one
// batch, to a peer that reads goes through. n <= 0 means no limit; a
// limit above math.MaxInt32 is taken as math.MaxInt32. The default is
// DefaultOutputLimit, or what WithOutputLimit gave the listener. Loop
// only.
func (c *Conn) SetOutputLimit(n int) {
	c.mustLoop("SetOutputLimit")
	c.limit = clampLimit(n)
}

// clampLimit is n as Conn.limit keeps it, within int32: a limit past
// math.MaxInt32 (2 GiB of output) is kept as math.MaxInt32.
func clampLimit(n int) int32 {
	return int32(max(min(n, math.MaxInt32), math.MinInt32))
}

// OutputLimit returns c's output limit (0: none). Loop only.
func (c *Conn) OutputLimit() int {
	c.mustLoop("OutputLimit")
	if c.limit < 0 {
		return 0
	}
	return int(c.limit)
}

// SetLinger sets how long Close keeps c open to send the output written
// before it. With d <= 0, Close resets the connection (SO_LINGER 0, as
// net.TCPConn.SetLinger(0)): the output not yet sent is dropped, that
// still in c's buffer and that the kernel took and has not delivered, and
// the peer's receives fail with a reset. The default is DefaultLinger, or
// what WithLinger gave the listener. Loop only.
func (c *Conn) SetLinger(d time.Duration) {
	c.mustLoop("SetLinger")
	c.linger = d
}

// Flush returns a future that completes once everything written to c
// before it has been taken by the kernel: the backpressure point (a writer
// awaits it before producing more). It fails with the connection's error
// if c fails or is closed first. Loop only.
func (c *Conn) Flush() *future.Future[struct{}] {
	c.mustLoop("Flush")
	if c.wtimeout && c.werr == nil {
		return future.Failed[struct{}](c.exe(), os.ErrDeadlineExceeded)
	}
	if t := c.tlsOf(); t != nil {
		t.seal()
	}
	if c.written == c.taken {
		if c.werr != nil && !c.is(fClosing) {
			return future.Failed[struct{}](c.exe(), c.werr)
		}
		return future.Resolved(c.exe(), struct{}{})
	}
	if c.werr != nil {
		return future.Failed[struct{}](c.exe(), c.werr)
	}
	p := future.NewPromise[struct{}](c.exe())
	x := c.x()
	x.flushq = append(x.flushq, flushWait{c.written, p})
	c.markDirty()
	return p.Future()
}

// took records that the kernel took n more bytes of output.
func (c *Conn) took(n int) {
	c.taken += uint64(n)
	if c.idle && n > 0 {
		c.touch()
	}
	for q := c.flushq(); len(q) > 0 && q[0].target <= c.taken; q = c.ext.flushq {
		p := q[0].p
		copy(q, q[1:])
		q[len(q)-1] = flushWait{}
		c.ext.flushq = q[:len(q)-1]
		p.Resolve(struct{}{})
	}
	if c.taken == c.written {
		c.drained()
	}
}

// drained runs once the output has all been taken: it finishes a Close or
// a CloseWrite that waited for it.
func (c *Conn) drained() {
	switch {
	case c.is(fClosing):
		c.lingerClose()
	case c.is(fGone):
		c.release()
	case c.is(fWShut) && !c.is(fWShutOK):
		c.set(fWShutOK)
		if err := c.r.be.shutWrite(c); err != nil {
			c.abort(err)
		}
	}
}

// CloseWrite shuts the write side of c once its buffered output has been
// sent: the peer reads EOF; receiving goes on. Later writes fail with
// net.ErrClosed. Loop only.
func (c *Conn) CloseWrite() error {
	c.mustLoop("CloseWrite")
	if c.released || c.is(fClosing) {
		return net.ErrClosed
	}
	if c.is(fWShut) {
		return nil
	}
	if t := c.tlsOf(); t != nil {
		t.closeNotify()
	}
	c.set(fWShut)
	if c.written == c.taken {
		c.drained()
	}
	return nil
}

// Close closes c. Output written before Close is still sent, for at most
// the linger time (SetLinger), so a peer that never reads cannot hold the
// connection open; then the socket is closed. If input arrived that was
// not read, or output is not yet acknowledged, the close lingers (the
// write side is shut and input discarded until the peer's EOF, within the
// linger time), so the kernel does not reset the connection and lose the
// output. Pending receives fail with
// net.ErrClosed at once, and so do later receives and writes. Close is
// idempotent and may be called from any goroutine; it returns nil.
// Executor.Close closes every connection of the executor at once.
func (c *Conn) Close() error {
	c.check("Close")
	if c.r.lp.OnLoop() {
		c.closeOn()
		return nil
	}
	if c.closeReq.Swap(true) {
		return nil
	}
	toLoop(c.r.lp, c.closeOn, func() {}) // once the loop has closed, so has c
	return nil
}

func (c *Conn) closeOn() { c.closeWith(net.ErrClosed) }

// closeWith is Close on the loop: pending and later receives fail with
// err.
func (c *Conn) closeWith(err error) {
	if c.is(fClosing) || c.released {
		return
	}
	if t := c.tlsOf(); t != nil {
		t.closeNotify()
	}
	c.set(fClosing)
	c.failRecv(err)
	c.rerr = err
	if c.linger <= 0 || c.werr != nil {
		if c.werr == nil {
			c.r.be.reset(c) // no linger: the kernel's output goes too
		}
		c.abort(net.ErrClosed)
		return
	}
	if c.written == c.taken {
		c.lingerClose()
		return
	}
	c.markDirty()
	c.startLinger()
}

// startLinger bounds what is left of a Close by the linger time.
func (c *Conn) startLinger() {
	if x := c.x(); x.lingerT == nil {
		x.lingerT = c.exe().AfterFunc(c.linger, func() { c.abort(net.ErrClosed) })
	}
}

// lingerClose ends a Close once the output has all been taken by the
// kernel. Closing a socket whose input holds bytes not read (or that
// receives more) makes the kernel send a reset, which discards the output
// it has not delivered yet. So unless the socket is clear (no input
// unread, no output undelivered), the close lingers: the write side is
// shut (the peer reads EOF after the output), input is read and discarded
// until the peer's EOF, then the socket closes; the linger time bounds it.
func (c *Conn) lingerClose() {
	if c.released || c.is(fLingerIn) {
		return
	}
	if c.werr != nil || !c.r.be.mayReset(c) {
		c.release()
		return
	}
	if !c.is(fWShutOK) {
		c.set(fWShutOK)
		if err := c.r.be.shutWrite(c); err != nil {
			c.release()
			return
		}
	}
	c.set(fLingerIn)
	c.startLinger()
	c.discardInput()
}

// discardInputBurst is how many reads a lingering close makes in one go
// before it lets the loop run something else.
const discardInputBurst = 16

// discardInput reads and drops the input of a lingering close until the
// peer's EOF (or a failure), then closes the socket.
func (c *Conn) discardInput() {
	for range discardInputBurst {
		if c.released {
			return
		}
		n, err, ok := c.r.readNow(c)
		if !ok {
			return // the backend calls readable once there is more
		}
		if n == 0 || err != nil {
			c.release()
			return
		}
	}
	c.r.lp.Post(c.discardInput) // a peer that keeps sending: go on after the rest of the loop
}

// failRecv fails every pending receive with err.
func (c *Conn) failRecv(err error) {
	for i, p := range c.recvq {
		p.Reject(err)
		c.recvq[i] = nil
	}
	c.recvq = c.recvq[:0]
	if w := c.pollw; w != nil {
		c.pollw = nil
		w.Wake()
	}
}

// abort closes c at once: unsent output is dropped and everything pending
// fails with err (receives with their sticky error if they had one).
func (c *Conn) abort(err error) {
	if c.released {
		return
	}
	if c.rerr == nil {
		c.rerr = err
	}
	if c.werr == nil {
		c.werr = err
	}
	c.failRecv(c.rerr)
	c.failFlush()
	c.release()
}

// failFlush fails every pending Flush with the write error.
func (c *Conn) failFlush() {
	if c.ext == nil {
		return
	}
	for _, w := range c.ext.flushq {
		w.p.Reject(c.werr)
	}
	c.ext.flushq = nil
}

// release closes the socket and gives the buffers up.
func (c *Conn) release() {
	if c.released {
		return
	}
	c.released = true
	if c.ext != nil && c.ext.lingerT != nil {
		c.ext.lingerT.Stop()
		c.ext.lingerT = nil
	}
	c.stopTimers()
	if c.owner != nil {
		c.owner.remove(c)
	}
	if c.werr == nil {
		c.werr = net.ErrClosed
	}
	if c.rerr == nil {
		c.rerr = net.ErrClosed
	}
	c.failRecv(c.rerr)
	c.failFlush()
	if t := c.tlsOf(); t != nil {
		t.released()
	}
	c.r.be.closeSock(c)
	// The last bytes received may still be read by the code that closed
	// c: the read buffer is left to the garbage collector, not pooled.
	c.rbuf, c.held = nil, 0
	c.recvq = nil
	c.r.conns--
	inc(&c.r.stats.closed)
	if x := c.ext; x != nil && x.done != nil {
		x.done.Resolve(c.rerr)
	}
}

// Done returns a future that completes once c's socket has been closed,
// with the reason as its value: io.EOF when the peer left (see "Peers that
// leave" in the package documentation), the socket's error on a failure,
// net.ErrClosed after Close, ErrOutputLimit, executor.ErrClosed when the
// executor closed. It never fails. It tells an owner that has no receive
// pending that its connection has gone, as context.Context's Done tells a
// function that its work is no longer wanted. Loop only.
func (c *Conn) Done() *future.Future[error] {
	c.mustLoop("Done")
	if c.released {
		return future.Resolved(c.exe(), c.rerr)
	}
	x := c.x()
	if x.done == nil {
		x.done = future.NewPromise[error](c.exe())
	}
	return x.done.Future()
}

// String describes c for logs: its addresses.
func (c *Conn) String() string {
	return "netio.Conn(" + addrString(c.LocalAddr()) + "<->" + addrString(c.RemoteAddr()) + ")"
}

func addrString(a net.Addr) string {
	if a == nil {
		return "?"
	}
	return a.Network() + ":" + a.String()
}
